package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/html"

	"github.com/trustd/trustd/console/login"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// fakeBackend answers the admin operations the pages use with fixed data
// and records every call, so the tests can assert that a refused request
// never reached the admin API.
type fakeBackend struct {
	mu     sync.Mutex
	calls  []string
	actors []string
	audit  []string
	links  map[string]bool
	// deleted users' sessions must end; roles may change.
	gone map[string]bool
	role map[string]string
	// the login widget (HumanSite, VerifyHuman)
	humanSite   bool
	humanUsed   bool
	humanChecks []string
}

func (f *fakeBackend) CheckAdminToken(tok string) bool { return tok == "good-token" }

// fakeUsers: email → (id, workspace, role); every password is "<role>-password!".
var fakeUsers = map[string][3]string{
	"view@x.io":  {"u1", "w1", "viewer"},
	"edit@x.io":  {"u2", "w1", "editor"},
	"ok@x.io":    {"u3", "w1", "approver"},
	"other@x.io": {"u4", "w2", "editor"},
}

func (f *fakeBackend) principal(email string) Principal {
	u := fakeUsers[email]
	f.mu.Lock()
	defer f.mu.Unlock()
	role := u[2]
	if r, ok := f.role[u[0]]; ok {
		role = r
	}
	return Principal{UserID: u[0], Email: email, WorkspaceID: u[1], Role: role}
}

func (f *fakeBackend) UserLogin(email, password string) (Principal, bool) {
	u, ok := fakeUsers[email]
	if !ok || password != u[2]+"-password!" {
		return Principal{}, false
	}
	return f.principal(email), true
}

func (f *fakeBackend) LinkLogin(tok string) (Principal, bool) {
	f.mu.Lock()
	ok := f.links[tok]
	delete(f.links, tok)
	f.mu.Unlock()
	if !ok {
		return Principal{}, false
	}
	return f.principal("view@x.io"), true
}

func (f *fakeBackend) User(id string) (Principal, bool) {
	f.mu.Lock()
	g := f.gone[id]
	f.mu.Unlock()
	for e, u := range fakeUsers {
		if u[0] == id && !g {
			return f.principal(e), true
		}
	}
	return Principal{}, false
}

// TakeLogin: the cluster bucket is "unreachable" here, so the console's
// node-local fallback limiter is what the limiter tests exercise.
func (f *fakeBackend) TakeLogin(string, ratelimit.BucketConfig, int64) (bool, int64, time.Duration, error) {
	return false, 0, 0, errors.New("no cluster in this test")
}

// HumanSite and VerifyHuman: the console site "site_console" when
// humanSite is set; the widget token "human-ok" passes once, "down"
// cannot be verified.
func (f *fakeBackend) HumanSite() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "site_console", f.humanSite
}

func (f *fakeBackend) VerifyHuman(resp, ip string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.humanChecks = append(f.humanChecks, resp+" "+ip)
	if resp == "down" {
		return false, errors.New("owner unreachable")
	}
	if resp == "human-ok" && !f.humanUsed {
		f.humanUsed = true
		return true, nil
	}
	return false, nil
}

func (f *fakeBackend) Audit(actor, op, ws string) {
	f.mu.Lock()
	f.audit = append(f.audit, actor+" "+op+" "+ws)
	f.mu.Unlock()
}

