package catalog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
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
	// HTTPSigProfile is how its RFC 9421 signatures are checked:
	// "web-bot-auth" (empty: the Web Bot Auth draft) or "strict"
	// (agents/httpsig.go).
	HTTPSigProfile string `json:"httpsig_profile,omitempty"`
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
	if n := len(c.Agent.Keys); n == 0 || n > MaxAgentKeys {
		return nil, fmt.Errorf("%w: an agent has 1 to %d keys", ErrConflict, MaxAgentKeys)
	}
	return agentsTable.put(tx, c.Agent)
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
	if _, err := agentsTable.remove(tx, c.WorkspaceID, c.ID); err != nil {
		return nil, err
	}
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
	agentsTable.removeAllOf(tx, workspaceID)
}

// Ed25519Thumbprint is the RFC 7638 JWK SHA-256 thumbprint of an Ed25519
// public key (RFC 8037 OKP members crv, kty, x in lexicographic order, no
// white space), base64url without padding: the keyid the Web Bot Auth
// draft and its signers (web-bot-auth's signerFromJWK) use.
func Ed25519Thumbprint(pub []byte) string {
	if len(pub) != ed25519.PublicKeySize {
		return ""
	}
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// AgentsByThumbprint returns the agents of workspace whose Ed25519 key has
// the RFC 7638 thumbprint tp: a Web Bot Auth keyid resolves only among the
// agents of the workspace the request names, so registering another
// tenant's public key on one's own agent captures nothing. More than one
// is possible (one key on two agents of a workspace); the caller refuses
// that as ambiguous.
func (c *Catalog) AgentsByThumbprint(workspace, tp string) []*Agent {
	return c.agentsByThumb[thumbKey{workspace, tp}]
}

type thumbKey struct{ workspace, thumbprint string }

func (c *Catalog) reindexAgents() {
	c.agentsByThumb = make(map[thumbKey][]*Agent)
	for _, a := range c.Agents {
		if tp := Ed25519Thumbprint(a.Ed25519PublicKey); tp != "" {
			k := thumbKey{a.WorkspaceID, tp}
			c.agentsByThumb[k] = append(c.agentsByThumb[k], a)
		}
	}
}
