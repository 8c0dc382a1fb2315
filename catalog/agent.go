package catalog

import (
	"fmt"
	"time"
)

// MaxAgentsPerWorkspace caps the agents of one workspace, so no tenant
// grows the replicated catalog without bound.
const MaxAgentsPerWorkspace = 200

// MaxAgentKeys caps an agent's HMAC keys: the current one and those still
// inside a rotation's overlap.
const MaxAgentKeys = 3

// AgentKey is one HMAC secret of an agent, sealed (AES-256-GCM under a key
// derived from the cluster key, see agents/seal.go) by the handler before
// the command is replicated: the plain secret never enters the Raft log or
// a snapshot, and is shown to the admin once.
type AgentKey struct {
	Sealed []byte `json:"sealed"`
	// NotAfter ends a rotated-out key's overlap; zero for the current key.
	NotAfter time.Time `json:"not_after,omitzero"`
}

// AgentRule says which requests of an agent need a human: an action glob
// (`*` matches any run of characters), a scope, or a risk score at or over
// a threshold. An empty Action or Scope matches everything.
type AgentRule struct {
	Action string `json:"action,omitempty"`
	Scope  string `json:"scope,omitempty"`
	// RiskAtLeast, when positive, requires approval at or over this risk.
	RiskAtLeast int `json:"risk_at_least,omitempty"`
}

// Agent is a registered AI agent of a workspace (spec 2.6, 4.4).
type Agent struct {
	ID          string     `json:"agent_id"` // UUID
	WorkspaceID string     `json:"workspace_id"`
	Name        string     `json:"name"`
	Status      string     `json:"status"` // active | suspended
	Keys        []AgentKey `json:"keys"`
	// Ed25519PublicKey (32 bytes) enables RFC 9421 HTTP Message Signatures.
	Ed25519PublicKey []byte `json:"ed25519_public_key,omitempty"`
	// AllowedActions and AllowedScopes bound what the agent may ask for
	// (action globs; exact scopes). Empty AllowedActions allows nothing.
	AllowedActions []string    `json:"allowed_actions"`
	AllowedScopes  []string    `json:"allowed_scopes"`
	ApprovalRules  []AgentRule `json:"approval_rules"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// PutAgent creates an agent or replaces one of the same workspace.
type PutAgent struct {
	Agent Agent `json:"agent"`
}

func (*PutAgent) Kind() string { return "agent.put" }
func (c *PutAgent) Apply(tx *Tx) (any, error) {
	a := c.Agent
	if _, ok := tx.next.Workspaces[a.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, a.WorkspaceID)
	}
	cur, exists := tx.next.Agents[a.ID]
	if exists && cur.WorkspaceID != a.WorkspaceID {
		return nil, fmt.Errorf("%w: agent %s", ErrNotFound, a.ID)
	}
	if len(a.Keys) == 0 || len(a.Keys) > MaxAgentKeys {
		return nil, fmt.Errorf("%w: an agent has 1 to %d keys", ErrConflict, MaxAgentKeys)
	}
	if !exists {
		n := 0
		for _, o := range tx.next.Agents {
			if o.WorkspaceID == a.WorkspaceID {
				n++
			}
		}
		if n >= MaxAgentsPerWorkspace {
			return nil, fmt.Errorf("%w: the workspace has %d agents, the most allowed", ErrConflict, n)
		}
	}
	for _, o := range tx.next.Agents {
		if o.WorkspaceID == a.WorkspaceID && o.Name == a.Name && o.ID != a.ID {
			return nil, fmt.Errorf("%w: an agent named %q exists", ErrConflict, a.Name)
		}
	}
	Writable(tx, "agents", &tx.next.Agents)[a.ID] = &a
	return &a, nil
}

// DeleteAgent removes an agent and, in the same command, every approval
// request of it: a pending one can no longer be approved and an approved,
// unconsumed one can no longer be consumed. Raft orders a concurrent
// consume before or after the delete, never both. DeleteResult counts them.
type DeleteAgent struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"agent_id"`
	// At is when the delete was asked, for counting which approvals were
	// still live (the catalog has no clock of its own).
	At time.Time `json:"at,omitzero"`
}

func (*DeleteAgent) Kind() string { return "agent.delete" }
func (c *DeleteAgent) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.Agents[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: agent %s", ErrNotFound, c.ID)
	}
	delete(Writable(tx, "agents", &tx.next.Agents), c.ID)
	res := &DeleteAgentResult{}
	for id, a := range tx.next.Approvals {
		if a.AgentID != c.ID {
			continue
		}
		switch a.StatusAt(c.At) {
		case "pending":
			res.Pending++
		case "approved":
			if a.ConsumedAt.IsZero() {
				res.ApprovedUnconsumed++
			}
		}
		res.Approvals++
		delete(Writable(tx, "approvals", &tx.next.Approvals), id)
	}
	return res, nil
}

// DeleteAgentResult counts the approval requests deleted with an agent.
type DeleteAgentResult struct {
	Approvals          int // all of them
	Pending            int // no longer approvable
	ApprovedUnconsumed int // approved, never consumed: no longer consumable
}

func deleteAgentsOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "agents", &tx.next.Agents, workspaceID, func(a *Agent) string { return a.WorkspaceID })
}