func (f *fakeBackend) Admin(actor, method, path string, body []byte) (int, []byte) {
	f.mu.Lock()
	f.calls = append(f.calls, method+" "+path+" "+string(body))
	f.actors = append(f.actors, actor)
	f.mu.Unlock()
	ws := `{"workspace_id":"w1","name":"Shop <b>","created_at":"2026-11-25T10:00:00Z","settings":{"default_mode":"observe"}}`
	if method == "GET" && path == "/passwords/status" {
		return 200, []byte(`{"node":"n1","corpora":[{"mode":"sha1","corpus":{"source":"top list <x>","count_semantics":"rank","hashes":1000,"embedded":true}},{"mode":"ntlm","error":"no corpus"}]}`)
	}
	if method == "GET" && strings.HasPrefix(path, "/audit?") {
		return 200, []byte(`{"entries":[{"seq":1,"at":"2026-11-25T10:00:00Z","actor":"admin-token","via":"api","operation":"createSite","method":"POST","path":"/admin/v1/workspaces/w1/sites","workspace_id":"w1","status":201}]}`)
	}
	switch method + " " + path {
	case "GET /cluster/metrics":
		return 200, []byte(`{"at":"2026-11-25T10:00:00Z","members":3,"answered":2,"total":[{"module":"Rate limiting","requests":200,"client_errors":3,"throttled":40,"server_errors":2,"decisions":{"allow":150,"throttle":5,"approval_required":1}}],"nodes":[{"node_id":"n1","modules":[]},{"node_id":"n2","modules":[]},{"node_id":"n3","error":"peer refused","modules":[]}]}`)
	case "GET /cluster":
		return 200, []byte(`{"leader":"n1","nodes":[{"node_id":"n1","state":"ready","raft_role":"leader","self":true,"partitions":1024,"ownership_share":1,"health":"ok"}]}`)
	case "GET /workspaces":
		return 200, []byte(`{"workspaces":[` + ws + `]}`)
	case "GET /workspaces/w1":
		return 200, []byte(ws)
	case "GET /workspaces/w1/sites":
		return 200, []byte(`{"sites":[{"site_id":"s1","name":"web","site_key":"site_k","hostnames":["a.example"],"environment":"production","challenge_mode":"checkbox"}]}`)
	case "GET /workspaces/w1/mobile-apps":
		return 200, []byte(`{"mobile_apps":[]}`)
	case "GET /workspaces/w1/rate-limit-policies":
		return 200, []byte(`{"policies":[{"policy_id":"p1","name":"otp","target":{"type":"workspace"},"action_pattern":"otp.send","method":"*","scope":"subject","bucket":{"capacity":5,"refill_amount":1,"refill_interval_seconds":60},"mode":"observe","enforce_percentage":100,"revision":1}]}`)
	case "GET /workspaces/w1/rate-limit-policies/p1/stats?scope=cluster":
		return 200, []byte(`{"policy_id":"p1","node":"n1","since":"2026-11-25T10:00:00Z","matched":9,"allowed":0,"throttled":0,"rejected":0,"observed_would_throttle":4,"observed_would_reject":0}`)
	case "POST /workspaces/w1/sites":
		if strings.Contains(string(body), `"hostnames":[]`) {
			return 400, []byte(`{"success":false,"error":"invalid-field","message":"hostnames: at least one hostname is required"}`)
		}
		return 201, []byte(`{"site_id":"s2","name":"new","site_key":"site_new","secret":"sk_live_SECRET","hostnames":["b.example"],"environment":"production","challenge_mode":"checkbox"}`)
	case "PATCH /workspaces/w1/sites/s1":
		if strings.Contains(string(body), "bad..host") {
			return 400, []byte(`{"success":false,"error":"invalid-field","message":"invalid hostname bad..host"}`)
		}
		return 200, []byte(`{"site_id":"s1"}`)
	case "POST /workspaces/w1/sites/s1/rotate-secret":
		return 200, []byte(`{"site_id":"s1","name":"web","site_key":"site_k","secret":"sk_live_ROTATED","hostnames":["a.example"],"environment":"production","challenge_mode":"checkbox","previous_secret_valid_until":"2026-11-26T10:00:00Z"}`)
	case "PATCH /workspaces/w1/console-users/u1":
		if strings.Contains(string(body), `"password":"short"`) {
			return 400, []byte(`{"success":false,"error":"invalid-password","message":"trustd: password must be 12 to 256 bytes."}`)
		}
		return 200, []byte(`{}`)
	case "GET /workspaces/w1/agents":
		return 200, []byte(`{"agents":[{"agent_id":"a1","name":"billing-bot","status":"active"}]}`)
	case "GET /workspaces/w1/approvals":
		return 200, []byte(`{"approvals":[{"approval_id":"ap1","agent_id":"a1","action":"refund.issue","scope":"write","summary":"refund 10 EUR","status":"pending","created_at":"2026-11-25T10:00:00Z","expires_at":"2026-11-25T11:00:00Z"}]}`)
	case "POST /workspaces/w1/approvals/ap1/approve", "POST /workspaces/w1/approvals/ap1/deny":
		return 200, []byte(`{}`)
	case "GET /workspaces/w1/console-users":
		return 200, []byte(`{"console_users":[]}`)
	case "GET /workspaces/w1/dependencies":
		return 200, []byte(`{"dependencies":[{"dependency_id":"d1","name":"payments","failure_rate_threshold":0.5}]}`)
	case "GET /workspaces/w1/dependencies/d1":
		return 200, []byte(`{"dependency_id":"d1","name":"payments","failure_rate_threshold":0.5,"live":{"state":"open","calls":7,"failures":6,"in_flight":0}}`)
	case "GET /workspaces/w1/reviews?status=open", "GET /workspaces/w1/reviews":
		return 200, []byte(`{"cases":[{"case_id":"c1","kind":"identity_session","reference":"ses1","status":"open","reasons":["document_in_doubt"],"created_at":"2026-11-25T10:00:00Z","session":{"assurance_level":"standard","action":"signup","country":"FR","document_type":"passport","status":"review","attempts":[{}],"redacted":false}}]}`)
	case "POST /workspaces/w1/reviews/c1/resolve":
		if strings.Contains(string(body), `"decision":"bogus"`) {
			return 400, []byte(`{"success":false,"error":"invalid-field","message":"decision: verified or rejected"}`)
		}
		return 200, []byte(`{}`)
	case "GET /workspaces/w1/journeys":
		return 200, []byte(`{"journeys":[{"key":"pay.confirm","name":"Pay <i>","method":"human_verification","requested_assurance":"none","policy_version":2,"updated_at":"2026-11-25T10:00:00Z"}]}`)
	case "GET /workspaces/w1/journeys/pay.confirm":
		return 200, []byte(`{"key":"pay.confirm","name":"Pay <i>","method":"human_verification","requested_assurance":"none","consent":{"required":false,"version":""},"policy_version":2,"requirements":{"identity":false,"liveness":false,"authorization":true,"operation_binding":true},"session_lifetime_seconds":300,"escalation":{"enabled":false,"high_risk_method":"","medium_risk_method":"","review_on_high_risk":false},"created_at":"2026-11-25T10:00:00Z","updated_at":"2026-11-25T10:00:00Z"}`)
	case "PUT /workspaces/w1/journeys/pay.confirm", "PUT /workspaces/w1/journeys/new.one":
		if !json.Valid(body) {
			return 400, []byte(`{"success":false,"error":"malformed-json","message":"the body is not valid JSON"}`)
		}
		return 200, []byte(`{"key":"new.one"}`)
	case "DELETE /workspaces/w1/journeys/pay.confirm":
		return 204, nil
	case "GET /workspaces/w1/branding-profiles":
		return 200, []byte(`{"profiles":[{"profile_id":"b1","workspace_id":"w1","name":"Main","colors":{"primary":"#112233"},"css_variables":"--trustd-brand-primary: #112233;","logo":{"version":"v1","urls":{"64":"/v1/branding/b1/logo?v=v1&size=64","256":"/v1/branding/b1/logo?v=v1&size=256"}},"updated_at":"2026-11-25T10:00:00Z"}]}`)
	case "GET /workspaces/w1/branding-profiles/b1":
		return 200, []byte(`{"profile_id":"b1","workspace_id":"w1","name":"Main","colors":{"primary":"#112233"},"css_variables":"--trustd-brand-primary: #112233;","logo":{"version":"v1","urls":{"64":"/v1/branding/b1/logo?v=v1&size=64","256":"/v1/branding/b1/logo?v=v1&size=256"}},"updated_at":"2026-11-25T10:00:00Z"}`)
	case "POST /workspaces/w1/branding-profiles":
		if strings.Contains(string(body), `"primary":"red"`) {
			return 400, []byte(`{"success":false,"error":"invalid-field","message":"colors.primary: #rrggbb"}`)
		}
		return 201, []byte(`{"profile_id":"b2","name":"New"}`)
	case "PATCH /workspaces/w1/branding-profiles/b1":
		return 200, []byte(`{"profile_id":"b1"}`)
	case "PUT /workspaces/w1/branding-profiles/b1/logo":
		var in struct{ Image string }
		json.Unmarshal(body, &in)
		if in.Image != "UE5HZmFrZQ==" {
			return 400, []byte(`{"success":false,"error":"logo-format","message":"not a PNG, JPEG or WebP"}`)
		}
		return 200, []byte(`{"profile_id":"b1"}`)
	case "DELETE /workspaces/w1/branding-profiles/b1/logo":
		return 200, []byte(`{"profile_id":"b1"}`)
	case "GET /workspaces/w1/messaging":
		return 200, []byte(`{"workspace_id":"w1","policy":{"prefix_limit":7},"effective_policy":{"prefix_limit":7,"prefix_window_seconds":3600},"secrets_valid":1,"created_at":"2026-11-25T10:00:00Z","updated_at":"2026-11-25T10:00:00Z"}`)
	case "GET /workspaces/w2/messaging":
		return 404, []byte(`{"success":false,"error":"messaging-settings-not-found","message":"the workspace has no messaging settings"}`)
	case "GET /workspaces/w2":
		return 200, []byte(`{"workspace_id":"w2","name":"Other","created_at":"2026-11-25T10:00:00Z","settings":{"default_mode":"observe"}}`)
	case "GET /workspaces/w1/concurrency-constraints":
		return 200, []byte(`{"concurrency_constraints":[{"constraint_id":"k1","name":"exports","scope":"workspace","action_pattern":"export.*","capacity":2},{"constraint_id":"k2","name":"per-user","scope":"subject","action_pattern":"x","capacity":1},{"constraint_id":"k3","name":"down","scope":"workspace","action_pattern":"y","capacity":1}]}`)
	case "GET /workspaces/w1/concurrency-constraints/k1/holders":
		return 200, []byte(`{"constraint_id":"k1","name":"exports","scope":"workspace","action_pattern":"export.*","capacity":2,"enumerable":true,"in_use":2,"values":[{"value":"workspace","in_use":2,"fence":9}]}`)
	case "GET /workspaces/w1/concurrency-constraints/k2/holders":
		return 200, []byte(`{"constraint_id":"k2","name":"per-user","scope":"subject","action_pattern":"x","capacity":1,"enumerable":false,"in_use":0,"values":[]}`)
	case "GET /workspaces/w1/concurrency-constraints/k3/holders":
		return 503, []byte(`{"success":false,"error":"service-unavailable","message":"a slot's owner did not answer"}`)
	case "POST /workspaces/w1/rate-limit-policies":
		return 201, []byte(`{"policy_id":"p2","name":"new"}`)
	case "PATCH /workspaces/w1/rate-limit-policies/p1":
		if strings.Contains(string(body), "bogus") {
			return 400, []byte(`{"success":false,"error":"invalid-field","message":"mode: must be observe, throttle, enforce or workspace_default"}`)
		}
		return 200, []byte(`{}`)
	}
	return 404, []byte(`{"success":false,"error":"not-found","message":"no such thing"}`)
}

