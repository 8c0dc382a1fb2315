package http

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	nethttp "net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/errcode"
)

// Agent Trust transport: admin API of the registry and approvals, and the
// two signed agent operations. The module is agents/; this file decodes,
// authenticates, calls it and encodes. See agents/DESIGN.md.

// Errors of the agent operations beyond agents.Codes().
var (
	errAgentRequestReused  = errcode.New("agent-request-id-reused", errcode.Conflict, "this request_id was already used with a different body")
	errApprovalNotFound    = errcode.New("agent-approval-not-found", errcode.NotFound, "the agent has no approval request with this approval_id")
	errApprovalConsumed    = errcode.New("agent-approval-consumed", errcode.Conflict, "the approval was already consumed: it authorised one execution, which has happened")
	errApprovalNotDecided  = errcode.New("agent-approval-not-pending", errcode.Conflict, "the approval is not pending (already decided or expired)")
	agentDecisionRetention = 24 * time.Hour
	approvalTTL            = time.Hour
)

// agentModuleCodes are the Agent Trust codes for the contract's ApiError
// list (contractErrors).
func agentModuleCodes() []*errcode.Code {
	out := append(append(append([]*errcode.Code(nil), agents.Codes()...), agents.HTTPSigCodes()...), agents.ErrDecisionInput,
		agents.ErrInvalidAgent, agents.ErrAgentMissing)
	return append(out, errAgentRequestReused, errApprovalNotFound, errApprovalConsumed, errApprovalNotDecided)
}

func agentErrors() []ErrorCode {
	var out []ErrorCode
	for _, c := range append(agents.Codes(), agents.HTTPSigCodes()...) {
		out = append(out, moduleCode(c))
	}
	return append(out, moduleCode(agents.ErrDecisionInput), moduleCode(errAgentRequestReused), moduleCode(errApprovalNotFound),
		moduleCode(errApprovalConsumed), ErrUnsupportedType, ErrBodyTooLarge, ErrUnavailable)
}

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

func (s *Server) agentRoutes() []Route {
	ws := "/workspaces/{workspace_id}"
	ag := ws + "/agents/{agent_id}"
	a := []Auth{AuthAdmin}
	aerr := agentAdmin.errors
	sig := []Auth{AuthAgent, AuthAgentHTTPSig}
	return append(agentAdmin.routes(s), []Route{
		{Method: "POST", Path: ag + "/suspend", Admin: true, ID: "suspendAgent", Tag: "Agent Trust", Auth: a, Summary: "Suspend an agent: its requests are refused with agent-suspended.",
			Result: &AgentView{}, Errors: aerr, Handle: s.admin(func(c *Call) { c.setAgentStatus(agents.StatusSuspended) })},
		{Method: "POST", Path: ag + "/activate", Admin: true, ID: "activateAgent", Tag: "Agent Trust", Auth: a, Summary: "Reactivate a suspended agent.",
			Result: &AgentView{}, Errors: aerr, Handle: s.admin(func(c *Call) { c.setAgentStatus(agents.StatusActive) })},
		{Method: "POST", Path: ag + "/rotate-secret", Admin: true, ID: "rotateAgentSecret", Tag: "Agent Trust", Auth: a, Summary: "Issue a new HMAC secret (shown once); the previous one stays valid for the overlap.",
			Body: &AgentRotateInput{}, Result: &AgentView{}, Errors: aerr, Handle: s.admin(s.rotateAgent)},
		{Method: "GET", Path: ws + "/approvals", Admin: true, ID: "listApprovals", Tag: "Agent Trust", Auth: a, Summary: "The workspace's approval requests, newest first.",
			Result: &ApprovalList{}, Errors: aerr, Handle: s.admin(s.listApprovals)},
		{Method: "POST", Path: ws + "/approvals/{approval_id}/approve", Admin: true, ID: "approveApproval", Tag: "Agent Trust", Auth: a, Summary: "Approve a pending request.",
			Body: &ApprovalDecisionInput{}, Result: &ApprovalView{}, Errors: append(aerr, moduleCode(errApprovalNotDecided)), Handle: s.admin(func(c *Call) { c.decideApproval(true) })},
		{Method: "POST", Path: ws + "/approvals/{approval_id}/deny", Admin: true, ID: "denyApproval", Tag: "Agent Trust", Auth: a, Summary: "Deny a pending request.",
			Body: &ApprovalDecisionInput{}, Result: &ApprovalView{}, Errors: append(aerr, moduleCode(errApprovalNotDecided)), Handle: s.admin(func(c *Call) { c.decideApproval(false) })},
		{Method: "POST", Path: "/agents/decision", ID: "agentDecision", Tag: "Agent Trust", Auth: sig, Summary: "Ask whether the agent may perform an action (signed request).",
			Body: &AgentDecisionInput{}, Result: &AgentDecision{}, Errors: agentErrors(), Handle: s.agentDecision},
		{Method: "POST", Path: "/agents/approval/status", ID: "agentApprovalStatus", Tag: "Agent Trust", Auth: sig, Summary: "Read, and on the first read after approval consume, an approval request (signed request).",
			Body: &ApprovalStatusInput{}, Result: &ApprovalStatus{}, Errors: agentErrors(), Handle: s.agentApprovalStatus},
	}...)
}

