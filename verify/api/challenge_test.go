package api

import (
	"bytes"
	"encoding/base64"
	"github.com/go-json-experiment/json"
	"github.com/trustd/trustd/verify/score"
	"image/png"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
	"github.com/trustd/trustd/verify/pow"
)

func TestChallengeChecksOriginAndSiteKey(t *testing.T) {
	e := mustNewHVEnv(t)
	body := `{"sitekey":"site_pub","action":"login"}`
	tests := []struct {
		name   string
		origin string
		body   string
		status int
		code   string
		cors   bool
	}{
		{"an allowed origin gets a challenge and CORS", "https://shop.example.com", body, 200, "", true},
		{"the origin's port does not matter", "https://shop.example.com:8443", body, 200, "", true},
		{"a missing origin is refused", "", body, 403, "invalid-origin", false},
		{"a suffix of an allowed host is refused", "https://evil-shop.example.com", body, 403, "invalid-origin", false},
		{"an allowed host as a subdomain of another is refused", "https://shop.example.com.evil.net", body, 403, "invalid-origin", false},
		{"another site's origin is refused for this key", "https://other.example.org", body, 403, "invalid-origin", true},
		{"the null origin is refused", "null", body, 403, "invalid-origin", false},
		{"an unknown site key is refused", "https://shop.example.com", `{"sitekey":"nope"}`, 400, "invalid-sitekey", true},
		{"a sandbox site key is refused", "https://shop.example.com", `{"sitekey":"site_sandbox_pub"}`, 400, "invalid-sitekey", true},
		{"an action with spaces is refused", "https://shop.example.com", `{"sitekey":"site_pub","action":"log in"}`, 400, "invalid-field", true},
		{"cdata over 255 characters is refused", "https://shop.example.com", `{"sitekey":"site_pub","cdata":"` + strings.Repeat("x", 256) + `"}`, 400, "invalid-field", true},
		{"an unknown member is refused", "https://shop.example.com", `{"sitekey":"site_pub","extra":1}`, 400, "unknown-field", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.origin != "" {
				h["Origin"] = tc.origin
			}
			r := e.do(req{path: "/v1/challenge", ctype: "application/json", body: tc.body, headers: h})
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != "" && r.json(t)["error"] != tc.code {
				t.Fatalf("error %v, want %s", r.json(t)["error"], tc.code)
			}
			if got := r.header["Access-Control-Allow-Origin"]; (got != "") != tc.cors || (tc.cors && got != tc.origin) {
				t.Fatalf("Access-Control-Allow-Origin = %q (want present=%v)", got, tc.cors)
			}
		})
	}
}

func TestChallengeShape(t *testing.T) {
	e := mustNewHVEnv(t)
	cv := e.challenge("login")
	if !strings.HasPrefix(cv.Challenge, token.ChallengePrefix) || cv.ChallengeType != "checkbox" || cv.ExpiresIn != 120 {
		t.Fatalf("challenge %+v", cv)
	}
	if cv.Pow.Algorithm != "pbkdf2-sha256" || cv.Pow.Iterations != 1000 || cv.Pow.Difficulty < 1 || len(cv.Pow.Salt) != 22 || cv.Puzzle != nil {
		t.Fatalf("pow %+v", cv.Pow)
	}
}

func TestPreflight(t *testing.T) {
	e := mustNewHVEnv(t)
	r := e.do(req{method: "OPTIONS", path: "/v1/challenge", headers: map[string]string{"Origin": "https://shop.example.com",
		"Access-Control-Request-Method": "POST"}})
	if r.status != 204 || r.header["Access-Control-Allow-Origin"] != "https://shop.example.com" ||
		!strings.Contains(r.header["Access-Control-Allow-Methods"], "POST") || r.header["Access-Control-Allow-Headers"] != "Content-Type" {
		t.Fatalf("allowed preflight: %d %v", r.status, r.header)
	}
	r = e.do(req{method: "OPTIONS", path: "/v1/challenge/redeem", headers: map[string]string{"Origin": "https://attacker.example"}})
	if r.status != 403 || r.header["Access-Control-Allow-Origin"] != "" {
		t.Fatalf("foreign preflight: %d %v", r.status, r.header)
	}
	r = e.do(req{method: "GET", path: "/v1/challenge"})
	if r.status != 405 || r.header["Allow"] != "POST, OPTIONS" {
		t.Fatalf("GET /challenge: %d Allow=%q", r.status, r.header["Allow"])
	}
}

