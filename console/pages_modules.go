package console

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/console/login"
	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Pages of the modules beside rate limiting: agents and the approval
// queue, webhook deliveries and redelivery, console users, the audit log,
// creating a policy and the policy stats the charts poll. Each is admin
// API calls and nothing else.

type agentView struct {
	AgentID string `json:"agent_id"`
	Name    string `json:"name"`
	Status  string `json:"status"`
}

type approvalView struct {
	ApprovalID string    `json:"approval_id"`
	AgentID    string    `json:"agent_id"`
	Action     string    `json:"action"`
	Scope      string    `json:"scope"`
	ResourceID string    `json:"resource_id"`
	Summary    string    `json:"summary"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	DecidedBy  string    `json:"decided_by"`
}

type approvalsData struct {
	Workspace  workspaceView
	Agents     []agentView
	AgentNames map[string]string
	Approvals  []approvalView
	CanDecide  bool
}

func (c *Console) approvals(r *req) { c.renderApprovals(r, 200, "", "") }

func (c *Console) renderApprovals(r *req, status int, msg, errMsg string) {
	ws := r.params.ws
	d := approvalsData{AgentNames: map[string]string{}, CanDecide: r.sess.principal.Can(users.Approve, ws)}
	base := "/workspaces/" + ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	var al struct {
		Agents []agentView `json:"agents"`
	}
	var pl struct {
		Approvals []approvalView `json:"approvals"`
	}
	if !c.getAll(r, apiRead{base + "/agents", &al}) {
		return
	}
	if !c.getAll(r, apiRead{base + "/approvals", &pl}) {
		return
	}
	d.Agents, d.Approvals = al.Agents, pl.Approvals
	for _, a := range al.Agents {
		d.AgentNames[a.AgentID] = a.Name
	}
	c.render(r, status, "approvals", pageData{Title: "Agents and approvals", Nav: "workspaces", Tab: "approvals", Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// decideApproval approves or denies with the admin API; the decision is
// recorded as made by the session's principal.
func (c *Console) decideApproval(r *req) {
	verb := r.params.sub
	if verb != "approve" && verb != "deny" {
		c.notFound(r)
		return
	}
	by := r.sess.principal.Email
	if r.sess.principal.Admin {
		by = "admin (console)"
	}
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/approvals/"+r.params.id+"/"+verb, map[string]any{"by": by}, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderApprovals(r, 422, "", "The request was not decided: "+e.Message)
	}) {
		return
	}
	past := "approved"
	if verb == "deny" {
		past = "denied"
	}
	c.renderApprovals(r, 200, "Request "+past+".", "")
}

func (c *Console) redeliver(r *req) {
	p := findListPage("webhook-events")
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/webhook-events/"+r.params.id+"/redeliver", map[string]any{}, nil)
	if c.refused(r, st, e, func(e *apiError) {
		r.params.id = p.Slug
		c.renderList(r, p, 422, "", "The event was not redelivered: "+e.Message)
	}) {
		return
	}
	r.params.id = p.Slug
	c.renderList(r, p, 200, "Redelivery queued.", "")
}

type attemptView struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	HTTPStatus int       `json:"http_status"`
	Error      string    `json:"error"`
	DurationMs int64     `json:"duration_ms"`
	Outcome    string    `json:"outcome"`
}

func (c *Console) deliveries(r *req) {
	var d struct {
		Workspace  workspaceView
		EndpointID string
		Attempts   []attemptView `json:"attempts"`
	}
	base := "/workspaces/" + r.params.ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	if !c.getAll(r, apiRead{base + "/webhooks/" + r.params.id + "/deliveries", &d}) {
		return
	}
	d.EndpointID = r.params.id
	c.render(r, 200, "deliveries", pageData{Title: "Webhook deliveries", Nav: "workspaces", Tab: "webhooks", Workspace: r.params.ws, Data: d})
}

type consoleUserView struct {
	ConsoleUserID string    `json:"console_user_id"`
	Email         string    `json:"email"`
	Role          string    `json:"role"`
	HasPassword   bool      `json:"has_password"`
	LinkPending   bool      `json:"sign_in_link_pending"`
	CreatedAt     time.Time `json:"created_at"`
	SignInURL     string    `json:"sign_in_url"`
}

type usersData struct {
	Workspace workspaceView
	Users     []consoleUserView
	Created   *consoleUserView
	Roles     []string
}

func (c *Console) consoleUsers(r *req) { c.renderUsers(r, 200, "", nil) }

func (c *Console) renderUsers(r *req, status int, errMsg string, created *consoleUserView) {
	d := usersData{Created: created, Roles: []string{"viewer", "editor", "approver"}}
	base := "/workspaces/" + r.params.ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	var ul struct {
		Users []consoleUserView `json:"console_users"`
	}
	if !c.getAll(r, apiRead{base + "/console-users", &ul}) {
		return
	}
	d.Users = ul.Users
	c.render(r, status, "users", pageData{Title: "Console users", Nav: "workspaces", Tab: "users", Workspace: r.params.ws, Error: errMsg, Data: d})
}

func (c *Console) createConsoleUser(r *req) {
	f := r.ctx.PostArgs()
	body := map[string]any{"email": string(f.Peek("email")), "role": string(f.Peek("role"))}
	if p := string(f.Peek("password")); p != "" {
		body["password"] = p
	}
	var u consoleUserView
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/console-users", body, &u)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderUsers(r, 422, "The user was not created: "+e.Message, nil)
	}) {
		return
	}
	c.renderUsers(r, 201, "", &u)
}

type auditEntry struct {
	Seq         uint64    `json:"seq"`
	At          time.Time `json:"at"`
	Actor       string    `json:"actor"`
	Via         string    `json:"via"`
	Operation   string    `json:"operation"`
	Method      string    `json:"method"`
	Path        string    `json:"path"`
	WorkspaceID string    `json:"workspace_id"`
	Status      int       `json:"status"`
}

// auditPage is the whole log for the admin, and a console user's own
// workspace's entries for anyone else.
func (c *Console) auditPage(r *req) {
	if !r.sess.principal.Admin {
		c.auditOf(r, r.sess.principal.WorkspaceID)
		return
	}
	c.auditOf(r, "")
}

func (c *Console) auditOf(r *req, ws string) {
	var al struct {
		Entries []auditEntry `json:"entries"`
	}
	q := url.Values{"limit": {"200"}}
	if ws != "" {
		q.Set("workspace_id", ws)
	}
	if !c.getAll(r, apiRead{"/audit?" + q.Encode(), &al}) {
		return
	}
	pd := pageData{Title: "Audit log", Nav: "audit", Data: al.Entries}
	if ws != "" && r.params.ws != "" {
		pd.Nav, pd.Tab, pd.Workspace = "workspaces", "audit", ws
	}
	c.render(r, 200, "audit", pd)
}

// createPolicy creates a rate-limit policy with the admin API (its
// validation, its messages).
func (c *Console) createPolicy(r *req) {
	f := r.ctx.PostArgs()
	num := func(k string) (int64, bool) {
		n, err := strconv.ParseInt(strings.TrimSpace(string(f.Peek(k))), 10, 64)
		return n, err == nil
	}
	capacity, ok1 := num("capacity")
	refill, ok2 := num("refill_amount")
	interval, ok3 := num("refill_interval_seconds")
	if !ok1 || !ok2 || !ok3 {
		c.policies(r, r.params.ws, 422, "", "The policy was not created: capacity, refill amount and refill interval are whole numbers")
		return
	}
	target := map[string]any{"type": "workspace"}
	if t := string(f.Peek("target_site")); t != "" {
		target = map[string]any{"type": "site", "id": t}
	}
	body := map[string]any{"name": string(f.Peek("name")), "action_pattern": string(f.Peek("action_pattern")),
		"scope": string(f.Peek("scope")), "mode": string(f.Peek("mode")), "target": target,
		"bucket": map[string]any{"capacity": capacity, "refill_amount": refill, "refill_interval_seconds": interval}}
	var p policyView
	st, e := c.call(r, "POST", "/workspaces/"+r.params.ws+"/rate-limit-policies", body, &p)
	if c.refused(r, st, e, func(e *apiError) {
		c.policies(r, r.params.ws, 422, "", "The policy was not created: "+e.Message)
	}) {
		return
	}
	c.redirect(r, Prefix+"workspaces/"+r.params.ws+"/policies?updated="+p.PolicyID+"#policy-"+p.PolicyID)
}

// policyStatsJSON answers the policy's counters as JSON for the chart
// script (same-origin GET with the session cookie; no-store).
func (c *Console) policyStatsJSON(r *req) {
	var s policyStats
	if st, e := c.call(r, "GET", "/workspaces/"+r.params.ws+"/rate-limit-policies/"+r.params.id+"/stats?scope=cluster", nil, &s); e != nil {
		r.ctx.SetStatusCode(st)
		r.ctx.SetContentType("application/json")
		b, _ := json.Marshal(map[string]string{"error": e.Error})
		r.ctx.SetBody(b)
		return
	}
	b, _ := json.Marshal(s)
	r.ctx.SetStatusCode(200)
	r.ctx.SetContentType("application/json")
	r.ctx.SetBody(b)
}

// Verbs are the decisions a pending request offers.
func (approvalsData) Verbs() []string { return []string{"approve", "deny"} }

type corpusStatus struct {
	Node    string `json:"node"`
	Corpora []struct {
		Mode   string `json:"mode"`
		Error  string `json:"error"`
		Corpus *struct {
			Source         string `json:"source"`
			CountSemantics string `json:"count_semantics"`
			Description    string `json:"description"`
			BuiltAt        string `json:"built_at"`
			Hashes         uint64 `json:"hashes"`
			Embedded       bool   `json:"embedded"`
		} `json:"corpus"`
	} `json:"corpora"`
}

// accountDefence shows the breached-password corpus this node answers
// range queries from (not a workspace's data: every role may read it).
func (c *Console) accountDefence(r *req) {
	var d corpusStatus
	if !c.getAll(r, apiRead{"/passwords/status", &d}) {
		return
	}
	c.render(r, 200, "account", pageData{Title: "Account defence", Nav: "account", Data: d})
}

// myPassword lets a console user change their own password: the current
// one is checked under the address's login limit and a budget of the
// user's own (passwordChangeBudget), with the same argon2id check, and the
// new one is set with the admin API's PATCH (its validation, its hash).
func (c *Console) myPassword(r *req) {
	if r.sess.principal.Admin {
		c.forbidden(r, "The cluster admin has no console password; the admin token is its credential.")
		return
	}
	c.renderMyPassword(r, 200, "", "")
}

// passwordChangeBudget bounds a signed-in user's current-password checks:
// 5 at once, then one every 12 s.
var passwordChangeBudget = ratelimit.BucketConfig{Capacity: 5, RefillAmount: 1, RefillInterval: int64(12 * time.Second)}

func (c *Console) renderMyPassword(r *req, status int, notice, errMsg string) {
	c.render(r, status, "password", pageData{Title: "Change your password", Nav: "password", Notice: notice, Error: errMsg})
}

func (c *Console) changeMyPassword(r *req) {
	p := r.sess.principal
	if p.Admin || p.UserID == "" {
		c.forbidden(r, "The cluster admin has no console password; the admin token is its credential.")
		return
	}
	f := r.ctx.PostArgs()
	cur, next := string(f.Peek("current_password")), string(f.Peek("new_password"))
	if next != string(f.Peek("confirm_password")) {
		c.renderMyPassword(r, 422, "", "The new password and its confirmation differ.")
		return
	}
	// The address's login budget, and the user's own budget for this form:
	// only the user's sessions reach it, so nobody else can spend it (the
	// account's sign-in failures are not used here).
	limited := func(wait time.Duration) {
		c.refuseLimited(r, wait, func(st int, msg string) { c.renderMyPassword(r, st, "", msg) })
	}
	if v := c.guard.Attempt(r.ctx.RemoteIP().String(), ""); v.Outcome == login.Limited {
		limited(v.RetryAfter)
		return
	}
	if ok, wait := c.guard.Limit("password-change/"+p.UserID, passwordChangeBudget); !ok {
		limited(wait)
		return
	}
	if len(cur) > 256 {
		c.renderMyPassword(r, 422, "", "The current password is wrong.")
		return
	}
	if who, ok := c.b.UserLogin(p.Email, cur); !ok || who.UserID != p.UserID {
		c.renderMyPassword(r, 422, "", "The current password is wrong.")
		return
	}
	st, e := c.call(r, "PATCH", "/workspaces/"+p.WorkspaceID+"/console-users/"+p.UserID, map[string]any{"password": next}, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.renderMyPassword(r, 422, "", "The password was not changed: "+e.Message)
	}) {
		return
	}
	c.renderMyPassword(r, 200, "Your password was changed.", "")
}