func (s *Server) sealer() *agents.Sealer { return agents.NewSealer(s.cfg.SealKey) }

// agent resolves {workspace_id} and {agent_id}, answering
// agent-not-found itself.
func (c *Call) agent() *catalog.Agent { return agentAdmin.find(c) }

// agentAdmin is the admin CRUD of agents; suspend, activate and
// rotate-secret are its extra operations (agentRoutes). The HMAC secret is
// made by agents.NewAgent and shown once, in the create answer.
var agentAdmin = &resource[catalog.Agent, AgentInput, AgentView, AgentList]{
	what: "agent", path: "/workspaces/{workspace_id}/agents", param: "agent_id", id: "Agent", ids: "Agents",
	tag: "Agent Trust", updateMethod: "PUT", notFound: agents.ErrAgentMissing,
	errors: append(append([]ErrorCode(nil), adminErrors...), moduleCode(agents.ErrInvalidAgent), ErrConflict),
	summary: map[string]string{
		"create": "Register an agent; the answer holds its HMAC secret, once.",
		"list":   "List a workspace's agents.",
		"get":    "Read an agent.",
		"update": "Replace an agent's settings (not its secret or status).",
		"delete": "Delete an agent and its approval requests: pending ones can no longer be approved, approved unconsumed ones no longer consumed.",
	},
	table: func(c *catalog.Catalog) map[string]*catalog.Agent { return c.Agents },
	owner: func(a *catalog.Agent) string { return a.WorkspaceID },
	build: func(c *Call, in *AgentInput, cur *catalog.Agent, workspaceID string) (catalog.Agent, string, error) {
		if cur == nil {
			return agents.NewAgent(c.s.sealer(), workspaceID, in.spec(), c.Now().UTC())
		}
		a, err := agents.Update(*cur, in.spec(), c.Now().UTC())
		return a, "", err
	},
	create: func(a catalog.Agent) catalog.Command { return &catalog.PutAgent{Agent: a} },
	update: func(_ *AgentInput, a catalog.Agent) catalog.Command { return &catalog.PutAgent{Agent: a} },
	// The agent and its approvals go in one Raft command. Its signed
	// requests then answer agent-unknown on every node; its nonces,
	// idempotency records and behaviour counters are actor state keyed by
	// its agent_id (never reused) and expire on their own.
	delete: func(a *catalog.Agent, now time.Time) catalog.Command {
		return &catalog.DeleteAgent{WorkspaceID: a.WorkspaceID, ID: a.ID, At: now}
	},
	deleted: func(a *catalog.Agent, v any) any {
		r := v.(*catalog.DeleteAgentResult)
		return AgentDeleted{AgentID: a.ID, ApprovalsDeleted: r.Approvals, Pending: r.Pending, ApprovedUnconsumed: r.ApprovedUnconsumed}
	},
	deletedView: &AgentDeleted{},
	view: func(c *Call, a *catalog.Agent, secret string) *AgentView {
		v := agentView(a, secret, c.Now())
		return &v
	},
	sortID: func(v *AgentView) string { return v.Name },
	list:   func(vs []AgentView) *AgentList { return &AgentList{Agents: vs} },
}