func TestRedeemRefusals(t *testing.T) {
	e := mustNewHVEnv(t)
	redeem := func(challenge, nonce string, origin string, ip []byte) resp {
		return e.do(req{path: "/v1/challenge/redeem", ctype: "application/json", ip: ip,
			body:    `{"challenge":"` + challenge + `","nonce":"` + nonce + `","signals":{"interaction":true,"visible":true,"elapsed_ms":2000,"pointer_moves":5}}`,
			headers: map[string]string{"Origin": origin}})
	}
	cv := e.challenge("login")
	n := solve(t, cv)
	salt, _ := base64.RawURLEncoding.DecodeString(cv.Pow.Salt)
	wrong := ""
	for i := 1; wrong == ""; i++ {
		if cand := strconv.Itoa(i); !pow.Check(cand, salt, cv.Pow.Iterations, cv.Pow.Difficulty) {
			wrong = cand
		}
	}
	if r := redeem(cv.Challenge, wrong, e.origin, nil); r.status != 400 || r.json(t)["error"] != "invalid-solution" {
		t.Fatalf("a wrong nonce: %d %s", r.status, r.body)
	}
	tampered := cv.Challenge[:len(cv.Challenge)-3] + "AAA"
	tests := []struct {
		name      string
		challenge string
		nonce     string
		origin    string
		ip        []byte
		status    int
		code      string
	}{
		{"a tampered challenge is invalid", tampered, n, e.origin, nil, 400, "invalid-challenge"},
		{"a non-canonical nonce is an invalid solution", cv.Challenge, "0" + n, e.origin, nil, 400, "invalid-solution"},
		{"another client address is refused", cv.Challenge, n, e.origin, []byte{198, 51, 100, 1}, 400, "invalid-challenge"},
		{"another allowed origin is refused", cv.Challenge, n, "https://other.example.org", nil, 403, "invalid-origin"},
		{"the right solution redeems once", cv.Challenge, n, e.origin, nil, 200, ""},
		{"a second redeem is refused", cv.Challenge, n, e.origin, nil, 409, "challenge-used"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := redeem(tc.challenge, tc.nonce, tc.origin, tc.ip)
			if r.status != tc.status || (tc.code != "" && r.json(t)["error"] != tc.code) {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	cv = e.challenge("login")
	n = solve(t, cv)
	e.advance(121 * time.Second)
	if r := redeem(cv.Challenge, n, e.origin, nil); r.status != 400 || r.json(t)["error"] != "challenge-expired" {
		t.Fatalf("expired challenge: %d %s", r.status, r.body)
	}
}

func TestVisualChallenge(t *testing.T) {
	e := mustNewHVEnv(t)
	mode := catalog.ModeVisual
	e.patchSite(catalog.SitePatch{ChallengeMode: &mode})
	type puzzle struct{ answer, altAnswer string }
	get := func() (verify.ChallengeView, *puzzle) {
		cv := e.challenge("signup")
		if cv.ChallengeType != "visual" || cv.Puzzle == nil || !strings.HasPrefix(cv.Puzzle.ImageURL, "/v1/challenge/puzzle/pz1_") ||
			!strings.HasSuffix(cv.Puzzle.ImageURL, ".png") || !strings.Contains(cv.Puzzle.AltTextChallenge, "digits") {
			t.Fatalf("visual challenge %+v", cv)
		}
		ch, err := token.DecodeChallenge(cv.Challenge, func(string) *token.Key { return e.liveKey })
		if err != nil {
			t.Fatal(err)
		}
		p := &puzzle{}
		p.answer, p.altAnswer = verify.PuzzleAnswers(e.liveKey, ch.PuzzleSeed)
		if strings.Contains(cv.Challenge+cv.Puzzle.ImageURL+cv.Puzzle.AltTextChallenge, p.answer) && len(p.answer) == 5 {
			// The answer must not be recoverable from what the browser gets;
			// a 5-character accidental substring of base64 is possible but
			// vanishingly rare, so treat it as a failure.
			t.Fatalf("the puzzle answer %s appears in the challenge", p.answer)
		}
		return cv, p
	}
	cv, p := get()
	img := e.do(req{method: "GET", path: cv.Puzzle.ImageURL})
	if img.status != 200 || img.header["Content-Type"] != "image/png" {
		t.Fatalf("puzzle image: %d %v", img.status, img.header)
	}
	if _, err := png.Decode(bytes.NewReader(img.body)); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if again := e.do(req{method: "GET", path: cv.Puzzle.ImageURL}); !bytes.Equal(again.body, img.body) {
		t.Fatal("the same puzzle rendered differently")
	}
	redeem := func(cv verify.ChallengeView, answer string) resp {
		s := humanSignals()
		s["answer"] = answer
		return e.widget("/v1/challenge/redeem", map[string]any{"challenge": cv.Challenge, "nonce": solve(t, cv), "signals": s})
	}
	if r := redeem(cv, strings.ToLower(p.answer)); r.status != 200 {
		t.Fatalf("the image answer (any case) was refused: %d %s", r.status, r.body)
	} else if tok := decodeTok(t, e, r); tok.Variant != "image" {
		t.Fatalf("variant %q, want image", tok.Variant)
	}
	imageScore := uint16(0)
	cv, p = get()
	if r := redeem(cv, p.answer); r.status == 200 {
		imageScore = decodeTok(t, e, r).Score
	}
	cv, p = get()
	if r := redeem(cv, p.altAnswer); r.status != 200 {
		t.Fatalf("the text-alternative answer was refused: %d %s", r.status, r.body)
	} else if tok := decodeTok(t, e, r); tok.Variant != "alt_text" || tok.Score > imageScore {
		t.Fatalf("variant %q score %d; want alt_text scoring no higher than the image (%d) on the same signals", tok.Variant, tok.Score, imageScore)
	}
	// The accessible alternative costs the proof of work too: a right
	// answer with a nonce that does not solve the challenge is refused.
	cv, p = get()
	salt, _ := base64.RawURLEncoding.DecodeString(cv.Pow.Salt)
	bad := 0
	for pow.Check(strconv.Itoa(bad), salt, cv.Pow.Iterations, cv.Pow.Difficulty) {
		bad++
	}
	alt := humanSignals()
	alt["answer"] = p.altAnswer
	if r := e.widget("/v1/challenge/redeem", map[string]any{"challenge": cv.Challenge, "nonce": strconv.Itoa(bad), "signals": alt}); r.status != 400 || r.json(t)["error"] != "invalid-solution" {
		t.Fatalf("the text alternative without proof of work: %d %s", r.status, r.body)
	}
	cv, _ = get()
	if r := redeem(cv, "ZZZZZ"); r.status != 400 || r.json(t)["error"] != "invalid-solution" {
		t.Fatalf("a wrong answer: %d %s", r.status, r.body)
	}
	if r := redeem(cv, p.answer); r.status != 409 {
		t.Fatalf("a wrong answer must burn the challenge; retry got %d %s", r.status, r.body)
	}
	e.advance(200 * time.Second)
	if r := e.do(req{method: "GET", path: cv.Puzzle.ImageURL}); r.status != 404 {
		t.Fatalf("an expired puzzle image: %d", r.status)
	}
}

func decodeTok(t *testing.T, e *hvEnv, r resp) token.Response {
	t.Helper()
	tok, err := token.DecodeResponse(r.json(t)["token"].(string), token.LivePrefix, func(string) *token.Key { return e.liveKey }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVelocityRaisesDifficulty(t *testing.T) {
	e := mustNewHVEnv(t)
	first := e.challenge("login").Pow.Difficulty
	var last int
	for i := 0; i < 40; i++ {
		last = e.challenge("login").Pow.Difficulty
	}
	if last < first+4 {
		t.Fatalf("difficulty after 41 challenges in a minute: %d (first %d); want at least +4 bits", last, first)
	}
	// Another client address is unaffected.
	r := e.do(req{path: "/v1/challenge", ctype: "application/json", body: `{"sitekey":"site_pub"}`,
		headers: map[string]string{"Origin": e.origin}, ip: []byte{192, 0, 2, 44}})
	if d := int(r.json(t)["pow"].(map[string]any)["difficulty"].(float64)); d != first {
		t.Fatalf("a fresh client got difficulty %d, want %d", d, first)
	}
}

func TestHumanVerificationRoutesAreFullyDescribed(t *testing.T) {
	e := mustNewHVEnv(t)
	n := 0
	for _, r := range slices.Concat(e.areas[0].Routes, e.areas[1].Routes) {
		switch r.Tag {
		case "Human verification", "Sandbox", "Edge", "Detection feedback":
		default:
			continue
		}
		n++
		if r.ID == "" || r.Summary == "" || (len(r.Errors) == 0 && r.Method != "GET") {
			t.Errorf("%s %s lacks an id, summary or errors", r.Method, r.Path)
		}
		if r.Method == "POST" && r.Body == nil {
			t.Errorf("%s %s has no body type", r.Method, r.Path)
		}
		if r.Result == nil && r.ContentType == "" && r.Status != 204 && r.Method != "HEAD" {
			t.Errorf("%s %s has no result type", r.Method, r.Path)
		}
	}
	if n != 16 {
		t.Fatalf("%d human-verification routes, want 16", n)
	}
}

func TestClientSignalsCannotRaiseAScoreAboveTheServersEvidence(t *testing.T) {
	e := mustNewHVEnv(t)
	redeem := func(headers map[string]string, wait time.Duration) (float64, []string) {
		t.Helper()
		cv := e.challenge("login")
		e.advance(wait)
		b, _ := json.Marshal(map[string]any{"challenge": cv.Challenge, "nonce": solve(t, cv), "signals": humanSignals()})
		r := e.do(req{path: "/v1/challenge/redeem", ctype: "application/json", body: string(b), headers: headers})
		if r.status != 200 {
			t.Fatalf("redeem: %d %s", r.status, r.body)
		}
		var rv verify.RedeemView
		_ = json.Unmarshal(r.body, &rv)
		tok, err := token.DecodeResponse(rv.Token, token.LivePrefix, func(string) *token.Key { return e.liveKey }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return float64(tok.Score) / 1000, score.Set(tok.Reasons).Codes()
	}
	if s, why := redeem(browserFetch(e.origin), 3*time.Second); s != 0.9 {
		t.Fatalf("a browser after a person's dwell: %v %v, want 0.9", s, why)
	}
	// The same claimed human signals from a plain HTTP client.
	if s, why := redeem(map[string]string{"Origin": e.origin, "User-Agent": "Go-http-client/1.1"}, 3*time.Second); s > 0.3 || !slices.Contains(why, "unverified-client") {
		t.Fatalf("a script claiming human signals: %v %v, want at most 0.3 with unverified-client", s, why)
	}
	// A headless browser announces itself in its client hints.
	headless := browserFetch(e.origin)
	headless["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/148.0.0.0 Safari/537.36"
	headless["Sec-Ch-Ua"] = `"Chromium";v="148", "HeadlessChrome";v="148"`
	if s, why := redeem(headless, 3*time.Second); s > 0.3 {
		t.Fatalf("a headless browser: %v %v, want at most 0.3", s, why)
	}
	// Redeemed at once: no person clicks a checkbox that fast.
	if s, why := redeem(browserFetch(e.origin), 100*time.Millisecond); s > 0.65 || !slices.Contains(why, "short-dwell") {
		t.Fatalf("an instant redeem: %v %v, want at most 0.65 with short-dwell", s, why)
	}
}
