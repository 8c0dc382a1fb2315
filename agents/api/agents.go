package api

import (
	"context"
	"encoding/base64"
	nethttp "net/http"
	"sort"
	"time"

	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// Agent Trust transport: admin API of the registry and approvals, and the
// two signed agent operations. The module is agents/; this file decodes,
// authenticates admins, calls it and encodes. See agents/DESIGN.md.

// signedErrors are the errors of the two signed operations.
func signedErrors() []kernel.ErrorCode {
	var out []kernel.ErrorCode
	for _, c := range append(agents.Codes(), agents.HTTPSigCodes()...) {
		out = append(out, kernel.ModuleCode(c))
	}
	return append(out, kernel.ModuleCode(agents.ErrDecisionInput), kernel.ModuleCode(agents.ErrRequestReused), kernel.ModuleCode(agents.ErrApprovalNotFound),
		kernel.ModuleCode(agents.ErrApprovalConsumed), kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge, kernel.ErrUnavailable)
}

func (x agentsAPI) routes() []kernel.Route {
	ws := "/workspaces/{workspace_id}"
	ag := ws + "/agents/{agent_id}"
	a := []kernel.Auth{kernel.AuthAdmin}
	aerr := x.admin.Errors
	sig := []kernel.Auth{kernel.AuthAgent, kernel.AuthAgentHTTPSig}
	notPending := append(append([]kernel.ErrorCode(nil), aerr...), kernel.ModuleCode(agents.ErrApprovalNotPending))
	return append(x.admin.Routes(), []kernel.Route{
		{Method: "POST", Path: ag + "/suspend", Admin: true, ID: "suspendAgent", Tag: "Agent Trust", Auth: a, Summary: "Suspend an agent: its requests are refused with agent-suspended.",
			Result: &AgentView{}, Errors: aerr, Handle: kernel.AdminOnly(func(c *kernel.Call) { x.setStatus(c, agents.StatusSuspended) })},
		{Method: "POST", Path: ag + "/activate", Admin: true, ID: "activateAgent", Tag: "Agent Trust", Auth: a, Summary: "Reactivate a suspended agent.",
			Result: &AgentView{}, Errors: aerr, Handle: kernel.AdminOnly(func(c *kernel.Call) { x.setStatus(c, agents.StatusActive) })},
		{Method: "POST", Path: ag + "/rotate-secret", Admin: true, ID: "rotateAgentSecret", Tag: "Agent Trust", Auth: a, Summary: "Issue a new HMAC secret (shown once); the previous one stays valid for the overlap.",
			Body: &AgentRotateInput{}, Result: &AgentView{}, Errors: aerr, Handle: kernel.AdminOnly(x.rotate)},
		{Method: "GET", Path: ws + "/approvals", Admin: true, ID: "listApprovals", Tag: "Agent Trust", Auth: a, Summary: "The workspace's approval requests, newest first.",
			Result: &ApprovalList{}, Errors: aerr, Handle: kernel.AdminOnly(listApprovals)},
		{Method: "POST", Path: ws + "/approvals/{approval_id}/approve", Admin: true, ID: "approveApproval", Tag: "Agent Trust", Auth: a, Summary: "Approve a pending request.",
			Body: &ApprovalDecisionInput{}, Result: &ApprovalView{}, Errors: notPending, Handle: kernel.AdminOnly(func(c *kernel.Call) { x.decideApproval(c, true) })},
		{Method: "POST", Path: ws + "/approvals/{approval_id}/deny", Admin: true, ID: "denyApproval", Tag: "Agent Trust", Auth: a, Summary: "Deny a pending request.",
			Body: &ApprovalDecisionInput{}, Result: &ApprovalView{}, Errors: notPending, Handle: kernel.AdminOnly(func(c *kernel.Call) { x.decideApproval(c, false) })},
		{Method: "POST", Path: "/agents/decision", ID: "agentDecision", Tag: "Agent Trust", Auth: sig, Summary: "Ask whether the agent may perform an action (signed request).",
			Body: &AgentDecisionInput{}, Result: &AgentDecision{}, Errors: signedErrors(), Handle: x.decision},
		{Method: "POST", Path: "/agents/approval/status", ID: "agentApprovalStatus", Tag: "Agent Trust", Auth: sig, Summary: "Read, and on the first read after approval consume, an approval request (signed request).",
			Body: &ApprovalStatusInput{}, Result: &ApprovalStatus{}, Errors: signedErrors(), Handle: x.approvalStatus},
	}...)
}

// agentAdmin is the admin CRUD of agents; suspend, activate and
// rotate-secret are its extra operations (routes). The HMAC secret is made
// by the module's Register and shown once, in the create answer.
func (x agentsAPI) agentAdmin() *kernel.Resource[catalog.Agent, AgentInput, AgentView, AgentList] {
	return &kernel.Resource[catalog.Agent, AgentInput, AgentView, AgentList]{
		What: "agent", Path: "/workspaces/{workspace_id}/agents", Param: "agent_id", ID: "Agent", IDs: "Agents",
		Tag: "Agent Trust", UpdateMethod: "PUT", NotFound: agents.ErrAgentMissing,
		Errors: append(kernel.AdminErrors(), kernel.ModuleCode(agents.ErrInvalidAgent), kernel.ErrConflict),
		Summary: map[string]string{
			"create": "Register an agent; the answer holds its HMAC secret, once.",
			"list":   "List a workspace's agents.",
			"get":    "Read an agent.",
			"update": "Replace an agent's settings (not its secret or status).",
			"delete": "Delete an agent and its approval requests: pending ones can no longer be approved, approved unconsumed ones no longer consumed.",
		},
		Table: func(c *catalog.Catalog) map[string]*catalog.Agent { return c.Agents },
		Owner: func(a *catalog.Agent) string { return a.WorkspaceID },
		Build: func(c *kernel.Call, in *AgentInput, cur *catalog.Agent, workspaceID string) (catalog.Agent, string, error) {
			if cur == nil {
				return x.m.Register(workspaceID, in.spec(), c.Now().UTC())
			}
			a, err := agents.Update(*cur, in.spec(), c.Now().UTC())
			return a, "", err
		},
		Create: func(a catalog.Agent) catalog.Command { return &catalog.PutAgent{Agent: a} },
		Update: func(_ *AgentInput, a catalog.Agent) catalog.Command { return &catalog.PutAgent{Agent: a} },
		// The agent and its approvals go in one Raft command. Its signed
		// requests then answer agent-unknown on every node; its nonces,
		// idempotency records and behaviour counters are actor state keyed
		// by its agent_id (never reused) and expire on their own.
		Delete: func(a *catalog.Agent, now time.Time) catalog.Command {
			return &catalog.DeleteAgent{WorkspaceID: a.WorkspaceID, ID: a.ID, At: now}
		},
		Deleted: func(a *catalog.Agent, v any) any {
			r := v.(*catalog.DeleteAgentResult)
			return AgentDeleted{AgentID: a.ID, ApprovalsDeleted: r.Approvals, Pending: r.Pending, ApprovedUnconsumed: r.ApprovedUnconsumed}
		},
		DeletedView: &AgentDeleted{},
		View: func(c *kernel.Call, a *catalog.Agent, secret string) *AgentView {
			v := agentView(a, secret, c.Now())
			return &v
		},
		SortID: func(v *AgentView) string { return v.Name },
		List:   func(vs []AgentView) *AgentList { return &AgentList{Agents: vs} },
	}
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

func (x agentsAPI) setStatus(c *kernel.Call, status string) {
	cur := x.admin.Find(c)
	if cur == nil {
		return
	}
	if v, ok := c.Apply(&catalog.PutAgent{Agent: agents.SetStatus(*cur, status, c.Now().UTC())}); ok {
		c.OK(agentView(v.(*catalog.Agent), "", c.Now()))
	}
}

func (x agentsAPI) rotate(c *kernel.Call) {
	cur := x.admin.Find(c)
	var in AgentRotateInput
	if cur == nil {
		return
	}
	if len(c.Ctx.Request.Body()) > 0 && !c.Decode(&in) {
		return
	}
	overlap := agents.DefaultOverlap
	if in.OverlapSeconds != nil {
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
	}
	a, secret, err := x.m.RotateSecret(*cur, overlap, c.Now().UTC())
	if err != nil {
		c.FailErr(err)
		return
	}
	if v, ok := c.Apply(&catalog.PutAgent{Agent: a}); ok {
		c.OK(agentView(v.(*catalog.Agent), secret, c.Now()))
	}
}

func approvalView(a *catalog.Approval, now time.Time) ApprovalView {
	return ApprovalView{ApprovalID: a.ID, AgentID: a.AgentID, RequestID: a.RequestID, Action: a.Action, Scope: a.Scope,
		ResourceID: a.ResourceID, SubjectID: a.SubjectID, Summary: a.Summary, Status: a.StatusAt(now), Consumed: !a.ConsumedAt.IsZero(),
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt}
}

func listApprovals(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	now := c.Now()
	out := ApprovalList{Approvals: []ApprovalView{}}
	for _, a := range c.Catalog().Approvals {
		if a.WorkspaceID == w.ID {
			out.Approvals = append(out.Approvals, approvalView(a, now))
		}
	}
	sort.Slice(out.Approvals, func(i, j int) bool { return out.Approvals[i].CreatedAt.After(out.Approvals[j].CreatedAt) })
	c.OK(out)
}

func (x agentsAPI) decideApproval(c *kernel.Call, approve bool) {
	w := c.Workspace()
	var in ApprovalDecisionInput
	if w == nil || !c.Decode(&in) {
		return
	}
	if in.By == "" || len(in.By) > 128 {
		c.Fail(kernel.ErrInvalidField, "by must be 1 to 128 bytes")
		return
	}
	ap, err := x.m.DecideApproval(context.Background(), c.Catalog(), w.ID, c.Param("approval_id"), approve, in.By)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(approvalView(ap, c.Now()))
}

// message is the signed request as the module takes it, once the body is
// known to be JSON; the module verifies it before anything decodes it.
func message(c *kernel.Call) (agents.Message, bool) {
	if !c.IsJSON() {
		c.Fail(kernel.ErrUnsupportedType, "Content-Type must be application/json")
		return agents.Message{}, false
	}
	h := &c.Ctx.Request.Header
	hdr := nethttp.Header{}
	h.VisitAll(func(k, v []byte) { hdr.Add(string(k), string(v)) })
	return agents.Message{Method: string(h.Method()), Host: string(h.Host()), Path: string(c.Ctx.URI().PathOriginal()),
		RawQuery: string(c.Ctx.URI().QueryString()), Header: hdr, Body: c.Ctx.Request.Body()}, true
}

// signedCall reads the signed request, authenticates its agent and runs
// the module call do on the verified body. false: it has answered the call
// already (not JSON, a refused signature, or do's error).
func signedCall[R any](x agentsAPI, c *kernel.Call, do func(context.Context, *catalog.Catalog, agents.Identity, []byte) (R, error)) (R, bool) {
	var none R
	msg, ok := message(c)
	if !ok {
		return none, false
	}
	cat := c.Catalog()
	id, err := x.m.Authenticate(cat, msg)
	if err != nil {
		c.FailErr(err)
		return none, false
	}
	r, err := do(context.Background(), cat, id, msg.Body)
	if err != nil {
		c.FailErr(err)
		return none, false
	}
	return r, true
}

func (x agentsAPI) decision(c *kernel.Call) {
	if d, ok := signedCall(x, c, x.m.Decide); ok {
		c.OK(AgentDecision{Success: d.Success, DecisionID: d.DecisionID, AgentID: d.AgentID, IdentityVerified: d.IdentityVerified,
			RecommendedDecision: d.RecommendedDecision, Decision: d.Decision, RiskScore: d.RiskScore, Classification: d.Classification,
			ReasonCodes: d.ReasonCodes, ApprovalRequestID: d.ApprovalRequestID})
	}
}

func (x agentsAPI) approvalStatus(c *kernel.Call) {
	if st, ok := signedCall(x, c, x.m.ApprovalStatus); ok {
		c.OK(ApprovalStatus{Success: true, ApprovalID: st.ApprovalID, Status: st.Status, Action: st.Action, Scope: st.Scope, Consumed: st.Consumed})
	}
}