func (f *fakeBackend) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "GET ") {
			out = append(out, c)
		}
	}
	return out
}

// browser is a minimal client: a cookie jar and a client address.
type browser struct {
	t       *testing.T
	c       *Console
	ip      string
	cookies map[string]string
}

type answer struct {
	status int
	header map[string]string
	cookie map[string]*fasthttp.Cookie
	body   string
}

func newBrowser(t *testing.T, c *Console) *browser {
	return &browser{t: t, c: c, ip: "192.0.2.10", cookies: map[string]string{}}
}

func (b *browser) do(method, path string, form url.Values, headers ...string) answer {
	b.t.Helper()
	var rq fasthttp.Request
	rq.Header.SetMethod(method)
	rq.SetRequestURI(path)
	rq.Header.SetHost("console.test")
	for k, v := range b.cookies {
		rq.Header.SetCookie(k, v)
	}
	if form != nil {
		rq.Header.SetContentType("application/x-www-form-urlencoded")
		rq.SetBodyString(form.Encode())
	}
	for i := 0; i+1 < len(headers); i += 2 {
		rq.Header.Set(headers[i], headers[i+1])
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&rq, &net.TCPAddr{IP: net.ParseIP(b.ip), Port: 5000}, nil)
	b.c.Serve(&ctx)
	a := answer{status: ctx.Response.StatusCode(), header: map[string]string{}, cookie: map[string]*fasthttp.Cookie{}, body: string(ctx.Response.Body())}
	for _, k := range []string{"Content-Security-Policy", "X-Frame-Options", "Referrer-Policy", "Cache-Control", "Location", "Retry-After", "Content-Type", "X-Content-Type-Options"} {
		a.header[k] = string(ctx.Response.Header.Peek(k))
	}
	for _, name := range []string{cookieSession, cookieLogin} {
		ck := &fasthttp.Cookie{}
		ck.SetKey(name)
		if ctx.Response.Header.Cookie(ck) {
			a.cookie[name] = ck
			if len(ck.Value()) == 0 {
				delete(b.cookies, name)
			} else {
				b.cookies[name] = string(ck.Value())
			}
		}
	}
	return a
}

var hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := hiddenCSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in page:\n%s", body)
	}
	return m[1]
}

// login logs b in and returns the session's CSRF token.
func (b *browser) login(token string) (answer, string) {
	b.t.Helper()
	page := b.do("GET", "/console/login", nil)
	if page.status != 200 {
		b.t.Fatalf("login page: %d", page.status)
	}
	a := b.do("POST", "/console/login", url.Values{"csrf": {csrfOf(b.t, page.body)}, "token": {token}})
	if a.status != 303 {
		return a, ""
	}
	home := b.do("GET", "/console/", nil)
	if home.status != 200 {
		b.t.Fatalf("overview after login: %d %s", home.status, home.body)
	}
	return a, csrfOf(b.t, home.body)
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestConsole(cfg Config) (*Console, *fakeBackend, *testClock) {
	clk := &testClock{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	cfg.Clock = clk.Now
	cfg.NodeID = "n1"
	cfg.Version = "test"
	fb := &fakeBackend{}
	return New(cfg, fb), fb, clk
}

func TestLoginLogout(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	if a := b.do("GET", "/console/", nil); a.status != 303 || a.header["Location"] != "/console/login" {
		t.Fatalf("anonymous overview: %d %q, want a redirect to the login", a.status, a.header["Location"])
	}
	a, csrf := b.login("good-token")
	ck := a.cookie[cookieSession]
	if ck == nil || !ck.HTTPOnly() || ck.SameSite() != fasthttp.CookieSameSiteStrictMode || string(ck.Path()) != "/console/" || ck.Secure() {
		t.Fatalf("session cookie %v: want HttpOnly, SameSite=Strict, Path=/console/, not Secure over plain HTTP", ck)
	}
	if len(ck.Value()) < 43 {
		t.Fatalf("session id %q is too short to be 256 random bits", ck.Value())
	}
	if ck := a.cookie[cookieLogin]; ck == nil || len(ck.Value()) != 0 {
		t.Fatal("the login form token is not cleared after login")
	}
	old := b.cookies[cookieSession]
	if c.sessions.len() != 1 {
		t.Fatalf("%d sessions, want 1", c.sessions.len())
	}
	out := b.do("POST", "/console/logout", url.Values{"csrf": {csrf}})
	if out.status != 303 || out.header["Location"] != "/console/login" {
		t.Fatalf("logout: %d %q", out.status, out.header["Location"])
	}
	if ck := out.cookie[cookieSession]; ck == nil || len(ck.Value()) != 0 {
		t.Fatal("logout does not delete the session cookie")
	}
	if c.sessions.len() != 0 {
		t.Fatal("logout does not destroy the session on the server")
	}
	// The old cookie replayed after logout is worthless.
	b.cookies[cookieSession] = old
	if a := b.do("GET", "/console/", nil); a.status != 303 {
		t.Fatalf("replayed session after logout: %d, want 303 to login", a.status)
	}
}

func TestWrongTokenIsRefusedAndCreatesNoSession(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	for _, tok := range []string{"bad-token", "", "good-token-but-longer", strings.Repeat("x", 600)} {
		a, _ := b.login(tok)
		if a.status != 401 || !strings.Contains(a.body, "not the cluster") && !(tok == "" && strings.Contains(a.body, "Enter an email")) {
			t.Fatalf("token %.20q: %d, want 401 with a message", tok, a.status)
		}
		if a.cookie[cookieSession] != nil {
			t.Fatal("a failed login sets a session cookie")
		}
	}
	if c.sessions.len() != 0 {
		t.Fatal("failed logins created sessions")
	}
}

func TestSecureCookieWhenConfigured(t *testing.T) {
	c, _, _ := newTestConsole(Config{SecureCookies: true})
	b := newBrowser(t, c)
	page := b.do("GET", "/console/login", nil)
	if ck := page.cookie[cookieLogin]; ck == nil || !ck.Secure() || !ck.HTTPOnly() || ck.SameSite() != fasthttp.CookieSameSiteStrictMode {
		t.Fatalf("login form cookie %v: want Secure, HttpOnly, SameSite=Strict", ck)
	}
	a, _ := b.login("good-token")
	if ck := a.cookie[cookieSession]; ck == nil || !ck.Secure() {
		t.Fatalf("session cookie %v over TLS is not Secure", ck)
	}
}

func TestSessionFixationIsNotPromoted(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	b.cookies[cookieSession] = "attacker-chosen-session-id-0000000000000000000"
	b.login("good-token")
	if b.cookies[cookieSession] == "attacker-chosen-session-id-0000000000000000000" {
		t.Fatal("login kept the session id the browser came with")
	}
}

func TestSessionExpiry(t *testing.T) {
	c, _, clk := newTestConsole(Config{IdleTimeout: 10 * time.Minute, AbsoluteTimeout: time.Hour})
	b := newBrowser(t, c)
	b.login("good-token")
	// Idle expiry: untouched for the idle timeout, the session is gone.
	clk.advance(10 * time.Minute)
	a := b.do("GET", "/console/", nil)
	if a.status != 303 || a.header["Location"] != "/console/login" {
		t.Fatalf("idle session: %d, want 303 to login", a.status)
	}
	if ck := a.cookie[cookieSession]; ck == nil || len(ck.Value()) != 0 {
		t.Fatal("the expired session's cookie is not deleted")
	}
	if c.sessions.len() != 0 {
		t.Fatal("an expired session is kept")
	}
	// Absolute expiry: used every 9 minutes, it still ends after an hour.
	_, csrf := b.login("good-token")
	for i := 0; i < 6; i++ {
		clk.advance(9 * time.Minute)
		if a := b.do("GET", "/console/", nil); a.status != 200 {
			t.Fatalf("active session at %d min: %d", (i+1)*9, a.status)
		}
	}
	clk.advance(7 * time.Minute)
	if a := b.do("GET", "/console/", nil); a.status != 303 {
		t.Fatalf("session past its absolute lifetime: %d, want 303", a.status)
	}
	// A form posted with an expired session is refused, and changes nothing.
	a = b.do("POST", "/console/workspaces/w1/sites", url.Values{"csrf": {csrf}, "name": {"x"}, "hostnames": {"a.example"}})
	if a.status != 403 {
		t.Fatalf("POST with an expired session: %d, want 403", a.status)
	}
}

func TestCSRF(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.login("good-token")
	other := newBrowser(t, c)
	other.ip = "192.0.2.11"
	_, otherCSRF := other.login("good-token")
	if otherCSRF == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	site := url.Values{"name": {"x"}, "hostnames": {"a.example"}}
	cases := []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"missing", site, nil},
		{"wrong", withCSRF(site, "not-the-token"), nil},
		{"another session's", withCSRF(site, otherCSRF), nil},
		{"right token, cross-site origin", withCSRF(site, csrf), []string{"Origin", "https://evil.example"}},
		{"right token, cross-site fetch", withCSRF(site, csrf), []string{"Sec-Fetch-Site", "cross-site"}},
		{"right token, same-site fetch", withCSRF(site, csrf), []string{"Sec-Fetch-Site", "same-site", "Origin", "null"}},
	}
	for _, tc := range cases {
		for _, path := range []string{"/console/workspaces/w1/sites", "/console/workspaces/w1/sites/s1/rotate-secret", "/console/workspaces/w1/policies/p1", "/console/logout"} {
			if a := b.do("POST", path, tc.form, tc.header...); a.status != 403 {
				t.Errorf("%s CSRF token on %s: %d, want 403", tc.name, path, a.status)
			}
		}
	}
	if w := fb.writes(); len(w) != 0 {
		t.Fatalf("refused forms reached the admin API: %v", w)
	}
	if c.sessions.len() != 2 {
		t.Fatal("a refused logout destroyed a session")
	}
	// The right token from the same origin is accepted.
	if a := b.do("POST", "/console/workspaces/w1/sites", withCSRF(site, csrf), "Origin", "http://console.test"); a.status != 201 {
		t.Fatalf("valid form: %d %s", a.status, a.body)
	}
	// What Chromium sends for the console's own form under no-referrer.
	if a := b.do("POST", "/console/workspaces/w1/sites", withCSRF(site, csrf), "Origin", "null", "Sec-Fetch-Site", "same-origin"); a.status != 201 {
		t.Fatalf("valid form, Origin null: %d %s", a.status, a.body)
	}
	// The login form: its double-submit token is required too.
	anon := newBrowser(t, c)
	anon.ip = "192.0.2.12"
	if a := anon.do("POST", "/console/login", url.Values{"token": {"good-token"}}); a.status != 403 {
		t.Fatalf("login without the form token: %d, want 403", a.status)
	}
	anon.do("GET", "/console/login", nil)
	if a := anon.do("POST", "/console/login", url.Values{"token": {"good-token"}, "csrf": {"forged"}}); a.status != 403 {
		t.Fatalf("login with a forged form token: %d, want 403", a.status)
	}
}

