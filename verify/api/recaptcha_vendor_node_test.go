package api_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/verify/pow"
)

// browserLike are the request headers a real browser's fetch carries
// (fetch metadata, language; Firefox sends no client hints), which the
// server's own reading of a redeem requires before a score may be high.
var browserLike = []string{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
	"Sec-Fetch-Mode", "cors", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Site", "cross-site", "Accept-Language", "en-GB,en;q=0.8"}

// scoreToken runs the widget protocol from Origin http://127.0.0.1 (the
// token is bound to the test client's address, 127.0.0.1) with signals;
// a person's visit sends browserLike headers and takes a moment on the
// page (the server measures the dwell between challenge and redeem).
func scoreToken(t *testing.T, tn *nodetest.Node, siteKey string, signals map[string]any, person bool) string {
	t.Helper()
	origin := []string{"Origin", "http://127.0.0.1"}
	if person {
		origin = append(origin, browserLike...)
	}
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	r := tn.Do("POST", "/v1/challenge", "", map[string]string{"sitekey": siteKey, "action": "signup"}, origin...)
	if r.Status != 200 {
		t.Fatalf("challenge: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &ch)
	salt, _ := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<24)
	if !ok {
		t.Fatal("no proof-of-work solution")
	}
	var red struct {
		Token string `json:"token"`
	}
	if person {
		// A person's dwell on the page (score.MinHumanMS for score
		// modes), simulated: this is the visit's timing, not a wait for a
		// condition.
		time.Sleep(500 * time.Millisecond)
	}
	r = tn.Do("POST", "/v1/challenge/redeem", "", map[string]any{"challenge": ch.Challenge, "nonce": nonce, "signals": signals}, origin...)
	if r.Status != 200 {
		t.Fatalf("redeem: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &red)
	return red.Token
}

// A stock reCAPTCHA v3 backend behind a proxy: better-auth's captcha
// plugin (minScore 0.5) sends the address X-Forwarded-For names as
// remoteip, which is not the address the widget's token was issued to.
// A human still signs up; a bot is still refused by the library's own
// score check.
func TestRecaptchaV3BackendBehindAProxyWithBetterAuth(t *testing.T) {
	dir := "../verify/examples/recaptcha"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: run verify/examples/recaptcha/setup.sh (test.sh does)")
	}
	if _, err := os.Stat(dir + "/node_modules/better-auth/package.json"); err != nil {
		t.Skip("better-auth is not installed: run verify/examples/recaptcha/setup.sh (test.sh does)")
	}
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "v3"}, &ws)
	var site struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.ID+"/sites", map[string]any{"name": "v3", "hostnames": []string{"127.0.0.1"},
		"challenge_mode": "score_based", "challenge_difficulty": 1}, &site)
	human := map[string]any{"interaction": true, "elapsed_ms": 1500, "pointer_moves": 12, "visible": true}
	bot := map[string]any{"interaction": false, "elapsed_ms": 40, "pointer_moves": 0, "visible": true, "webdriver": true, "headless": true}

	signup := func(token, forwardedFor string) (int, string) {
		t.Helper()
		cmd := exec.Command("node", dir+"/signup.mjs")
		cmd.Env = append(os.Environ(), "VERIFY_URL="+tn.N.APIURL()+"/v1/recaptcha/api/siteverify", "SECRET="+site.Secret,
			"TOKEN="+token, "FORWARDED_FOR="+forwardedFor)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node signup.mjs: %v %s", err, b)
		}
		var o struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("node output %s: %v", b, err)
		}
		return o.Status, o.Body
	}
	// What the dialect tells the library for each (read with another
	// token of the same kind, as the library would).
	score := func(signals map[string]any, person bool) float64 {
		t.Helper()
		r := tn.Do("POST", "/v1/recaptcha/api/siteverify", "", "secret="+site.Secret+"&remoteip=198.51.100.99&response="+scoreToken(t, tn, site.SiteKey, signals, person),
			"Content-Type", "application/x-www-form-urlencoded")
		var v struct {
			Success bool    `json:"success"`
			Score   float64 `json:"score"`
		}
		r.Decode(t, &v)
		if !v.Success {
			t.Fatalf("dialect: %s", r.Body)
		}
		return v.Score
	}
	if s := score(human, true); s < 0.5 {
		t.Fatalf("a human behind a proxy scores %v in the reCAPTCHA dialect, below 0.5", s)
	}

	if st, body := signup(scoreToken(t, tn, site.SiteKey, human, true), "198.51.100.99"); st != 200 || !strings.Contains(body, "ada@example.com") {
		t.Fatalf("better-auth refused a human behind a proxy: %d %s", st, body)
	}
	if s := score(bot, false); s >= 0.5 {
		t.Fatalf("a bot scores %v; the negative control needs a score below 0.5", s)
	}
	if st, body := signup(scoreToken(t, tn, site.SiteKey, bot, false), "198.51.100.99"); st != 403 {
		t.Fatalf("better-auth let a bot sign up: %d %s", st, body)
	}
}
