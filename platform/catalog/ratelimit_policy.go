package catalog

import (
	"fmt"
	"time"
)

// Rate-limit policies (spec 2.11) belong to a workspace and are replicated
// like every other piece of configuration. The admin API validates a
// policy's numbers before proposing it; Apply re-checks only what the
// current catalog decides (the workspace and target exist), so a batch
// replayed from the log applies exactly as it did the first time.

// Targets of a policy: every application of the workspace, one site, or
// one mobile app.
const (
	TargetWorkspace = "workspace"
	TargetSite      = "site"
	TargetMobileApp = "mobile_app"
)

// PolicyTarget says which applications a policy covers. ID is empty for
// TargetWorkspace.
type PolicyTarget struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// PolicyBucket is a policy's token bucket: RefillAmount tokens every
// RefillIntervalSeconds, up to Capacity.
type PolicyBucket struct {
	Capacity              int64 `json:"capacity"`
	RefillAmount          int64 `json:"refill_amount"`
	RefillIntervalSeconds int64 `json:"refill_interval_seconds"`
}

// PolicyQuota is an optional fixed quota on a UTC calendar window.
type PolicyQuota struct {
	Limit  int64  `json:"limit"`
	Window string `json:"window"`
}

// RateLimitPolicy is one configured limit.
type RateLimitPolicy struct {
	ID                string       `json:"policy_id"`
	WorkspaceID       string       `json:"workspace_id"`
	Name              string       `json:"name"`
	Target            PolicyTarget `json:"target"`
	ActionPattern     string       `json:"action_pattern"`
	Method            string       `json:"method"`
	Scope             string       `json:"scope"`
	Bucket            PolicyBucket `json:"bucket"`
	DefaultCost       int64        `json:"default_cost"`
	Quota             *PolicyQuota `json:"quota,omitzero"`
	AdaptiveCost      bool         `json:"adaptive_cost"`
	Mode              string       `json:"mode"`
	DegradedBehaviour string       `json:"degraded_behaviour"`
	EnforcePercentage int          `json:"enforce_percentage"`
	// Revision counts the writes of this policy, starting at 1.
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MaxRateLimitPolicies bounds a workspace's policies, and so the work of
// one check.
const MaxRateLimitPolicies = 200

// RateLimitPoliciesOf lists a workspace's policies, in no particular order.
func (c *Catalog) RateLimitPoliciesOf(workspaceID string) []*RateLimitPolicy {
	return rateLimitPoliciesTable.of(c, workspaceID)
}

// checkPolicyTarget reports a target naming a site or app that is not in
// the workspace.
func checkPolicyTarget(c *Catalog, workspaceID string, t PolicyTarget) error {
	switch t.Type {
	case TargetWorkspace:
		return nil
	case TargetSite:
		if s := c.Sites[t.ID]; s != nil && s.WorkspaceID == workspaceID {
			return nil
		}
	case TargetMobileApp:
		if a := c.MobileApps[t.ID]; a != nil && a.WorkspaceID == workspaceID {
			return nil
		}
	}
	return fmt.Errorf("%w: target %s %s in workspace %s", ErrNotFound, t.Type, t.ID, workspaceID)
}

// CreateRateLimitPolicy adds a policy.
type CreateRateLimitPolicy struct {
	Policy RateLimitPolicy `json:"policy"`
}

func (*CreateRateLimitPolicy) Kind() string { return "rate_limit_policy.create" }
func (c *CreateRateLimitPolicy) Apply(tx *Tx) (any, error) {
	return rateLimitPoliciesTable.create(tx, c.Policy)
}

// ReplaceRateLimitPolicy stores a changed policy (the admin API merges a
// PATCH into the current policy and validates the result first).
type ReplaceRateLimitPolicy struct {
	Policy RateLimitPolicy `json:"policy"`
}

func (*ReplaceRateLimitPolicy) Kind() string { return "rate_limit_policy.replace" }
func (c *ReplaceRateLimitPolicy) Apply(tx *Tx) (any, error) {
	return rateLimitPoliciesTable.replace(tx, c.Policy)
}

// DeleteRateLimitPolicy removes a policy. Its buckets are left to refill
// and be swept by their actors.
type DeleteRateLimitPolicy struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"policy_id"`
}

func (*DeleteRateLimitPolicy) Kind() string { return "rate_limit_policy.delete" }
func (c *DeleteRateLimitPolicy) Apply(tx *Tx) (any, error) {
	return rateLimitPoliciesTable.remove(tx, c.WorkspaceID, c.ID)
}

func deleteRateLimitPolicies(tx *Tx, workspaceID string) {
	rateLimitPoliciesTable.removeAllOf(tx, workspaceID)
}