func withCSRF(v url.Values, tok string) url.Values {
	out := url.Values{"csrf": {tok}}
	for k, vs := range v {
		out[k] = vs
	}
	return out
}

func TestLoginRateLimit(t *testing.T) {
	c, _, clk := newTestConsole(Config{Login: login.Policy{Address: ratelimit.BucketConfig{Capacity: 3, RefillAmount: 1, RefillInterval: int64(10 * time.Second)}}})
	b := newBrowser(t, c)
	for i := 0; i < 3; i++ {
		if a, _ := b.login("wrong"); a.status != 401 {
			t.Fatalf("attempt %d: %d, want 401", i+1, a.status)
		}
	}
	// Past the burst even the right token is refused: no oracle.
	a, _ := b.login("good-token")
	if a.status != 429 || a.header["Retry-After"] == "" || a.cookie[cookieSession] != nil {
		t.Fatalf("attempt past the burst: %d Retry-After %q, want 429 and no session", a.status, a.header["Retry-After"])
	}
	other := newBrowser(t, c)
	other.ip = "198.51.100.7"
	if a, _ := other.login("good-token"); a.status != 303 {
		t.Fatalf("another address is limited too: %d", a.status)
	}
	clk.advance(10 * time.Second)
	if a, _ := b.login("good-token"); a.status != 303 {
		t.Fatalf("after the interval: %d, want a login", a.status)
	}
}

