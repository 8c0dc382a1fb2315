package console

import (
	"net/url"
	"strings"
	"testing"
)

// userLogin logs b in as a console user and returns the session's CSRF token.
func (b *browser) userLogin(email, password string) (answer, string) {
	b.t.Helper()
	page := b.do("GET", "/console/login", nil)
	a := b.do("POST", "/console/login", url.Values{"csrf": {csrfOf(b.t, page.body)}, "email": {email}, "password": {password}})
	if a.status != 303 {
		return a, ""
	}
	home := b.do("GET", "/console/", nil)
	if home.status != 200 {
		b.t.Fatalf("overview after login: %d %s", home.status, home.body)
	}
	return a, csrfOf(b.t, home.body)
}

func TestConsoleUserRoles(t *testing.T) {
	type step struct {
		method, path string
		form         url.Values
		want         int
	}
	site := url.Values{"name": {"n"}, "hostnames": {"b.example"}}
	pol := url.Values{"mode": {"throttle"}}
	newPol := url.Values{"name": {"p"}, "action_pattern": {"otp.send"}, "scope": {"subject"}, "mode": {"observe"}, "capacity": {"3"}, "refill_amount": {"1"}, "refill_interval_seconds": {"60"}}
	for _, tc := range []struct {
		name  string
		email string
		steps []step
	}{
		{"a viewer reads its workspace and changes nothing", "view@x.io", []step{
			{"GET", "/console/workspaces/w1", nil, 200},
			{"GET", "/console/workspaces/w1/policies", nil, 200},
			{"GET", "/console/workspaces/w1/approvals", nil, 200},
			{"GET", "/console/workspaces/w1/dependencies", nil, 200},
			{"GET", "/console/audit", nil, 200},
			{"GET", "/console/account", nil, 200},
			{"POST", "/console/workspaces/w1/sites", site, 403},
			{"POST", "/console/workspaces/w1/sites/s1/rotate-secret", url.Values{}, 403},
			{"POST", "/console/workspaces/w1/policies/p1", pol, 403},
			{"POST", "/console/workspaces/w1/policies", newPol, 403},
			{"POST", "/console/workspaces/w1/approvals/ap1/approve", url.Values{}, 403},
			{"POST", "/console/workspaces/w1/webhook-events/e1/redeliver", url.Values{}, 403},
		}},
		{"an editor changes configuration but decides no approval", "edit@x.io", []step{
			{"POST", "/console/workspaces/w1/sites", site, 201},
			{"POST", "/console/workspaces/w1/policies/p1", pol, 303},
			{"POST", "/console/workspaces/w1/policies", newPol, 303},
			{"POST", "/console/workspaces/w1/approvals/ap1/approve", url.Values{}, 403},
		}},
		{"an approver decides approvals but changes no configuration", "ok@x.io", []step{
			{"POST", "/console/workspaces/w1/approvals/ap1/approve", url.Values{}, 200},
			{"POST", "/console/workspaces/w1/approvals/ap1/deny", url.Values{}, 200},
			{"POST", "/console/workspaces/w1/sites", site, 403},
			{"POST", "/console/workspaces/w1/policies/p1", pol, 403},
		}},
		{"no user reaches another workspace or the admin's pages", "other@x.io", []step{
			{"GET", "/console/workspaces/w1", nil, 403},
			{"GET", "/console/workspaces/w1/policies", nil, 403},
			{"POST", "/console/workspaces/w1/sites", site, 403},
			{"GET", "/console/cluster", nil, 403},
			{"GET", "/console/workspaces/w2/users", nil, 403},
			{"POST", "/console/workspaces/w2/users", url.Values{"email": {"a@b.io"}, "role": {"viewer"}}, 403},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fb, _ := newTestConsole(Config{})
			b := newBrowser(t, c)
			u := fakeUsers[tc.email]
			a, csrf := b.userLogin(tc.email, u[2]+"-password!")
			if a.status != 303 {
				t.Fatalf("login: %d %s", a.status, a.body)
			}
			for _, s := range tc.steps {
				before := len(fb.writes())
				var form url.Values
				if s.form != nil {
					form = url.Values{"csrf": {csrf}}
					for k, v := range s.form {
						form[k] = v
					}
				}
				got := b.do(s.method, s.path, form)
				if got.status != s.want {
					t.Fatalf("%s %s: %d, want %d (%s)", s.method, s.path, got.status, s.want, got.body)
				}
				if s.want == 403 && len(fb.writes()) != before {
					t.Fatalf("%s %s was refused but reached the admin API: %v", s.method, s.path, fb.writes()[before:])
				}
			}
			fb.mu.Lock()
			defer fb.mu.Unlock()
			for _, a := range fb.actors {
				if a != "console:"+tc.email+" ("+u[2]+")" {
					t.Fatalf("admin call made as %q, want the user", a)
				}
			}
			if len(fb.audit) != 1 || !strings.Contains(fb.audit[0], "consoleLogin") {
				t.Fatalf("login not audited: %v", fb.audit)
			}
		})
	}
}

