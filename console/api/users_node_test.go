package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
)

// TestConsoleUsersOnARealNode drives console users end to end on a real
// node: created through the admin API (argon2id hashing, validation, the
// contract), logging in to the console with a password or a one-time link,
// the role checks, wrong passwords that never lock the account,
// and the audit log of admin API and console changes.
func TestConsoleUsersOnARealNode(t *testing.T) {
	tn := startConsoleNode(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "shop"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID + "/console-users"

	for _, tc := range []struct {
		name string
		body map[string]any
		code string
	}{
		{"an address with a display name is refused", map[string]any{"email": "Ann <ann@x.io>", "role": "viewer", "password": "long enough pw"}, "invalid-email"},
		{"an unknown role is refused", map[string]any{"email": "ann@x.io", "role": "owner", "password": "long enough pw"}, "invalid-role"},
		{"a short password is refused", map[string]any{"email": "ann@x.io", "role": "viewer", "password": "short"}, "invalid-password"},
	} {
		if r := tn.Admin("POST", base, tc.body); r.Status != 400 || !strings.Contains(string(r.Body), tc.code) {
			t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	var viewer, approver struct {
		ID        string `json:"console_user_id"`
		SignInURL string `json:"sign_in_url"`
		HasPw     bool   `json:"has_password"`
	}
	tn.MustCreate(base, map[string]any{"email": "Ann@X.io", "role": "viewer", "password": "viewer password 1"}, &viewer)
	if !viewer.HasPw || viewer.SignInURL != "" {
		t.Fatalf("viewer created with a password: %+v", viewer)
	}
	if r := tn.Admin("POST", base, map[string]any{"email": "ann@x.io", "role": "editor", "password": "x password 123"}); r.Status != 409 {
		t.Fatalf("duplicate email (any case): %d, want 409", r.Status)
	}
	tn.MustCreate(base, map[string]any{"email": "bo@x.io", "role": "approver"}, &approver)
	if approver.HasPw || !strings.Contains(approver.SignInURL, "/console/link?t=") {
		t.Fatalf("approver without a password gets a one-time link: %+v", approver)
	}
	if r := tn.Admin("GET", base, nil); r.Status != 200 || strings.Contains(string(r.Body), "argon2") || strings.Contains(string(r.Body), "hash") {
		t.Fatalf("the list must never show a password hash: %s", r.Body)
	}

	// The viewer logs in with the password and may read, not write.
	cc := newConsoleClient(t, tn)
	_, _, page := cc.do("GET", "/console/login", nil)
	st, _, body := cc.do("POST", "/console/login", cc.loginForm(page, url.Values{"email": {"ann@x.io"}, "password": {"viewer password 1"}}))
	if st != 303 {
		t.Fatalf("viewer login: %d %s", st, body)
	}
	st, _, body = cc.do("GET", "/console/workspaces/"+ws.WorkspaceID, nil)
	if st != 200 || strings.Contains(body, "Create a site") {
		t.Fatalf("viewer workspace page: %d (a viewer sees no create form)", st)
	}
	csrf := cc.csrf(body)
	if st, _, _ := cc.do("POST", "/console/workspaces/"+ws.WorkspaceID+"/sites", url.Values{"csrf": {csrf}, "name": {"x"}, "hostnames": {"a.example"}}); st != 403 {
		t.Fatalf("viewer create site: %d, want 403", st)
	}
	if r := tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/sites", nil); strings.Contains(string(r.Body), `"name":"x"`) {
		t.Fatal("a viewer's refused form created a site")
	}
	if st, _, _ := cc.do("GET", "/console/cluster", nil); st != 403 {
		t.Fatalf("viewer cluster page: %d, want 403", st)
	}

	// Promote the viewer to editor: the open session sees it at once, and
	// its change is audited under the user's name.
	if r := tn.Admin("PATCH", base+"/"+viewer.ID, map[string]any{"role": "editor"}); r.Status != 200 {
		t.Fatalf("promote: %d %s", r.Status, r.Body)
	}
	if st, _, b := cc.do("POST", "/console/workspaces/"+ws.WorkspaceID+"/sites", url.Values{"csrf": {csrf}, "name": {"by-ann"}, "hostnames": {"a.example"}}); st != 201 {
		t.Fatalf("editor create site: %d %s", st, b)
	}

	// The one-time link logs the approver in once.
	u, _ := url.Parse(approver.SignInURL)
	cl := newConsoleClient(t, tn)
	_, _, page = cl.do("GET", u.RequestURI(), nil)
	if st, _, b := cl.do("POST", "/console/link", url.Values{"csrf": {cl.csrf(page)}, "link": {u.Query().Get("t")}}); st != 303 {
		t.Fatalf("link login: %d %s", st, b)
	}
	// An agent asks for an action that needs approval; the editor may not
	// decide it, the approver approves it in the console, and the admin
	// API shows the decision made by the approver's email.
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/agents", map[string]any{
		"name": "billing-bot", "allowed_actions": []string{"refund.*"}, "allowed_scopes": []string{"billing"},
		"approval_rules": []map[string]any{{"action": "refund.*"}},
	}, &ag)
	var dec struct {
		Decision   string `json:"decision"`
		ApprovalID string `json:"approval_request_id"`
	}
	r := signAgentRequest(tn, ag.ID, ag.Secret, "/v1/agents/decision",
		`{"request_id":"r1","action":"refund.issue","scope":"billing","resource_id":"inv-1","subject_id":"cust-1","summary":"refund 10 EUR"}`)
	r.Decode(t, &dec)
	if dec.Decision != "approval_required" || dec.ApprovalID == "" {
		t.Fatalf("agent decision: %s", r.Body)
	}
	approve := "/console/workspaces/" + ws.WorkspaceID + "/approvals/" + dec.ApprovalID + "/approve"
	if st, _, _ := cc.do("POST", approve, url.Values{"csrf": {csrf}}); st != 403 {
		t.Fatalf("editor approves: %d, want 403", st)
	}
	st, _, body = cl.do("GET", "/console/workspaces/"+ws.WorkspaceID+"/approvals", nil)
	if st != 200 || !strings.Contains(body, "refund 10 EUR") || !strings.Contains(body, ">Approve") {
		t.Fatalf("approver approvals page: %d %s", st, body)
	}
	if st, _, b := cl.do("POST", approve, url.Values{"csrf": {cl.csrf(body)}}); st != 200 || !strings.Contains(b, "Request approved.") {
		t.Fatalf("approver approves: %d %s", st, b)
	}
	if r := tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/approvals", nil); !strings.Contains(string(r.Body), `"status":"approved"`) || !strings.Contains(string(r.Body), `"decided_by":"bo@x.io"`) {
		t.Fatalf("approval after the console decision: %s", r.Body)
	}
	c2 := newConsoleClient(t, tn)
	_, _, page = c2.do("GET", u.RequestURI(), nil)
	if st, _, _ := c2.do("POST", "/console/link", url.Values{"csrf": {c2.csrf(page)}, "link": {u.Query().Get("t")}}); st != 401 {
		t.Fatalf("second use of the link: %d, want 401", st)
	}

	// Deleting the user ends their session at its next request.
	if r := tn.Admin("DELETE", base+"/"+approver.ID, nil); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if st, h, _ := cl.do("GET", "/console/workspaces/"+ws.WorkspaceID+"/approvals", nil); st != 303 || h.Get("Location") != "/console/login" {
		t.Fatalf("deleted user's session: %d", st)
	}

	// Ann changes her own password in the console: the current one is
	// checked, the new one set through the admin PATCH (argon2id).
	before := tn.N.Store().Catalog().ConsoleUserByEmail("ann@x.io").PasswordHash
	st, _, body = cc.do("GET", "/console/password", nil)
	if st != 200 {
		t.Fatalf("password page: %d", st)
	}
	if st, _, b := cc.do("POST", "/console/password", url.Values{"csrf": {cc.csrf(body)}, "current_password": {"viewer password 1"},
		"new_password": {"ann's new password"}, "confirm_password": {"ann's new password"}}); st != 200 || !strings.Contains(b, "Your password was changed.") {
		t.Fatalf("password change: %d %s", st, b)
	}
	if after := tn.N.Store().Catalog().ConsoleUserByEmail("ann@x.io").PasswordHash; after == before || !strings.HasPrefix(after, "$argon2id$") {
		t.Fatal("the password hash did not change")
	}

	// Wrong passwords never lock the account (issue 24): on this
	// production node every attempt carries the widget's token, so past
	// the account's failures the attempts still get their answer (401,
	// never 429), and the right password then signs in.
	for i := 0; i < 7; i++ {
		c := newConsoleClient(t, tn)
		_, _, page := c.do("GET", "/console/login", nil)
		if st, _, _ := c.do("POST", "/console/login", c.loginForm(page, url.Values{"email": {"ann@x.io"}, "password": {"wrong password"}})); st != 401 {
			t.Fatalf("wrong password %d: %d, want 401", i+1, st)
		}
	}
	{
		c := newConsoleClient(t, tn)
		_, _, page := c.do("GET", "/console/login", nil)
		if st, _, b := c.do("POST", "/console/login", c.loginForm(page, url.Values{"email": {"ann@x.io"}, "password": {"ann's new password"}})); st != 303 {
			t.Fatalf("the right password after 7 failures: %d %s", st, b)
		}
	}

	// The audit log: admin API writes and console actions, who and what.
	r = tn.Admin("GET", "/audit?workspace_id="+ws.WorkspaceID, nil)
	if r.Status != 200 {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	log := string(r.Body)
	for _, want := range []string{`"actor":"admin-token","via":"api","operation":"createConsoleUser"`,
		`"operation":"updateConsoleUser"`, `"operation":"deleteConsoleUser"`,
		`"actor":"console:ann@x.io (editor)","via":"console","operation":"createSite"`,
		`"actor":"console:ann@x.io (viewer)","via":"console","operation":"consoleLogin"`,
		`"actor":"console:bo@x.io (approver)","via":"console","operation":"consoleLinkLogin","method":"POST","path":"/console/link"`,
		`"actor":"console:bo@x.io (approver)","via":"console","operation":"approveApproval"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "listConsoleUsers") || strings.Contains(log, "password") {
		t.Error("the audit log records reads or request bodies")
	}
	if r := tn.Admin("GET", "/passwords/status", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"mode":"sha1"`) || !strings.Contains(string(r.Body), `"hashes":`) {
		t.Fatalf("password corpus status: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("GET", "/audit?limit=0", nil); r.Status != 400 {
		t.Fatalf("audit limit=0: %d, want 400", r.Status)
	}
}

// signAgentRequest posts body signed with the agent's HMAC secret as the
// contract's agent_signature scheme describes it (this package does not
// import Agent Trust: its adapter is handed in by node/).
func signAgentRequest(tn *nodetest.Node, agentID, secret, path, body string) nodetest.Response {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	nonce := "console-nonce-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + nonce + "\n" + body))
	return tn.Do("POST", path, "", body, "X-Service-Agent", agentID, "X-Service-Timestamp", ts, "X-Service-Nonce", nonce,
		"X-Service-Signature", "v1="+hex.EncodeToString(mac.Sum(nil)))
}