func agentView(a *catalog.Agent, secret string, now time.Time) AgentView {
	v := AgentView{AgentID: a.ID, WorkspaceID: a.WorkspaceID, Name: a.Name, Status: a.Status,
		AllowedActions: a.AllowedActions, AllowedScopes: a.AllowedScopes, ApprovalRules: a.ApprovalRules,
		Secret: secret, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if len(a.Ed25519PublicKey) > 0 {
		v.Ed25519PublicKey = base64.RawURLEncoding.EncodeToString(a.Ed25519PublicKey)
		v.Ed25519Thumbprint = catalog.Ed25519Thumbprint(a.Ed25519PublicKey)
		v.HTTPSigProfile = a.HTTPSigProfile
		if v.HTTPSigProfile == "" {
			v.HTTPSigProfile = agents.ProfileWebBotAuth
		}
	}
	for _, k := range a.Keys {
		if k.NotAfter.IsZero() || k.NotAfter.After(now) {
			v.SecretsValid++
		}
	}
	return v
}

func (in AgentInput) spec() agents.Spec {
	return agents.Spec{Name: in.Name, Ed25519PublicKey: in.Ed25519PublicKey, HTTPSigProfile: in.HTTPSigProfile, AllowedActions: in.AllowedActions,
		AllowedScopes: in.AllowedScopes, ApprovalRules: in.ApprovalRules}
}

func (c *Call) setAgentStatus(status string) {
	cur := c.agent()
	if cur == nil {
		return
	}
	if v, ok := c.apply(&catalog.PutAgent{Agent: agents.SetStatus(*cur, status, c.s.clock().UTC())}); ok {
		c.ok(agentView(v.(*catalog.Agent), "", c.s.clock()))
	}
}

func (s *Server) rotateAgent(c *Call) {
	cur := c.agent()
	var in AgentRotateInput
	if cur == nil {
		return
	}
	if len(c.Ctx.Request.Body()) > 0 && !c.decode(&in) {
		return
	}
	overlap := agents.DefaultOverlap
	if in.OverlapSeconds != nil {
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
	}
	a, secret, err := agents.Rotate(s.sealer(), *cur, overlap, s.clock().UTC())
	if err != nil {
		c.failErr(err)
		return
	}
	if v, ok := c.apply(&catalog.PutAgent{Agent: a}); ok {
		c.ok(agentView(v.(*catalog.Agent), secret, s.clock()))
	}
}

func approvalView(a *catalog.Approval, now time.Time) ApprovalView {
	return ApprovalView{ApprovalID: a.ID, AgentID: a.AgentID, RequestID: a.RequestID, Action: a.Action, Scope: a.Scope,
		ResourceID: a.ResourceID, SubjectID: a.SubjectID, Summary: a.Summary, Status: a.StatusAt(now), Consumed: !a.ConsumedAt.IsZero(),
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt}
}

func (s *Server) listApprovals(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	now := s.clock()
	out := ApprovalList{Approvals: []ApprovalView{}}
	for _, a := range c.cat.Approvals {
		if a.WorkspaceID == w.ID {
			out.Approvals = append(out.Approvals, approvalView(a, now))
		}
	}
	sort.Slice(out.Approvals, func(i, j int) bool { return out.Approvals[i].CreatedAt.After(out.Approvals[j].CreatedAt) })
	c.ok(out)
}

func (c *Call) decideApproval(approve bool) {
	w := c.workspace()
	var in ApprovalDecisionInput
	if w == nil || !c.decode(&in) {
		return
	}
	if in.By == "" || len(in.By) > 128 {
		c.fail(ErrInvalidField, "by must be 1 to 128 bytes")
		return
	}
	id := c.Param("approval_id")
	cur := c.cat.Approvals[id]
	if cur == nil || cur.WorkspaceID != w.ID {
		c.failErr(errApprovalNotFound)
		return
	}
	if st := cur.StatusAt(c.s.clock()); st != "pending" {
		c.failErr(errApprovalNotDecided.With("the approval is %s", st))
		return
	}
	v, ok := c.apply(&catalog.DecideApproval{WorkspaceID: w.ID, ID: id, Approve: approve, By: in.By, At: c.s.clock().UTC()})
	if !ok {
		return
	}
	if !approve {
		// Denied approvals raise the agent's risk (observed behaviour).
		_ = c.ask("agd/"+cur.AgentID, &actors.Hit{Key: "agd/" + cur.AgentID, Window: int64(time.Hour)})
	}
	c.ok(approvalView(v.(*catalog.Approval), c.s.clock()))
}

// verifyAgent authenticates a signed request before its body is decoded:
// with the HMAC scheme (X-Service-*), or with an RFC 9421 signature when
// the request carries Signature-Input or Signature (never both).
func (c *Call) verifyAgent() (agents.Identity, bool) {
	if !c.isJSON() {
		c.fail(ErrUnsupportedType, "Content-Type must be application/json")
		return agents.Identity{}, false
	}
	h := &c.Ctx.Request.Header
	hdr := nethttp.Header{}
	h.VisitAll(func(k, v []byte) { hdr.Add(string(k), string(v)) })
	v := agents.Verifier{Dir: agents.CatalogDirectory{Cat: c.cat, Sealer: c.s.sealer()}, Nonces: agents.MarkerNonces{Router: c.s.router},
		Tolerance: c.s.cfg.AgentTolerance, Now: c.s.clock}
	rfc, err := agents.UsesHTTPSig(hdr)
	if err != nil {
		c.failErr(err)
		return agents.Identity{}, false
	}
	var id agents.Identity
	var agentID string
	if rfc {
		req := agents.SignedRequest{Method: string(h.Method()), Authority: agents.NormalizeAuthority(string(h.Host())),
			Path: string(c.Ctx.URI().PathOriginal()), RawQuery: string(c.Ctx.URI().QueryString()), Header: hdr, Body: c.Ctx.Request.Body()}
		if i := strings.IndexByte(req.Path, '?'); i >= 0 {
			req.Path = req.Path[:i]
		}
		id, err = v.VerifyHTTPSig(req)
		agentID = agents.HTTPSigKeyID(hdr)
		if id.ID != uuid.Nil {
			agentID = id.ID.String() // the keyid may be a thumbprint
		}
	} else {
		req := agents.Request{Agent: string(h.Peek(agents.HeaderAgent)), Timestamp: string(h.Peek(agents.HeaderTimestamp)),
			Nonce: string(h.Peek(agents.HeaderNonce)), Signature: string(h.Peek(agents.HeaderSignature)), Body: c.Ctx.Request.Body()}
		id, err = v.Verify(req)
		agentID = req.Agent
	}
	if err != nil {
		if errors.Is(err, agents.ErrSignatureInvalid) || errors.Is(err, agents.ErrHTTPSigSignature) {
			if aid, perr := uuid.Parse(agentID); perr == nil && c.cat.Agents[aid.String()] != nil {
				_ = c.ask("agf/"+aid.String(), &actors.Hit{Key: "agf/" + aid.String(), Window: int64(time.Hour)})
			}
		}
		c.failErr(err)
		return id, false
	}
	return id, true
}

func (s *Server) agentDecision(c *Call) {
	id, ok := c.verifyAgent()
	if !ok {
		return
	}
	var in agents.DecisionInput
	if err := agents.DecodeBody(c.Ctx.Request.Body(), &in); err != nil {
		c.failErr(err)
		return
	}
	if err := in.Validate(); err != nil {
		c.failErr(err)
		return
	}
	a := c.cat.Agents[id.ID.String()]
	aid := a.ID
	now := s.clock()
	vel := &actors.Hit{Key: "agv/" + aid, Window: int64(time.Minute)}
	fails := &actors.Hit{Key: "agf/" + aid, Window: int64(time.Hour)}
	denied := &actors.Hit{Key: "agd/" + aid, Window: int64(time.Hour)}
	b := agents.Behaviour{}
	if err := c.ask(vel.Key, vel); err == nil {
		b.Rate, b.Baseline = vel.Rate, vel.Baseline
	}
	// Peek the failure and denial counters: a Hit counts one, so subtract it.
	if err := c.ask(fails.Key, fails); err == nil {
		b.FailedSignatures = fails.Rate - 1
	}
	if err := c.ask(denied.Key, denied); err == nil {
		b.DeniedApprovals = denied.Rate - 1
	}
	if agents.ScopeAllowed(a, in.Scope) {
		seen := &actors.Consume{ID: "agsc/" + aid + "/" + in.Scope, Expires: now.Add(30 * 24 * time.Hour).UnixNano()}
		if err := c.ask(seen.ID, seen); err == nil {
			b.NewScope = seen.First
		}
	}
	out := agents.Decide(a, in, b)
	ans := AgentDecision{Success: true, DecisionID: uuid.NewString(), AgentID: aid, IdentityVerified: true,
		RecommendedDecision: out.Recommended, Decision: out.Decision, RiskScore: out.RiskScore,
		Classification: out.Classification, ReasonCodes: out.ReasonCodes}
	if out.Decision == agents.DecisionApproval {
		ans.ApprovalRequestID = uuid.NewString()
	}
	stored, _ := json.Marshal(ans)
	sum := sha256.Sum256(c.Ctx.Request.Body())
	red := &actors.Redeem{ID: "agr/" + aid + "/" + in.RequestID, Key: hex.EncodeToString(sum[:]),
		Expires: now.Add(agentDecisionRetention).UnixNano(), Outcome: actors.Outcome{Ref: string(stored), At: now.UnixNano()}}
	if err := c.ask(red.ID, red); err != nil {
		c.failErr(err)
		return
	}
	switch {
	case red.Replayed:
		var prev AgentDecision
		if err := json.Unmarshal([]byte(red.Outcome.Ref), &prev); err != nil {
			c.failErr(err)
			return
		}
		c.ok(prev)
		return
	case !red.First:
		c.failErr(errAgentRequestReused)
		return
	}
	if ans.ApprovalRequestID != "" {
		ap := catalog.Approval{ID: ans.ApprovalRequestID, WorkspaceID: a.WorkspaceID, AgentID: aid, RequestID: in.RequestID,
			Action: in.Action, Scope: in.Scope, ResourceID: in.ResourceID, SubjectID: in.SubjectID, Summary: in.Summary,
			Status: "pending", CreatedAt: now.UTC(), ExpiresAt: now.Add(approvalTTL).UTC()}
		if _, ok := c.apply(&catalog.CreateApproval{Approval: ap}); !ok {
			return
		}
	}
	c.ok(ans)
}

func (s *Server) agentApprovalStatus(c *Call) {
	id, ok := c.verifyAgent()
	if !ok {
		return
	}
	var in ApprovalStatusInput
	if err := agents.DecodeBody(c.Ctx.Request.Body(), &in); err != nil {
		c.failErr(err)
		return
	}
	aid := id.ID.String()
	cur := c.cat.Approvals[in.ApprovalID]
	if cur == nil || cur.AgentID != aid {
		c.failErr(errApprovalNotFound)
		return
	}
	now := s.clock()
	st := cur.StatusAt(now)
	if !cur.ConsumedAt.IsZero() {
		c.failErr(errApprovalConsumed)
		return
	}
	ans := ApprovalStatus{Success: true, ApprovalID: cur.ID, Status: st, Action: cur.Action, Scope: cur.Scope}
	if st == "approved" {
		v, ok := c.apply(&catalog.ConsumeApproval{AgentID: aid, ID: cur.ID, At: now.UTC()})
		if !ok {
			return
		}
		r := v.(*catalog.ConsumeResult)
		if !r.Consumed {
			if !r.Approval.ConsumedAt.IsZero() {
				c.failErr(errApprovalConsumed)
				return
			}
			ans.Status = r.Approval.StatusAt(now)
		}
		ans.Consumed = r.Consumed
	}
	c.ok(ans)
}

// agentHTTPSigDoc is the contract's description of the RFC 9421 scheme
// (agents/DESIGN.md, "Signature scheme v2"); agents/httpsig_test.go pins
// the test vector.
const agentHTTPSigDoc = "An agent with a registered ed25519_public_key may sign with HTTP Message Signatures (RFC 9421) in the Web Bot Auth profile instead of the X-Service-* headers (sending both is agent-signature-ambiguous). " +
	"Headers: Content-Digest (RFC 9530) = sha-256=:<standard base64 of SHA-256(raw body)>: (sha-512 also accepted; every one sent must match); " +
	"Signature-Input = <label>=(<components>);created=<Unix s>;expires=<Unix s>;keyid=\"<agent_id>\";nonce=\"<nonce>\";alg=\"ed25519\";tag=\"web-bot-auth\" (alg optional, no other parameter; exactly one signature tagged web-bot-auth, the label is free); " +
	"Signature = <label>=:<standard base64 of the 64-byte Ed25519 signature>:. " +
	"Two profiles, set per agent with httpsig_profile. web-bot-auth (the default) is the Web Bot Auth draft: the components must include \"@authority\" (the Host header lowercased, without :80 or :443) and \"signature-agent\" when a Signature-Agent header is sent; a covered content-digest must match the body, and a body not covered by the signature is not authenticated. " +
	"strict also requires \"@path\" (the request path as sent, without the query) and \"content-digest\" when there is a body, so the signature binds the operation and the body. Others may be added in both. " +
	"keyid is the agent_id (a UUID) or, in the web-bot-auth profile, the RFC 7638 JWK thumbprint of the agent's key (web-bot-auth's signerFromJWK) sent with the header X-Service-Workspace: <workspace_id>; a thumbprint is looked up only among that workspace's agents, so registering another tenant's public key captures nothing, and one naming two agents of the workspace is refused. " +
	"nonce: 16 to 128 characters of A-Z a-z 0-9 + / = . _ ~ - (web-bot-auth's 64-byte base64 nonces fit), single use per agent in the same store as X-Service-Nonce. " +
	"Time, with the same tolerance as X-Service-Timestamp (±300 s): created within ±tolerance of the server clock, created < expires <= created + tolerance, and the server clock before expires. " +
	"Signature base (RFC 9421 section 2.5): for each component in order a line \"<name>\": <value>, then \"@signature-params\": <the Signature-Input member value>, lines joined by a line feed, no final line feed; the Ed25519 signature is over its bytes. " +
	"Test vector: the RFC 9421 B.1.4 test key (private d = n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU, public x = JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs, base64url), agent_id 6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d, POST to Host trustd.example, path /v1/agents/approval/status, body {\"approval_id\":\"3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b\"}, created 1700000000, expires 1700000300, nonce 0123456789abcdef0123456789abcdef give " +
	"Content-Digest: sha-256=:uTYIDQWJGwhg3en0kvlzNNjCFSwFLYVmUZ6l1dFEez0=: and " +
	"Signature-Input: sig1=(\"@authority\" \"@path\" \"content-digest\");created=1700000000;expires=1700000300;keyid=\"6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d\";nonce=\"0123456789abcdef0123456789abcdef\";alg=\"ed25519\";tag=\"web-bot-auth\" and " +
	"Signature: sig1=:JnzDsWIHSDIkUkcpjyTAbqccnPVn2YBO1p92QG8WD7DsThEX7L9hLMuuY1lr08WNUXQgUwdrphNVlbogf3D/CA==:. " +
	"Failures: agent-httpsig-* codes, agent-unknown, agent-suspended, agent-nonce-reused (see ApiError)."
