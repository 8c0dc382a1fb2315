package catalog

import (
	"fmt"
	"time"
)

// MaxTrustPoliciesPerWorkspace caps a workspace's trust policies, so no
// tenant grows the replicated catalog without bound (each is at most a
// 2 KiB condition and a few short names).
const MaxTrustPoliciesPerWorkspace = 64

// TrustPolicy is one rule of a workspace's Trust API decisions: a CEL
// condition (compiled and type-checked by risk/trust before the command
// is proposed), the reason code it reports and the outcome it forces when
// it matches in enforce mode. Observe-mode rules are evaluated and counted,
// never applied.
type TrustPolicy struct {
	ID          string    `json:"trust_policy_id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Condition   string    `json:"condition"`
	ReasonCode  string    `json:"reason_code"`
	Outcome     string    `json:"outcome"`
	Mode        string    `json:"mode"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// PutTrustPolicy creates a trust policy or replaces one of the same
// workspace. Names are unique per workspace.
type PutTrustPolicy struct {
	Policy TrustPolicy `json:"policy"`
}

func (*PutTrustPolicy) Kind() string { return "trust_policy.put" }
func (c *PutTrustPolicy) Apply(tx *Tx) (any, error) {
	p := c.Policy
	if len(p.Condition) > 2048 || len(p.Name) > 64 || len(p.ReasonCode) > 64 {
		return nil, fmt.Errorf("%w: trust policy fields over their limits", ErrConflict)
	}
	cur, err := trustPoliciesTable.checkPut(tx, &p)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		p.CreatedAt = cur.CreatedAt
	}
	return trustPoliciesTable.store(tx, p), nil
}

// DeleteTrustPolicy removes a trust policy.
type DeleteTrustPolicy struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"trust_policy_id"`
}

func (*DeleteTrustPolicy) Kind() string { return "trust_policy.delete" }
func (c *DeleteTrustPolicy) Apply(tx *Tx) (any, error) {
	return trustPoliciesTable.remove(tx, c.WorkspaceID, c.ID)
}

// TrustPoliciesOf lists a workspace's trust policies (unordered).
func (c *Catalog) TrustPoliciesOf(workspaceID string) []*TrustPolicy {
	return trustPoliciesTable.of(c, workspaceID)
}

func deleteTrustPoliciesOf(tx *Tx, workspaceID string) {
	trustPoliciesTable.removeAllOf(tx, workspaceID)
}
