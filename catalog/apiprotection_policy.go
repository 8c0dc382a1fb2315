package catalog

import (
	"fmt"
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

func (tx *Tx) apiProtectionPolicies() map[string]*APIProtectionPolicy {
	return Writable(tx, "api_protection_policies", &tx.next.APIProtectionPolicies)
}

// APIProtectionPoliciesOf lists a workspace's API Protection policies.
func (c *Catalog) APIProtectionPoliciesOf(workspaceID string) []*APIProtectionPolicy {
	var out []*APIProtectionPolicy
	for _, p := range c.APIProtectionPolicies {
		if p.WorkspaceID == workspaceID {
			out = append(out, p)
		}
	}
	return out
}

// CreateAPIProtectionPolicy adds a policy.
type CreateAPIProtectionPolicy struct {
	Policy APIProtectionPolicy `json:"policy"`
}

func (*CreateAPIProtectionPolicy) Kind() string { return "api_protection_policy.create" }
func (c *CreateAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	p := c.Policy
	if _, ok := tx.next.Workspaces[p.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, p.WorkspaceID)
	}
	if _, ok := tx.next.APIProtectionPolicies[p.ID]; ok {
		return nil, fmt.Errorf("%w: policy %s exists", ErrConflict, p.ID)
	}
	if err := checkPolicyTarget(tx.next, p.WorkspaceID, p.Target); err != nil {
		return nil, err
	}
	if len(tx.next.APIProtectionPoliciesOf(p.WorkspaceID)) >= MaxAPIProtectionPolicies {
		return nil, fmt.Errorf("%w: workspace %s already has %d API Protection policies", ErrConflict, p.WorkspaceID, MaxAPIProtectionPolicies)
	}
	p.Revision = 1
	tx.apiProtectionPolicies()[p.ID] = &p
	return &p, nil
}

// ReplaceAPIProtectionPolicy stores a changed policy.
type ReplaceAPIProtectionPolicy struct {
	Policy APIProtectionPolicy `json:"policy"`
}

func (*ReplaceAPIProtectionPolicy) Kind() string { return "api_protection_policy.replace" }
func (c *ReplaceAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	p := c.Policy
	cur, ok := tx.next.APIProtectionPolicies[p.ID]
	if !ok || cur.WorkspaceID != p.WorkspaceID {
		return nil, fmt.Errorf("%w: API Protection policy %s", ErrNotFound, p.ID)
	}
	if err := checkPolicyTarget(tx.next, p.WorkspaceID, p.Target); err != nil {
		return nil, err
	}
	p.CreatedAt, p.Revision = cur.CreatedAt, cur.Revision+1
	tx.apiProtectionPolicies()[p.ID] = &p
	return &p, nil
}

// DeleteAPIProtectionPolicy removes a policy.
type DeleteAPIProtectionPolicy struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"policy_id"`
}

func (*DeleteAPIProtectionPolicy) Kind() string { return "api_protection_policy.delete" }
func (c *DeleteAPIProtectionPolicy) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.APIProtectionPolicies[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: API Protection policy %s", ErrNotFound, c.ID)
	}
	delete(tx.apiProtectionPolicies(), c.ID)
	return nil, nil
}

func deleteAPIProtectionPolicies(tx *Tx, workspaceID string) {
	deleteOwned(tx, "api_protection_policies", &tx.next.APIProtectionPolicies, workspaceID,
		func(p *APIProtectionPolicy) string { return p.WorkspaceID })
}