func TestSessionCap(t *testing.T) {
	c, _, clk := newTestConsole(Config{MaxSessions: 2})
	first := newBrowser(t, c)
	first.login("good-token")
	var bs []*browser
	for i := 0; i < 2; i++ {
		clk.advance(time.Second)
		b := newBrowser(t, c)
		b.login("good-token")
		bs = append(bs, b)
	}
	if n := c.sessions.len(); n != 2 {
		t.Fatalf("%d sessions held, cap 2", n)
	}
	if a := first.do("GET", "/console/", nil); a.status != 303 {
		t.Fatal("the least recently used session was not the one evicted")
	}
	for _, b := range bs {
		if a := b.do("GET", "/console/", nil); a.status != 200 {
			t.Fatal("a recent session was evicted")
		}
	}
}

// pages are every page a logged-in browser can see.
var pages = []string{"/console/", "/console/workspaces", "/console/workspaces/", "/console/workspaces/w1", "/console/workspaces/w1/policies", "/console/cluster", "/console/no-such-page", "/console/workspaces/nope",
	"/console/audit", "/console/workspaces/w1/approvals", "/console/workspaces/w1/users", "/console/workspaces/w1/dependencies", "/console/workspaces/w1/api-protection", "/console/link?t=abc", "/console/account",
	"/console/workspaces/w1/reviews", "/console/workspaces/w1/reviews?all=1", "/console/workspaces/w1/journeys", "/console/workspaces/w1/journeys/pay.confirm",
	"/console/workspaces/w1/branding", "/console/workspaces/w1/branding/b1", "/console/workspaces/w1/messaging", "/console/workspaces/w2/messaging"}

