package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/console"
	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/verify/pow"
)

// newConsoleClientFrom is a console client whose connections leave from
// the loopback address ip (any 127.0.0.0/8 address is local on Linux),
// so one test plays many client addresses against one node.
func newConsoleClientFrom(t *testing.T, tn *nodetest.Node, ip string) *consoleClient {
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &nethttp.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &consoleClient{t: t, base: tn.N.APIURL(), hc: &nethttp.Client{Jar: jar, Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

// mint runs the widget's protocol (challenge, proof of work, redeem) from
// cc's address, so the token is bound to it as a browser's would be.
func (cc *consoleClient) mint(siteKey, origin, action string) string {
	cc.t.Helper()
	post := func(path string, body, out any) {
		b, _ := json.Marshal(body)
		req, _ := nethttp.NewRequestWithContext(context.Background(), "POST", cc.base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		resp, err := cc.hc.Do(req)
		if err != nil {
			cc.t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			cc.t.Fatalf("%s: %d %s", path, resp.StatusCode, rb)
		}
		if err := json.Unmarshal(rb, out, json.RejectUnknownMembers(false)); err != nil {
			cc.t.Fatal(err)
		}
	}
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	post("/v1/challenge", map[string]any{"sitekey": siteKey, "action": action}, &ch)
	salt, err := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	if err != nil {
		cc.t.Fatal(err)
	}
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
	if !ok {
		cc.t.Fatal("no proof-of-work solution")
	}
	var rd struct {
		Success bool   `json:"success"`
		Token   string `json:"token"`
	}
	post("/v1/challenge/redeem", map[string]any{"challenge": ch.Challenge, "nonce": nonce,
		"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}}, &rd)
	if !rd.Success || rd.Token == "" {
		cc.t.Fatalf("redeem: %+v", rd)
	}
	return rd.Token
}

// postLogin GETs the login page and posts form with its token.
func (cc *consoleClient) postLogin(form url.Values) (int, nethttp.Header, string) {
	cc.t.Helper()
	_, _, page := cc.do("GET", "/console/login", nil)
	form.Set("csrf", cc.csrf(page))
	return cc.do("POST", "/console/login", form)
}

var userWidgetKey = regexp.MustCompile(`class="service-widget" id="widget-user" data-sitekey="([^"]+)" data-action="console-login"`)

// TestConsoleLoginCannotBeLockedOut is issue 24 item 4 on a real dev node:
// 60 wrong passwords for one user from 60 addresses used to spend the
// account's bucket, and the user's right password from a fresh address was
// then refused (429). Now the account's failures ask for trustd's own
// widget instead: without its token the answer is "Challenge required"
// (401, the widget on the page, not 429); with a token minted through the
// real challenge protocol from that address, bound to the console site
// and action, the user signs in, and the token is spent. A single address
// hammering the form is still refused 429 by its own limit.
func TestConsoleLoginCannotBeLockedOut(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "team"}, &ws)
	var user struct{}
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/console-users", map[string]any{"email": "ann@x.io", "role": "editor", "password": "ann's right password"}, &user)

	statuses := map[int]int{}
	for i := 0; i < 60; i++ {
		cc := newConsoleClientFrom(t, tn, fmt.Sprintf("127.0.1.%d", i+1))
		st, _, body := cc.postLogin(url.Values{"email": {"ann@x.io"}, "password": {fmt.Sprintf("wrong guess %d", i)}})
		statuses[st]++
		if st != 429 && (st != 401 || !strings.Contains(body, "Wrong email or password") && !strings.Contains(body, console.ChallengeRequired)) {
			t.Fatalf("wrong password %d from its own address: %d", i+1, st)
		}
	}
	if statuses[429] > 0 {
		t.Errorf("%d of 60 wrong passwords, each from its own address, were refused 429: the account's limit refuses", statuses[429])
	}

	fresh := newConsoleClientFrom(t, tn, "127.0.2.1")
	right := url.Values{"email": {"ann@x.io"}, "password": {"ann's right password"}}
	st, h, body := fresh.postLogin(right)
	if st == 429 {
		t.Fatalf("the right password from a fresh address after 60 failures elsewhere: 429 (Retry-After %s): the user is locked out", h.Get("Retry-After"))
	}
	if st != 401 || !strings.Contains(body, console.ChallengeRequired) || strings.Contains(h.Get("Set-Cookie"), "trustd_console=") && !strings.Contains(h.Get("Set-Cookie"), "trustd_console=;") {
		t.Fatalf("the right password without the widget's token: %d, want 401 %q\n%s", st, console.ChallengeRequired, body)
	}
	m := userWidgetKey.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `/v1/widget/api.js`) {
		t.Fatalf("the challenge page does not carry the widget:\n%s", body)
	}

	// A token minted for another action does not do.
	other := fresh.mint(m[1], "http://127.0.0.1", "signup")
	right.Set("service-response", other)
	if st, _, body := fresh.postLogin(right); st != 401 || !strings.Contains(body, "human check was missing") {
		t.Fatalf("a widget token for another action: %d", st)
	}
	tok := fresh.mint(m[1], "http://127.0.0.1", console.LoginAction)
	// Nor one bound to another address.
	elsewhere := newConsoleClientFrom(t, tn, "127.0.2.2")
	right.Set("service-response", tok)
	if st, _, _ := elsewhere.postLogin(right); st != 401 {
		t.Fatalf("a widget token minted by another address: %d", st)
	}
	tok = fresh.mint(m[1], "http://127.0.0.1", console.LoginAction)
	right.Set("service-response", tok)
	if st, _, body := fresh.postLogin(right); st != 303 {
		t.Fatalf("the right password with a valid widget token: %d\n%s", st, body)
	}
	if st, _, _ := fresh.do("GET", "/console/", nil); st != 200 {
		t.Fatalf("console after the challenged sign-in: %d", st)
	}
	// The token is single use.
	again := newConsoleClientFrom(t, tn, "127.0.2.1")
	if st, _, _ := again.postLogin(right); st != 401 {
		t.Fatalf("the same widget token a second time: %d", st)
	}

	// One address hammering the form: its own limit answers 429.
	hammer := newConsoleClientFrom(t, tn, "127.0.3.1")
	limited := false
	for i := 0; i < 30 && !limited; i++ {
		st, h, body := hammer.postLogin(url.Values{"email": {fmt.Sprintf("someone%d@x.io", i)}, "password": {"guess"}})
		switch st {
		case 429:
			limited = h.Get("Retry-After") != "" && strings.Contains(body, "Too many login attempts")
			if i < 20 {
				t.Fatalf("one address limited after %d attempts, its budget is 20", i)
			}
		case 401:
		default:
			t.Fatalf("attempt %d from one address: %d", i+1, st)
		}
	}
	if !limited {
		t.Fatal("one address's attempts were never limited")
	}
	t.Logf("60 wrong passwords from 60 addresses: %v (401 each: wrong password, then challenge required)", statuses)
}
