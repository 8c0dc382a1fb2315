package api

import (
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// The contract bodies of Agent Trust (spec 2.6, 4.4). Their names and
// documentation are the contract's schemas.

// AgentInput creates or replaces an agent's settings.
type AgentInput struct {
	Name             string              `json:"name" required:"true" doc:"1 to 64 bytes, unique in the workspace."`
	Ed25519PublicKey string              `json:"ed25519_public_key,omitempty" doc:"base64url (no padding) of a 32-byte Ed25519 public key, for RFC 9421 signatures."`
	HTTPSigProfile   string              `json:"httpsig_profile,omitempty" enum:"web-bot-auth|strict" doc:"How RFC 9421 signatures are checked: web-bot-auth (the default, the Web Bot Auth draft: keyid the JWK thumbprint or the agent_id, @authority covered) or strict (keyid the agent_id, @authority, @path and content-digest covered)."`
	AllowedActions   []string            `json:"allowed_actions,omitempty" doc:"Action globs the agent may ask for (path.Match: * matches within a segment), at most 32."`
	AllowedScopes    []string            `json:"allowed_scopes,omitempty" doc:"Scopes the agent may ask for, at most 32."`
	ApprovalRules    []catalog.AgentRule `json:"approval_rules,omitempty" doc:"A request matching a rule's action glob and scope needs a human; a rule with risk_at_least needs one when the risk score reaches it."`
}

// AgentView is an agent; Secret only in the create and rotate answers.
type AgentView struct {
	AgentID           string              `json:"agent_id" required:"true" format:"uuid"`
	WorkspaceID       string              `json:"workspace_id" required:"true"`
	Name              string              `json:"name" required:"true"`
	Status            string              `json:"status" required:"true" enum:"active|suspended"`
	Ed25519PublicKey  string              `json:"ed25519_public_key,omitempty"`
	Ed25519Thumbprint string              `json:"ed25519_thumbprint,omitempty" doc:"RFC 7638 JWK thumbprint of ed25519_public_key: the keyid of Web Bot Auth signatures (with X-Service-Workspace)."`
	HTTPSigProfile    string              `json:"httpsig_profile,omitempty" enum:"web-bot-auth|strict"`
	AllowedActions    []string            `json:"allowed_actions" required:"true"`
	AllowedScopes     []string            `json:"allowed_scopes" required:"true"`
	ApprovalRules     []catalog.AgentRule `json:"approval_rules" required:"true"`
	SecretsValid      int                 `json:"secrets_valid" required:"true" doc:"HMAC secrets currently accepted (more than one during a rotation's overlap)."`
	Secret            string              `json:"secret,omitempty" doc:"The HMAC secret, shown once: its ASCII bytes are the HMAC-SHA-256 key."`
	CreatedAt         time.Time           `json:"created_at" required:"true"`
	UpdatedAt         time.Time           `json:"updated_at" required:"true"`
}

// AgentList lists a workspace's agents.
type AgentList struct {
	Agents []AgentView `json:"agents" required:"true"`
}

// AgentDeleted is the answer of deleting an agent.
type AgentDeleted struct {
	AgentID            string `json:"agent_id" required:"true" format:"uuid"`
	ApprovalsDeleted   int    `json:"approvals_deleted" required:"true" doc:"Every approval request of the agent, deleted with it."`
	Pending            int    `json:"pending" required:"true" doc:"Of them, pending: they can no longer be approved (approve/deny answer agent-approval-not-found)."`
	ApprovedUnconsumed int    `json:"approved_unconsumed" required:"true" doc:"Of them, approved and never consumed: no request can consume them any more."`
}

// AgentRotateInput rotates an agent's secret.
type AgentRotateInput struct {
	OverlapSeconds *int `json:"overlap_seconds,omitempty" doc:"How long the previous secret stays valid, 0 to 604800; default 3600."`
}

// ApprovalDecisionInput records who approved or denied.
type ApprovalDecisionInput struct {
	By string `json:"by" required:"true" doc:"Who decided (1 to 128 bytes), recorded with the time."`
}

// ApprovalView is an approval request as the admin API shows it.
type ApprovalView struct {
	ApprovalID string    `json:"approval_id" required:"true" format:"uuid"`
	AgentID    string    `json:"agent_id" required:"true" format:"uuid"`
	RequestID  string    `json:"request_id" required:"true"`
	Action     string    `json:"action" required:"true"`
	Scope      string    `json:"scope" required:"true"`
	ResourceID string    `json:"resource_id" required:"true"`
	SubjectID  string    `json:"subject_id" required:"true"`
	Summary    string    `json:"summary" required:"true"`
	Status     string    `json:"status" required:"true" enum:"pending|approved|denied|expired"`
	Consumed   bool      `json:"consumed" required:"true"`
	CreatedAt  time.Time `json:"created_at" required:"true"`
	ExpiresAt  time.Time `json:"expires_at" required:"true"`
	DecidedBy  string    `json:"decided_by,omitempty"`
	DecidedAt  time.Time `json:"decided_at,omitzero"`
}

// ApprovalList lists a workspace's approval requests.
type ApprovalList struct {
	Approvals []ApprovalView `json:"approvals" required:"true"`
}

// AgentDecision is the answer of POST /agents/decision (spec 2.6).
type AgentDecision struct {
	Success             bool     `json:"success" required:"true"`
	DecisionID          string   `json:"decision_id" required:"true" format:"uuid"`
	AgentID             string   `json:"agent_id" required:"true" format:"uuid"`
	IdentityVerified    bool     `json:"identity_verified" required:"true"`
	RecommendedDecision string   `json:"recommended_decision" required:"true" enum:"allow|deny|approval_required"`
	Decision            string   `json:"decision" required:"true" enum:"allow|deny|approval_required"`
	RiskScore           int      `json:"risk_score" required:"true"`
	Classification      string   `json:"classification" required:"true" enum:"low|medium|high"`
	ReasonCodes         []string `json:"reason_codes" required:"true"`
	ApprovalRequestID   string   `json:"approval_request_id,omitempty" format:"uuid" doc:"Present when decision is approval_required."`
}

// AgentDecisionInput is the signed body of POST /agents/decision.
type AgentDecisionInput struct {
	RequestID  string `json:"request_id" required:"true" doc:"1 to 128 bytes; a retry with the same request_id and body gets the same answer."`
	Action     string `json:"action" required:"true"`
	Scope      string `json:"scope" required:"true"`
	ResourceID string `json:"resource_id" required:"true"`
	SubjectID  string `json:"subject_id" required:"true"`
	Summary    string `json:"summary" required:"true"`
}

// ApprovalStatusInput is the signed body of POST /agents/approval/status.
type ApprovalStatusInput struct {
	ApprovalID string `json:"approval_id" required:"true" format:"uuid"`
}

// ApprovalStatus is the answer of POST /agents/approval/status (spec 2.6).
type ApprovalStatus struct {
	Success    bool   `json:"success" required:"true"`
	ApprovalID string `json:"approval_id" required:"true" format:"uuid"`
	Status     string `json:"status" required:"true" enum:"pending|approved|denied|expired"`
	Action     string `json:"action" required:"true"`
	Scope      string `json:"scope" required:"true"`
	Consumed   bool   `json:"consumed" required:"true" doc:"true only in the one answer that consumed the approval: the agent may execute exactly then."`
}