func TestSecurityHeaders(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	check := func(path string, a answer, page bool) {
		t.Helper()
		want := map[string]string{"Content-Security-Policy": CSP, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
		if page {
			want["Cache-Control"] = "no-store"
		}
		for k, v := range want {
			if a.header[k] != v {
				t.Errorf("%s: %s = %q, want %q", path, k, a.header[k], v)
			}
		}
	}
	check("/console/login", b.do("GET", "/console/login", nil), true)
	check("anonymous /console/", b.do("GET", "/console/", nil), true)
	b.login("good-token")
	for _, p := range pages {
		check(p, b.do("GET", p, nil), true)
	}
	st := b.do("GET", "/console/static/console.css", nil)
	if st.status != 200 || !strings.HasPrefix(st.header["Content-Type"], "text/css") {
		t.Fatalf("stylesheet: %d %q", st.status, st.header["Content-Type"])
	}
	check("stylesheet", st, false)
	if a := b.do("GET", "/console/static/../templates/login.html", nil); a.status != 404 {
		t.Fatalf("path escape from static: %d", a.status)
	}
}

// TestNoInlineScriptOrStyle parses every page and refuses inline script,
// inline style, event-handler attributes and javascript: URLs: the CSP
// would block them, so they would be bugs.
func TestNoInlineScriptOrStyle(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	bodies := map[string]string{"/console/login": b.do("GET", "/console/login", nil).body}
	_, csrf := b.login("good-token")
	for _, p := range pages {
		bodies[p] = b.do("GET", p, nil).body
	}
	bodies["site created"] = b.do("POST", "/console/workspaces/w1/sites", url.Values{"csrf": {csrf}, "name": {"n"}, "hostnames": {"b.example"}}).body
	bodies["site refused"] = b.do("POST", "/console/workspaces/w1/sites", url.Values{"csrf": {csrf}, "name": {"n"}}).body
	bodies["secret rotated"] = b.do("POST", "/console/workspaces/w1/sites/s1/rotate-secret", url.Values{"csrf": {csrf}}).body
	bodies["policy refused"] = b.do("POST", "/console/workspaces/w1/policies/p1", url.Values{"csrf": {csrf}, "mode": {"bogus"}}).body
	for name, body := range bodies {
		z := html.NewTokenizer(strings.NewReader(body))
		inScript := false
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			tok := z.Token()
			switch tt {
			case html.StartTagToken, html.SelfClosingTagToken:
				if tok.Data == "style" {
					t.Errorf("%s: <style> element", name)
				}
				hasSrc := false
				for _, at := range tok.Attr {
					k := strings.ToLower(at.Key)
					switch {
					case k == "style":
						t.Errorf("%s: style attribute on <%s>", name, tok.Data)
					case strings.HasPrefix(k, "on"):
						t.Errorf("%s: event handler %s on <%s>", name, k, tok.Data)
					case (k == "href" || k == "src" || k == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(at.Val)), "javascript:"):
						t.Errorf("%s: javascript: URL", name)
					case k == "src":
						hasSrc = true
					}
				}
				if tok.Data == "script" {
					inScript = !hasSrc
				}
			case html.TextToken:
				if inScript && strings.TrimSpace(tok.Data) != "" {
					t.Errorf("%s: inline script", name)
				}
			case html.EndTagToken:
				inScript = false
			}
		}
	}
}

// TestFormsAreLabelled checks that every visible input, select and
// textarea of every page has a <label for> naming its id.
func TestFormsAreLabelled(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	bodies := []string{b.do("GET", "/console/login", nil).body}
	b.login("good-token")
	for _, p := range pages {
		bodies = append(bodies, b.do("GET", p, nil).body)
	}
	for _, body := range bodies {
		doc, err := html.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		labels := map[string]bool{}
		var controls []map[string]string
		h1 := 0
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				attrs := map[string]string{}
				for _, a := range n.Attr {
					attrs[a.Key] = a.Val
				}
				switch n.Data {
				case "label":
					labels[attrs["for"]] = true
				case "input", "select", "textarea":
					if attrs["type"] != "hidden" {
						attrs["tag"] = n.Data
						controls = append(controls, attrs)
					}
				case "h1":
					h1++
				}
			}
			for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
				walk(ch)
			}
		}
		walk(doc)
		for _, ctl := range controls {
			if ctl["id"] == "" || !labels[ctl["id"]] {
				t.Errorf("unlabelled <%s name=%q>", ctl["tag"], ctl["name"])
			}
		}
		if h1 != 1 {
			t.Errorf("a page has %d h1 headings, want 1", h1)
		}
	}
}

