package console

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/console/login"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// TestLoginWithoutWidgetInDevMode: a dev node (RequireHuman off) shows no
// widget and logs in with the credential alone.
func TestLoginWithoutWidgetInDevMode(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	fb.humanSite = true
	b := newBrowser(t, c)
	page := b.do("GET", "/console/login", nil)
	if strings.Contains(page.body, "service-widget") || strings.Contains(page.body, "/v1/widget/api.js") || page.header["Referrer-Policy"] != "no-referrer" {
		t.Fatalf("dev login page carries the widget:\n%s", page.body)
	}
	if a, _ := b.login("good-token"); a.status != 303 {
		t.Fatalf("dev login: %d", a.status)
	}
	if len(fb.humanChecks) != 0 {
		t.Fatalf("dev login verified a widget token: %v", fb.humanChecks)
	}
}

// TestLoginNeedsTheWidgetInProduction: with RequireHuman the form carries
// trustd's widget for the console site, and a login is refused unless its
// token verifies (once), before any credential is checked.
func TestLoginNeedsTheWidgetInProduction(t *testing.T) {
	c, fb, _ := newTestConsole(Config{RequireHuman: true})
	fb.humanSite = true
	b := newBrowser(t, c)
	page := b.do("GET", "/console/login", nil)
	for _, want := range []string{`<script src="/v1/widget/api.js" async defer></script>`, `class="service-widget" id="widget-user" data-sitekey="site_console" data-action="console-login"`,
		`id="widget-admin" data-sitekey="site_console"`, `<meta name="referrer" content="same-origin">`} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("production login page lacks %q:\n%s", want, page.body)
		}
	}
	if page.header["Referrer-Policy"] != "same-origin" {
		t.Fatalf("login page referrer policy %q: the widget's challenge needs the page's Origin", page.header["Referrer-Policy"])
	}
	post := func(extra url.Values) answer {
		p := b.do("GET", "/console/login", nil)
		f := url.Values{"csrf": {csrfOf(t, p.body)}}
		for k, v := range extra {
			f[k] = v
		}
		return b.do("POST", "/console/login", f)
	}
	for _, tc := range []struct {
		name string
		form url.Values
		want int
		msg  string
	}{
		{"the right admin token without the widget's token", url.Values{"token": {"good-token"}}, 401, "human check was missing"},
		{"a widget token that does not verify", url.Values{"token": {"good-token"}, "service-response": {"forged"}}, 401, "human check was missing"},
		{"a password login without the widget's token", url.Values{"email": {"view@x.io"}, "password": {"viewer-password!"}}, 401, "human check was missing"},
		{"the verification cannot be made", url.Values{"token": {"good-token"}, "service-response": {"down"}}, 503, "could not be verified"},
	} {
		a := post(tc.form)
		if a.status != tc.want || !strings.Contains(a.body, tc.msg) || a.cookie[cookieSession] != nil {
			t.Fatalf("%s: %d %s", tc.name, a.status, a.body)
		}
	}
	if a := post(url.Values{"token": {"good-token"}, "service-response": {"human-ok"}}); a.status != 303 {
		t.Fatalf("admin token with a verified widget token: %d %s", a.status, a.body)
	}
	// The token was redeemed; the check saw the client's address.
	if last := fb.humanChecks[len(fb.humanChecks)-1]; last != "human-ok 192.0.2.10" {
		t.Fatalf("verification made with %q", last)
	}
	b = newBrowser(t, c)
	b.ip = "192.0.2.11"
	if a := post(url.Values{"token": {"good-token"}, "service-response": {"human-ok"}}); a.status != 401 {
		t.Fatalf("a used widget token logs in again: %d", a.status)
	}
}

// TestLoginClosedInProductionWithoutConsoleSite: no console site, no
// login — the page says how to configure one.
func TestLoginClosedInProductionWithoutConsoleSite(t *testing.T) {
	c, fb, _ := newTestConsole(Config{RequireHuman: true})
	b := newBrowser(t, c)
	page := b.do("GET", "/console/login", nil)
	if !strings.Contains(page.body, "Console login is closed on this node") || !strings.Contains(page.body, "--console-site") || strings.Contains(page.body, "service-widget") {
		t.Fatalf("closed login page:\n%s", page.body)
	}
	a := b.do("POST", "/console/login", url.Values{"csrf": {csrfOf(t, page.body)}, "token": {"good-token"}, "service-response": {"human-ok"}})
	if a.status != 503 || a.cookie[cookieSession] != nil || len(fb.humanChecks) != 0 {
		t.Fatalf("login without a console site: %d %v", a.status, fb.humanChecks)
	}
}

