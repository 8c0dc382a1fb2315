package catalog

import (
	"time"
)

// API Protection policies (spec 4.5) describe what a healthy request to a
// protected API route looks like; an assessment scores how far a request
// strays from it. Like rate-limit policies they belong to a workspace and
// are validated by the admin API before they are proposed.

// APILimits are the request-shape ceilings of a policy; 0 means unchecked.
type APILimits struct {
	BodyBytes    int64   `json:"body_bytes"`
	PageSize     int64   `json:"page_size"`
	QueryDepth   int64   `json:"query_depth"`
	ResourceCost float64 `json:"resource_cost"`
}

// APIVelocity are per-key request counts allowed within WindowSeconds;
// 0 means that key is not tracked.
type APIVelocity struct {
	WindowSeconds int64 `json:"window_seconds"`
	PerSubject    int64 `json:"per_subject"`
	PerDevice     int64 `json:"per_device"`
	PerRoute      int64 `json:"per_route"`
}

// APIProtectionPolicy is one configured API Protection policy.
type APIProtectionPolicy struct {
	ID                    string       `json:"policy_id"`
	WorkspaceID           string       `json:"workspace_id"`
	Name                  string       `json:"name"`
	Target                PolicyTarget `json:"target"`
	PathPattern           string       `json:"path_pattern"`
	Method                string       `json:"method"`
	RequireAuthentication bool         `json:"require_authentication"`
	Limits                APILimits    `json:"limits"`
	Velocity              APIVelocity  `json:"velocity"`
	EnforcementMode       string       `json:"enforcement_mode"`
	Revision              int64        `json:"revision"`
	CreatedAt             time.Time    `json:"created_at"`
	UpdatedAt             time.Time    `json:"updated_at"`
}

// MaxAPIProtectionPolicies bounds a workspace's API Protection policies.
const MaxAPIProtectionPolicies = 200

// APIProtectionPoliciesOf lists a workspace's API Protection policies.
func (c *Catalog) APIProtectionPoliciesOf(workspaceID string) []*APIProtectionPolicy {
	return apiProtectionPoliciesTable.of(c, workspaceID)
}

// CreateAPIProtectionPolicy adds a policy.
type CreateAPIProtectionPolicy struct {
	Policy APIProtectionPolicy `json:"policy"`
}

func (*CreateAPIProtectionPolicy) Kind() string { return "api_protection_policy.create" }
func (c *CreateAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	return apiProtectionPoliciesTable.create(tx, c.Policy)
}

// ReplaceAPIProtectionPolicy stores a changed policy.
type ReplaceAPIProtectionPolicy struct {
	Policy APIProtectionPolicy `json:"policy"`
}

func (*ReplaceAPIProtectionPolicy) Kind() string { return "api_protection_policy.replace" }
func (c *ReplaceAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	return apiProtectionPoliciesTable.replace(tx, c.Policy)
}

// DeleteAPIProtectionPolicy removes a policy.
type DeleteAPIProtectionPolicy struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"policy_id"`
}

func (*DeleteAPIProtectionPolicy) Kind() string { return "api_protection_policy.delete" }
func (c *DeleteAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	return apiProtectionPoliciesTable.remove(tx, c.WorkspaceID, c.ID)
}

func deleteAPIProtectionPolicies(tx *Tx, workspaceID string) {
	apiProtectionPoliciesTable.removeAllOf(tx, workspaceID)
}