func TestPagesShowAdminData(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.login("good-token")
	ov := b.do("GET", "/console/", nil).body
	for _, want := range []string{"n1", "test", "leader", "<dt>Sites</dt><dd>1</dd>", "<dt>Rate-limit policies</dt><dd>1</dd>"} {
		if !strings.Contains(ov, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	ws := b.do("GET", "/console/workspaces", nil).body
	if !strings.Contains(ws, "Shop &lt;b&gt;") || strings.Contains(ws, "Shop <b>") {
		t.Error("workspace names are not HTML-escaped")
	}
	pol := b.do("GET", "/console/workspaces/w1/policies", nil).body
	if !strings.Contains(pol, `class="would-throttle">4<`) || !strings.Contains(pol, "Promote otp to throttle") || !strings.Contains(pol, "Promote otp to enforce") {
		t.Error("policies page lacks the observed counters or the promotion buttons")
	}
	// Created and rotated secrets are shown on their answer page only.
	created := b.do("POST", "/console/workspaces/w1/sites", url.Values{"csrf": {csrf}, "name": {"new"}, "hostnames": {"b.example, c.example"}, "environment": {"production"}, "challenge_mode": {"checkbox"}})
	if created.status != 201 || !strings.Contains(created.body, "sk_live_SECRET") {
		t.Fatalf("created site page: %d", created.status)
	}
	var sent map[string]any
	w := fb.writes()
	if err := json.Unmarshal([]byte(strings.SplitN(w[len(w)-1], " ", 3)[2]), &sent); err != nil {
		t.Fatal(err)
	}
	if hs, _ := sent["hostnames"].([]any); len(hs) != 2 || hs[1] != "c.example" {
		t.Fatalf("hostnames sent to the admin API: %v", sent["hostnames"])
	}
	if strings.Contains(b.do("GET", "/console/workspaces/w1", nil).body, "sk_live_") {
		t.Fatal("a secret is shown outside its answer page")
	}
	rot := b.do("POST", "/console/workspaces/w1/sites/s1/rotate-secret", url.Values{"csrf": {csrf}, "grace_period_seconds": {"60"}})
	if rot.status != 200 || !strings.Contains(rot.body, "sk_live_ROTATED") {
		t.Fatalf("rotated secret page: %d", rot.status)
	}
	// An admin API refusal is shown on the page with its message.
	bad := b.do("POST", "/console/workspaces/w1/sites", url.Values{"csrf": {csrf}, "name": {"kept name"}})
	if bad.status != 422 || !strings.Contains(bad.body, "at least one hostname is required") || !strings.Contains(bad.body, `value="kept name"`) {
		t.Fatalf("refused site: %d", bad.status)
	}
	pbad := b.do("POST", "/console/workspaces/w1/policies/p1", url.Values{"csrf": {csrf}, "mode": {"bogus"}})
	if pbad.status != 422 || !strings.Contains(pbad.body, "mode: must be observe") {
		t.Fatalf("refused policy change: %d", pbad.status)
	}
	if a := b.do("POST", "/console/workspaces/w1/policies/p1", url.Values{"csrf": {csrf}, "enforce_percentage": {"ten"}}); a.status != 422 {
		t.Fatalf("non-numeric percentage: %d", a.status)
	}
	ok := b.do("POST", "/console/workspaces/w1/policies/p1", url.Values{"csrf": {csrf}, "mode": {"throttle"}, "enforce_percentage": {"25"}})
	if ok.status != 303 || !strings.HasPrefix(ok.header["Location"], "/console/workspaces/w1/policies?updated=p1") {
		t.Fatalf("policy change: %d %q", ok.status, ok.header["Location"])
	}
	w = fb.writes()
	if last := w[len(w)-1]; !strings.HasPrefix(last, "PATCH /workspaces/w1/rate-limit-policies/p1 ") || !strings.Contains(last, `"enforce_percentage":25`) || !strings.Contains(last, `"mode":"throttle"`) {
		t.Fatalf("PATCH sent: %s", last)
	}
}

func TestIDsCannotRewriteTheAdminPath(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.login("good-token")
	before := len(fb.calls)
	// fasthttp decodes and normalises the path first (%2F and .. make
	// ordinary console paths); what is left must be a plain id.
	for _, p := range []string{"/console/workspaces/w1%3Fx=1", "/console/workspaces/w1%23x", "/console/workspaces/w1/policies/p1%20x", "/console/workspaces/a.b", "/console/workspaces/w1%00"} {
		if a := b.do("GET", p, nil); a.status != 404 && a.status != 405 {
			t.Errorf("GET %s: %d", p, a.status)
		}
		b.do("POST", p, url.Values{"csrf": {csrf}})
	}
	if len(fb.calls) != before {
		t.Fatalf("malformed ids reached the admin API: %v", fb.calls[before:])
	}
	if a := b.do("DELETE", "/console/workspaces/w1", nil); a.status != 405 {
		t.Fatalf("DELETE: %d, want 405", a.status)
	}
	if !bytes.Contains([]byte(b.do("GET", "/console", nil).header["Location"]), []byte("/console/")) {
		t.Fatal("/console does not redirect to /console/")
	}
}

// TestSiteEditForm: an editor changes a site's hostnames, challenge mode
// and branding profile through the admin API's PATCH; the API's refusal is
// shown; the form offers the workspace's profiles.
func TestSiteEditForm(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.login("good-token")
	page := b.do("GET", "/console/workspaces/w1", nil)
	for _, want := range []string{`action="/console/workspaces/w1/sites/s1"`, `<option value="b1">Main</option>`,
		`&lt;div class="service-widget" data-sitekey="site_k"&gt;&lt;/div&gt;`, `/v1/widget/api.js" async defer&gt;`,
		`No live preview here: the widget runs only on the site's hostnames, and this console's host (console.test)`, `<label for="brand-s1">Branding profile of web</label>`} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("workspace page lacks %q:\n%s", want, page.body)
		}
	}
	a := b.do("POST", "/console/workspaces/w1/sites/s1", url.Values{"csrf": {csrf}, "hostnames": {"a.example, b.example"}, "challenge_mode": {"visual"}, "branding_profile_id": {"b1"}})
	if a.status != 303 {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	w := fb.writes()
	if got := w[len(w)-1]; got != `PATCH /workspaces/w1/sites/s1 {"branding_profile_id":"b1","challenge_mode":"visual","hostnames":["a.example","b.example"]}` {
		t.Fatalf("PATCH sent: %s", got)
	}
	a = b.do("POST", "/console/workspaces/w1/sites/s1", url.Values{"csrf": {csrf}, "hostnames": {"bad..host"}})
	if a.status != 422 || !strings.Contains(a.body, "The site was not changed: invalid hostname bad..host") {
		t.Fatalf("refused edit: %d %s", a.status, a.body)
	}
}
