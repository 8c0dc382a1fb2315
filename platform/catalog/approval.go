package catalog

import (
	"fmt"
	"time"
)

// MaxApprovalsPerWorkspace caps the approval records a workspace holds;
// records that expired or were consumed or denied more than
// ApprovalRetention ago are pruned by the next create, so the cap only
// refuses a workspace with that many live requests.
const MaxApprovalsPerWorkspace = 1000

// ApprovalRetention keeps a finished approval readable for its status.
const ApprovalRetention = 24 * time.Hour

// Approval is a request for a human to approve one agent action, bound to
// the agent, action, scope, resource and subject it was asked for.
type Approval struct {
	ID          string    `json:"approval_id"`
	WorkspaceID string    `json:"workspace_id"`
	AgentID     string    `json:"agent_id"`
	RequestID   string    `json:"request_id"`
	Action      string    `json:"action"`
	Scope       string    `json:"scope"`
	ResourceID  string    `json:"resource_id"`
	SubjectID   string    `json:"subject_id"`
	Summary     string    `json:"summary"`
	Status      string    `json:"status"` // pending | approved | denied (expired is derived)
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	DecidedBy   string    `json:"decided_by,omitempty"`
	DecidedAt   time.Time `json:"decided_at,omitzero"`
	ConsumedAt  time.Time `json:"consumed_at,omitzero"`
}

// StatusAt is the status as of now: a pending approval past its expiry,
// or an approved one never consumed past its expiry, is expired.
func (a *Approval) StatusAt(now time.Time) string {
	if a.Status == "pending" && !now.Before(a.ExpiresAt) || a.Status == "approved" && a.ConsumedAt.IsZero() && !now.Before(a.ExpiresAt) {
		return "expired"
	}
	return a.Status
}

func (a *Approval) finishedBefore(t time.Time) bool {
	end := a.ExpiresAt
	if !a.ConsumedAt.IsZero() {
		end = a.ConsumedAt
	} else if a.Status == "denied" {
		end = a.DecidedAt
	}
	return end.Before(t)
}

// CreateApproval stores a pending approval, pruning the workspace's
// finished ones first.
type CreateApproval struct {
	Approval Approval `json:"approval"`
}

func (*CreateApproval) Kind() string { return "approval.create" }
func (c *CreateApproval) Apply(tx *Tx) (any, error) {
	a := c.Approval
	if _, ok := tx.next.Agents[a.AgentID]; !ok {
		return nil, fmt.Errorf("%w: agent %s", ErrNotFound, a.AgentID)
	}
	if _, ok := tx.next.Approvals[a.ID]; ok {
		return nil, fmt.Errorf("%w: approval %s exists", ErrConflict, a.ID)
	}
	cutoff := a.CreatedAt.Add(-ApprovalRetention)
	n := 0
	for id, o := range tx.next.Approvals {
		if o.WorkspaceID != a.WorkspaceID {
			continue
		}
		if o.finishedBefore(cutoff) {
			delete(Writable(tx, "approvals", &tx.next.Approvals), id)
			continue
		}
		n++
	}
	if n >= MaxApprovalsPerWorkspace {
		return nil, fmt.Errorf("%w: the workspace holds %d approval requests, the most allowed", ErrConflict, n)
	}
	Writable(tx, "approvals", &tx.next.Approvals)[a.ID] = &a
	return &a, nil
}

// DecideApproval approves or denies a pending, unexpired approval.
type DecideApproval struct {
	WorkspaceID string    `json:"workspace_id"`
	ID          string    `json:"approval_id"`
	Approve     bool      `json:"approve"`
	By          string    `json:"by"`
	At          time.Time `json:"at"`
}

func (*DecideApproval) Kind() string { return "approval.decide" }
func (c *DecideApproval) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.Approvals[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: approval %s", ErrNotFound, c.ID)
	}
	if st := cur.StatusAt(c.At); st != "pending" {
		return nil, fmt.Errorf("%w: the approval is %s", ErrConflict, st)
	}
	a := *cur
	a.Status, a.DecidedBy, a.DecidedAt = "denied", c.By, c.At
	if c.Approve {
		a.Status = "approved"
	}
	Writable(tx, "approvals", &tx.next.Approvals)[a.ID] = &a
	return &a, nil
}

// ConsumeApproval marks an approved, unexpired, unconsumed approval as
// consumed by its agent. Raft applies commands one at a time in one order
// on every node, so of any number of concurrent consumes, through any
// nodes, exactly one finds it unconsumed: an approval authorises one
// execution.
type ConsumeApproval struct {
	AgentID string    `json:"agent_id"`
	ID      string    `json:"approval_id"`
	At      time.Time `json:"at"`
}

// ConsumeResult says whether this command consumed the approval.
type ConsumeResult struct {
	Approval Approval
	Consumed bool // by this command
}

func (*ConsumeApproval) Kind() string { return "approval.consume" }
func (c *ConsumeApproval) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.Approvals[c.ID]
	if !ok || cur.AgentID != c.AgentID {
		return nil, fmt.Errorf("%w: approval %s", ErrNotFound, c.ID)
	}
	if cur.StatusAt(c.At) != "approved" || !cur.ConsumedAt.IsZero() {
		return &ConsumeResult{Approval: *cur}, nil
	}
	a := *cur
	a.ConsumedAt = c.At
	Writable(tx, "approvals", &tx.next.Approvals)[a.ID] = &a
	return &ConsumeResult{Approval: a, Consumed: true}, nil
}

func deleteApprovalsOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "approvals", &tx.next.Approvals, workspaceID, func(a *Approval) string { return a.WorkspaceID })
}