// TestWidgetFailuresCountAgainstTheLoginLimit: attempts without a valid
// widget token still take from the login budget.
func TestWidgetFailuresCountAgainstTheLoginLimit(t *testing.T) {
	c, fb, _ := newTestConsole(Config{RequireHuman: true, Login: login.Policy{Address: ratelimit.BucketConfig{Capacity: 2, RefillAmount: 1, RefillInterval: int64(12 * time.Second)}}})
	fb.humanSite = true
	b := newBrowser(t, c)
	st := 0
	for i := 0; i < 6 && st != 429; i++ {
		p := b.do("GET", "/console/login", nil)
		st = b.do("POST", "/console/login", url.Values{"csrf": {csrfOf(t, p.body)}, "token": {"good-token"}, "service-response": {"forged"}}).status
	}
	if st != 429 {
		t.Fatalf("widget failures never limited: last %d", st)
	}
}

// TestWrongPasswordsFromManyAddressesCannotLockAUserOut is issue 24 item
// 4: the per-account limit refused (429) even the right password once 60
// wrong ones had come from 60 addresses. Now the account's failures only
// make its next sign-in ask for trustd's widget: without a token the
// answer is "Challenge required" (401, the widget on the page, the email
// kept), with a verified one the right password signs in; a single
// address hammering is still 429.
func TestWrongPasswordsFromManyAddressesCannotLockAUserOut(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	fb.humanSite = true
	post := func(ip string, form url.Values) answer {
		b := newBrowser(t, c)
		b.ip = ip
		p := b.do("GET", "/console/login", nil)
		form.Set("csrf", csrfOf(t, p.body))
		return b.do("POST", "/console/login", form)
	}
	for i := 0; i < 60; i++ {
		a := post("198.51.100."+strconv.Itoa(i+1), url.Values{"email": {"edit@x.io"}, "password": {"guess " + strconv.Itoa(i)}})
		switch {
		case i < 5 && a.status == 401 && strings.Contains(a.body, "Wrong email or password"):
		case i >= 5 && a.status == 401 && strings.Contains(a.body, ChallengeRequired):
		default:
			t.Fatalf("wrong password %d from its own address: %d %s", i+1, a.status, a.body)
		}
	}
	if len(fb.humanChecks) != 0 {
		t.Fatalf("attempts without a widget token reached the verification: %v", fb.humanChecks)
	}
	right := url.Values{"email": {"edit@x.io"}, "password": {"editor-password!"}}
	a := post("203.0.113.9", right)
	if a.status != 401 || !strings.Contains(a.body, ChallengeRequired) || a.cookie[cookieSession] != nil {
		t.Fatalf("the right password without the widget after 60 failures: %d, want 401 %q\n%s", a.status, ChallengeRequired, a.body)
	}
	for _, want := range []string{`id="widget-user" data-sitekey="site_console" data-action="console-login"`, `value="edit@x.io"`, `<script src="/v1/widget/api.js" async defer></script>`} {
		if !strings.Contains(a.body, want) {
			t.Fatalf("the challenge page lacks %q:\n%s", want, a.body)
		}
	}
	if strings.Contains(a.body, `id="widget-admin"`) {
		t.Fatal("a dev node's admin-token form asks for the widget")
	}
	bad := url.Values{"email": {"edit@x.io"}, "password": {"editor-password!"}, "service-response": {"forged"}}
	if a := post("203.0.113.9", bad); a.status != 401 || !strings.Contains(a.body, "human check was missing") {
		t.Fatalf("a widget token that does not verify: %d %s", a.status, a.body)
	}
	right.Set("service-response", "human-ok")
	if a := post("203.0.113.9", right); a.status != 303 || a.cookie[cookieSession] == nil {
		t.Fatalf("the right password with a verified widget token: %d %s", a.status, a.body)
	}
	if last := fb.humanChecks[len(fb.humanChecks)-1]; last != "human-ok 203.0.113.9" {
		t.Fatalf("verified with %q: the token must be bound to the client's address", last)
	}
	// Another account is not affected.
	if a := post("203.0.113.10", url.Values{"email": {"view@x.io"}, "password": {"viewer-password!"}}); a.status != 303 {
		t.Fatalf("another account after the attack: %d", a.status)
	}
	// One address hammering is refused by its own limit (20 at once).
	st := 0
	for i := 0; i < 25 && st != 429; i++ {
		st = post("192.0.2.99", url.Values{"email": {"nobody" + strconv.Itoa(i) + "@x.io"}, "password": {"guess"}}).status
	}
	if st != 429 {
		t.Fatalf("one address's attempts were never limited: last %d", st)
	}
}
