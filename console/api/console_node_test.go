package api_test

import (
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/trustd/trustd/console"
	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/platform/cluster/clustertest"
)

// consoleClient is a browser-like client of a real node's console: a
// cookie jar, no automatic redirects.
type consoleClient struct {
	t    *testing.T
	base string
	hc   *nethttp.Client
}

func newConsoleClient(t *testing.T, tn *nodetest.Node) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, base: tn.N.APIURL(), hc: &nethttp.Client{Jar: jar,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

func (cc *consoleClient) do(method, path string, form url.Values) (int, nethttp.Header, string) {
	cc.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := nethttp.NewRequest(method, cc.base+path, rd)
	if err != nil {
		cc.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := cc.hc.Do(req)
	if err != nil {
		cc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (cc *consoleClient) csrf(body string) string {
	cc.t.Helper()
	m := consoleCSRF.FindStringSubmatch(body)
	if m == nil {
		cc.t.Fatalf("no csrf field in:\n%s", body)
	}
	return m[1]
}

// widgetSiteKey is the login page's widget site key ("" in dev mode).
var widgetSiteKey = regexp.MustCompile(`class="service-widget" id="widget-admin" data-sitekey="([^"]+)"`)

// loginForm fills the login form of page: the double-submit token and,
// when the page carries trustd's widget (production), a widget token
// minted through the real challenge protocol for the console's action.
func (cc *consoleClient) loginForm(page string, fields url.Values) url.Values {
	cc.t.Helper()
	fields.Set("csrf", cc.csrf(page))
	if m := widgetSiteKey.FindStringSubmatch(page); m != nil {
		tok, err := clustertest.MintToken(cc.base, m[1], "http://127.0.0.1", console.LoginAction)
		if err != nil {
			cc.t.Fatalf("widget token for the console login: %v", err)
		}
		fields.Set("service-response", tok)
	}
	return fields
}

// startConsoleNode starts a production node (not dev) whose console
// login is protected by trustd's own widget: a console workspace and a
// site for 127.0.0.1 are created, and the node restarts with
// ConsoleSiteID set (the operator's --console-site).
func startConsoleNode(t *testing.T) *nodetest.Node {
	t.Helper()
	tn := nodetest.Start(t)
	var ws, site struct {
		WorkspaceID string `json:"workspace_id"`
		SiteID      string `json:"site_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "operators"}, &ws)
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "console", "hostnames": []string{"127.0.0.1"}}, &site)
	cfg := tn.Cfg
	tn.Stop()
	tn.N = nil
	cfg.ConsoleSiteID = site.SiteID
	return nodetest.StartConfig(t, cfg)
}

func (cc *consoleClient) login(token string) (int, string) {
	cc.t.Helper()
	_, _, page := cc.do("GET", "/console/login", nil)
	st, _, body := cc.do("POST", "/console/login", cc.loginForm(page, url.Values{"token": {token}}))
	if st != 303 {
		return st, body
	}
	st, _, body = cc.do("GET", "/console/", nil)
	if st != 200 {
		cc.t.Fatalf("overview after login: %d %s", st, body)
	}
	return st, cc.csrf(body)
}

// TestConsoleOnARealNode drives the console of a real node end to end:
// login with the node's admin token, a site created and its secret
// rotated through the console and then used on the public API, a policy's
// observed counters and its promotion through the admin API's own PATCH
// validation, the cluster page, and the contract left untouched.
func TestConsoleOnARealNode(t *testing.T) {
	tn := startConsoleNode(t)
	cc := newConsoleClient(t, tn)

	// The console's pages are not part of the API contract (the admin
	// operations on console users, /console-users, are).
	spec := tn.Do("GET", "/v1/openapi.json", "", nil)
	if spec.Status != 200 || strings.Contains(string(spec.Body), "/console/") || strings.Contains(string(spec.Body), `"/console"`) {
		t.Fatal("/openapi.json mentions the console")
	}
	if pm := tn.Do("GET", "/v1/postman-collection.json", "", nil); pm.Status != 200 || strings.Contains(string(pm.Body), "/console/") {
		t.Fatal("the Postman collection mentions the console")
	}
	if st, h, _ := cc.do("GET", "/console/", nil); st != 303 || h.Get("Location") != "/console/login" {
		t.Fatalf("anonymous console: %d %q", st, h.Get("Location"))
	}
	if st, _ := cc.login("not-the-token"); st != 401 {
		t.Fatalf("wrong token: %d, want 401", st)
	}
	// Production: trustd's own widget guards the form. The right token
	// without the widget's token, or with a token minted for another
	// action, or with one already redeemed, does not log in.
	_, _, page := cc.do("GET", "/console/login", nil)
	key := widgetSiteKey.FindStringSubmatch(page)
	if key == nil || !strings.Contains(page, `<script src="/v1/widget/api.js"`) {
		t.Fatalf("production login page without the widget:\n%s", page)
	}
	if st, _, body := cc.do("POST", "/console/login", url.Values{"csrf": {cc.csrf(page)}, "token": {tn.N.AdminToken()}}); st != 401 || !strings.Contains(body, "human check") {
		t.Fatalf("login without the widget's token: %d", st)
	}
	other, err := clustertest.MintToken(cc.base, key[1], "http://127.0.0.1", "checkout")
	if err != nil {
		t.Fatal(err)
	}
	_, _, page = cc.do("GET", "/console/login", nil)
	if st, _, _ := cc.do("POST", "/console/login", url.Values{"csrf": {cc.csrf(page)}, "token": {tn.N.AdminToken()}, "service-response": {other}}); st != 401 {
		t.Fatalf("login with a token of another action: %d", st)
	}
	_, _, page = cc.do("GET", "/console/login", nil)
	used := cc.loginForm(page, url.Values{"token": {"not-the-token"}})
	cc.do("POST", "/console/login", used)
	_, _, page = cc.do("GET", "/console/login", nil)
	used.Set("csrf", cc.csrf(page))
	used.Set("token", tn.N.AdminToken())
	if st, _, _ := cc.do("POST", "/console/login", used); st != 401 {
		t.Fatalf("login with a redeemed widget token: %d", st)
	}
	_, csrf := cc.login(tn.N.AdminToken())

	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "console"}, &ws)
	wsPage := "/console/workspaces/" + ws.WorkspaceID
	if st, _, body := cc.do("GET", "/console/workspaces", nil); st != 200 || !strings.Contains(body, wsPage) {
		t.Fatalf("workspaces page: %d", st)
	}

	// Create a site: the secret is on the answer page, once, and works.
	st, _, body := cc.do("POST", wsPage+"/sites", url.Values{"csrf": {csrf}, "name": {"Shop"},
		"hostnames": {"shop.example\nwww.shop.example"}, "environment": {"production"}, "challenge_mode": {"visual"}})
	if st != 201 {
		t.Fatalf("create site: %d %s", st, body)
	}
	secret := regexp.MustCompile(`value="(sk_live_[^"]+)"`).FindStringSubmatch(body)
	if secret == nil {
		t.Fatalf("no secret on the created-site page:\n%s", body)
	}
	var sites struct {
		Sites []struct {
			SiteID        string   `json:"site_id"`
			Hostnames     []string `json:"hostnames"`
			ChallengeMode string   `json:"challenge_mode"`
		} `json:"sites"`
	}
	tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/sites", nil).Decode(t, &sites)
	if len(sites.Sites) != 1 || len(sites.Sites[0].Hostnames) != 2 || sites.Sites[0].ChallengeMode != "visual" {
		t.Fatalf("sites after the console created one: %+v", sites)
	}
	siteID := sites.Sites[0].SiteID
	if _, _, body := cc.do("GET", wsPage, nil); strings.Contains(body, secret[1]) {
		t.Fatal("the workspace page shows the site secret")
	}
	// The admin API's validation answers through the console.
	if st, _, body := cc.do("POST", wsPage+"/sites", url.Values{"csrf": {csrf}, "name": {"bad"}, "hostnames": {"Not a host!"}}); st != 422 || !strings.Contains(body, "invalid hostname") {
		t.Fatalf("invalid hostname: %d", st)
	}
	// Rotate with no grace: only the new secret works afterwards.
	st, _, body = cc.do("POST", wsPage+"/sites/"+siteID+"/rotate-secret", url.Values{"csrf": {csrf}, "grace_period_seconds": {"0"}})
	rotated := regexp.MustCompile(`value="(sk_live_[^"]+)"`).FindStringSubmatch(body)
	if st != 200 || rotated == nil || rotated[1] == secret[1] {
		t.Fatalf("rotate secret: %d", st)
	}

	// A policy in observe mode: checks with the rotated secret are counted
	// as would-have-throttled.
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/rate-limit-policies", map[string]any{"name": "otp", "target": map[string]any{"type": "workspace"},
		"action_pattern": "otp.send", "scope": "workspace", "mode": "observe",
		"bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}}, &pol)
	for i := 0; i < 3; i++ {
		if r := tn.Do("POST", "/v1/rate-limit/check", rotated[1], map[string]any{"action": "otp.send"}); r.Status != 200 {
			t.Fatalf("check with the console's rotated secret: %d %s", r.Status, r.Body)
		}
	}
	if r := tn.Do("POST", "/v1/rate-limit/check", secret[1], map[string]any{"action": "otp.send"}); r.Status == 200 || r.ErrorCode(t) != "invalid-input-secret" {
		t.Fatalf("check with the secret rotated away without grace: %d", r.Status)
	}
	polPage := wsPage + "/policies"
	st, _, body = cc.do("GET", polPage, nil)
	if st != 200 || !strings.Contains(body, `class="would-throttle">2<`) || !strings.Contains(body, "Promote otp to throttle") {
		t.Fatalf("policies page: %d\n%s", st, body)
	}
	// The admin PATCH's validation, its message on the page.
	st, _, body = cc.do("POST", polPage+"/"+pol.PolicyID, url.Values{"csrf": {csrf}, "enforce_percentage": {"150"}})
	if st != 422 || !strings.Contains(body, "enforce_percentage: must be 0 to 100") {
		t.Fatalf("invalid percentage: %d", st)
	}
	// One click: observe → throttle.
	st, h, _ := cc.do("POST", polPage+"/"+pol.PolicyID, url.Values{"csrf": {csrf}, "mode": {"throttle"}})
	if st != 303 || !strings.HasPrefix(h.Get("Location"), polPage+"?updated="+pol.PolicyID) {
		t.Fatalf("promote: %d %q", st, h.Get("Location"))
	}
	var got struct {
		Mode              string `json:"mode"`
		EnforcePercentage int    `json:"enforce_percentage"`
	}
	tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/rate-limit-policies/"+pol.PolicyID, nil).Decode(t, &got)
	if got.Mode != "throttle" || got.EnforcePercentage != 100 {
		t.Fatalf("policy after promotion: %+v", got)
	}
	cc.do("POST", polPage+"/"+pol.PolicyID, url.Values{"csrf": {csrf}, "mode": {"enforce"}, "enforce_percentage": {"30"}})
	tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/rate-limit-policies/"+pol.PolicyID, nil).Decode(t, &got)
	if got.Mode != "enforce" || got.EnforcePercentage != 30 {
		t.Fatalf("policy after rollout change: %+v", got)
	}

	// Overview and cluster pages show this node.
	_, _, body = cc.do("GET", "/console/", nil)
	if !strings.Contains(body, "<dt>Workspaces</dt><dd>2</dd>") || !strings.Contains(body, "<dt>Rate-limit policies</dt><dd>1</dd>") {
		t.Fatalf("overview counts:\n%s", body)
	}
	if st, _, body := cc.do("GET", "/console/cluster", nil); st != 200 || !strings.Contains(body, "Members") && !strings.Contains(body, "unavailable") {
		t.Fatalf("cluster page: %d", st)
	}

	// Without the session, the admin API is not opened by the console's
	// in-process path: a plain admin call without a token is still 401.
	if r := tn.Do("GET", "/admin/v1/workspaces", "", nil); r.Status != 401 {
		t.Fatalf("admin API without a token after console use: %d", r.Status)
	}
	st, _, _ = cc.do("POST", "/console/logout", url.Values{"csrf": {csrf}})
	if st != 303 {
		t.Fatalf("logout: %d", st)
	}
	if st, _, _ := cc.do("POST", polPage+"/"+pol.PolicyID, url.Values{"csrf": {csrf}, "mode": {"observe"}}); st != 403 {
		t.Fatalf("form after logout: %d, want 403", st)
	}
	tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/rate-limit-policies/"+pol.PolicyID, nil).Decode(t, &got)
	if got.Mode != "enforce" {
		t.Fatal("a form posted after logout changed the policy")
	}
}

// TestConsoleLoginModes: a production node without a console site keeps
// its console login closed (the admin API answers as ever); a dev node's
// login carries no widget.
func TestConsoleLoginModes(t *testing.T) {
	tn := nodetest.Start(t)
	cc := newConsoleClient(t, tn)
	_, _, page := cc.do("GET", "/console/login", nil)
	if !strings.Contains(page, "Console login is closed on this node") || strings.Contains(page, "service-widget") {
		t.Fatalf("production login page without a console site:\n%s", page)
	}
	if st, h, _ := cc.do("POST", "/console/login", url.Values{"csrf": {cc.csrf(page)}, "token": {tn.N.AdminToken()}}); st != 503 || strings.Contains(h.Get("Set-Cookie"), "trustd_console=") && !strings.Contains(h.Get("Set-Cookie"), "trustd_console=;") {
		t.Fatalf("login without a console site: %d", st)
	}
	if r := tn.Admin("GET", "/workspaces", nil); r.Status != 200 {
		t.Fatalf("admin API: %d", r.Status)
	}
	// The cluster's request totals (one member here), checked against the
	// contract like every answer of tn.admin.
	var cm struct {
		Members  int `json:"members"`
		Answered int `json:"answered"`
		Total    []struct {
			Module   string `json:"module"`
			Requests uint64 `json:"requests"`
		} `json:"total"`
	}
	tn.Admin("GET", "/cluster/metrics", nil).Decode(t, &cm)
	if cm.Members != 1 || cm.Answered != 1 || len(cm.Total) == 0 {
		t.Fatalf("cluster metrics of one node: %+v", cm)
	}
	if r := tn.Do("GET", "/admin/v1/cluster/metrics", "not-the-admin-token", nil); r.Status != 401 {
		t.Fatalf("cluster metrics with a wrong token: %d %s", r.Status, r.Body)
	}
	dev := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	dc := newConsoleClient(t, dev)
	if _, _, page := dc.do("GET", "/console/login", nil); strings.Contains(page, "service-widget") || strings.Contains(page, "/v1/widget/api.js") {
		t.Fatal("the dev login page carries the widget")
	}
	if st, _ := dc.login(dev.N.AdminToken()); st != 200 {
		t.Fatalf("dev login: %d", st)
	}
}