func TestApproverDecisionNamesTheUser(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.userLogin("ok@x.io", "approver-password!")
	if a := b.do("POST", "/console/workspaces/w1/approvals/ap1/approve", url.Values{"csrf": {csrf}}); a.status != 200 || !strings.Contains(a.body, "Request approved.") {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	w := fb.writes()
	if len(w) != 1 || !strings.Contains(w[0], `{"by":"ok@x.io"}`) {
		t.Fatalf("decision body: %v", w)
	}
}

func TestWrongPasswordAndUnknownUser(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	for _, cred := range [][2]string{{"view@x.io", "nope-nope-nope"}, {"nobody@x.io", "viewer-password!"}, {"view@x.io", ""}} {
		a, _ := b.userLogin(cred[0], cred[1])
		if a.status != 401 || a.cookie[cookieSession] != nil {
			t.Fatalf("%v: %d, want 401 without a session", cred, a.status)
		}
	}
	if c.sessions.len() != 0 {
		t.Fatal("a failed login created a session")
	}
}

func TestRoleChangeAndDeletionApplyAtTheNextRequest(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.userLogin("edit@x.io", "editor-password!")
	site := url.Values{"csrf": {csrf}, "name": {"n"}, "hostnames": {"b.example"}}
	if a := b.do("POST", "/console/workspaces/w1/sites", site); a.status != 201 {
		t.Fatalf("editor create: %d", a.status)
	}
	fb.mu.Lock()
	fb.role = map[string]string{"u2": "viewer"}
	fb.mu.Unlock()
	if a := b.do("POST", "/console/workspaces/w1/sites", site); a.status != 403 {
		t.Fatalf("after demotion to viewer: %d, want 403", a.status)
	}
	fb.mu.Lock()
	fb.gone = map[string]bool{"u2": true}
	fb.mu.Unlock()
	if a := b.do("GET", "/console/workspaces/w1", nil); a.status != 303 || a.header["Location"] != "/console/login" {
		t.Fatalf("deleted user's session: %d, want 303 to login", a.status)
	}
	if c.sessions.len() != 0 {
		t.Fatal("a deleted user's session is kept")
	}
}

func TestSignInLinkWorksOnceAndOnlyByPost(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	fb.links = map[string]bool{"tok-1": true}
	b := newBrowser(t, c)
	page := b.do("GET", "/console/link?t=tok-1", nil)
	if page.status != 200 || c.sessions.len() != 0 {
		t.Fatalf("GET of the link: %d, sessions %d (a GET must not log in)", page.status, c.sessions.len())
	}
	if !strings.Contains(page.body, `value="tok-1"`) {
		t.Fatal("link page does not carry the token into its form")
	}
	a := b.do("POST", "/console/link", url.Values{"csrf": {csrfOf(t, page.body)}, "link": {"tok-1"}})
	if a.status != 303 || a.cookie[cookieSession] == nil {
		t.Fatalf("POST of the link: %d", a.status)
	}
	b2 := newBrowser(t, c)
	page = b2.do("GET", "/console/link?t=tok-1", nil)
	if a := b2.do("POST", "/console/link", url.Values{"csrf": {csrfOf(t, page.body)}, "link": {"tok-1"}}); a.status != 401 {
		t.Fatalf("second use of the link: %d, want 401", a.status)
	}
	// Without the form token, nothing is consumed.
	fb.links = map[string]bool{"tok-2": true}
	if a := newBrowser(t, c).do("POST", "/console/link", url.Values{"link": {"tok-2"}}); a.status != 403 || !fb.links["tok-2"] {
		t.Fatalf("link POST without form token: %d", a.status)
	}
}

func TestListPageShowsLiveState(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	b.login("good-token")
	a := b.do("GET", "/console/workspaces/w1/dependencies", nil)
	if a.status != 200 || !strings.Contains(a.body, "<td>open</td>") || !strings.Contains(a.body, "<td>payments</td>") {
		t.Fatalf("dependencies page: %d %s", a.status, a.body)
	}
}

func TestUserChangesOwnPassword(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.userLogin("view@x.io", "viewer-password!")
	if a := b.do("GET", "/console/password", nil); a.status != 200 || !strings.Contains(a.body, `for="cur-pw"`) {
		t.Fatalf("password page: %d", a.status)
	}
	form := func(cur, next, confirm string) url.Values {
		return url.Values{"csrf": {csrf}, "current_password": {cur}, "new_password": {next}, "confirm_password": {confirm}}
	}
	for _, tc := range []struct {
		name      string
		form      url.Values
		status    int
		message   string
		reachesAP bool
	}{
		{"a wrong current password changes nothing", form("nope", "new password 123", "new password 123"), 422, "current password is wrong", false},
		{"a confirmation that differs changes nothing", form("viewer-password!", "new password 123", "new password 124"), 422, "differ", false},
		{"the admin API's rule is shown", form("viewer-password!", "short", "short"), 422, "12 to 256 bytes", true},
		{"the right current password changes it", form("viewer-password!", "new password 123", "new password 123"), 200, "Your password was changed.", true},
	} {
		before := len(fb.writes())
		a := b.do("POST", "/console/password", tc.form)
		if a.status != tc.status || !strings.Contains(a.body, tc.message) {
			t.Fatalf("%s: %d %s", tc.name, a.status, a.body)
		}
		if got := len(fb.writes()) > before; got != tc.reachesAP {
			t.Fatalf("%s: reached the admin API = %v", tc.name, got)
		}
	}
	w := fb.writes()
	if !strings.Contains(w[len(w)-1], "PATCH /workspaces/w1/console-users/u1") {
		t.Fatalf("last write: %s", w[len(w)-1])
	}
	// The admin has no console password.
	ab := newBrowser(t, c)
	_, acsrf := ab.login("good-token")
	if a := ab.do("POST", "/console/password", url.Values{"csrf": {acsrf}, "current_password": {"x"}, "new_password": {"y"}, "confirm_password": {"y"}}); a.status != 403 {
		t.Fatalf("admin password change: %d, want 403", a.status)
	}
}
