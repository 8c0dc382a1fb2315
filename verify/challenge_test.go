package verify

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify/pow"
)

func solve(t testing.TB, cv *ChallengeView) string {
	t.Helper()
	salt, err := base64.RawURLEncoding.DecodeString(cv.Pow.Salt)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		if s := strconv.Itoa(n); pow.Check(s, salt, cv.Pow.Iterations, cv.Pow.Difficulty) {
			return s
		}
	}
}

var human = RedeemSignals{Interaction: true, Visible: true, ElapsedMS: 4000, PointerMoves: 30, Keypresses: 5}

func TestChallengeRefusals(t *testing.T) {
	e := mustNewEnv(t)
	b := Browser{Host: testHost, Addr: testAddr}
	tests := []struct {
		name string
		b    Browser
		in   ChallengeInput
		want string
	}{
		{"an allowed origin gets a challenge", b, ChallengeInput{Sitekey: "site_pub", Action: "login"}, ""},
		{"an unknown site key is refused", b, ChallengeInput{Sitekey: "nope"}, "invalid-sitekey"},
		{"a sandbox site key is refused", b, ChallengeInput{Sitekey: "site_sandbox_pub"}, "invalid-sitekey"},
		{"a missing origin is refused", Browser{Addr: testAddr}, ChallengeInput{Sitekey: "site_pub"}, "invalid-origin"},
		{"another host is refused", Browser{Host: "evil-" + testHost, Addr: testAddr}, ChallengeInput{Sitekey: "site_pub"}, "invalid-origin"},
		{"an action with a space is refused", b, ChallengeInput{Sitekey: "site_pub", Action: "log in"}, "invalid-field"},
		{"cdata over 255 characters is refused", b, ChallengeInput{Sitekey: "site_pub", CData: strings.Repeat("x", 256)}, "invalid-field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.m.Challenge(e.cat, tc.b, &tc.in, "/v1/challenge/puzzle/")
			if got := code(err); got != tc.want {
				t.Fatalf("error %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestRedeemIssuesATokenOnceBoundToTheChallenge(t *testing.T) {
	e := mustNewEnv(t)
	b := Browser{Host: testHost, Addr: testAddr, Headers: true}
	cv, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub", Action: "login", CData: "order-7"}, "/p/")
	if err != nil {
		t.Fatal(err)
	}
	if cv.ChallengeType != "checkbox" || cv.ExpiresIn != ChallengeTTL || cv.Puzzle != nil {
		t.Fatalf("challenge %+v", cv)
	}
	nonce := solve(t, cv)
	in := &RedeemInput{Challenge: cv.Challenge, Nonce: nonce, Signals: human}
	if _, err := e.m.Redeem(e.cat, Browser{Host: "other.example", Addr: testAddr}, in); code(err) != "invalid-origin" {
		t.Fatalf("another origin: %v", err)
	}
	if _, err := e.m.Redeem(e.cat, Browser{Host: testHost, Addr: "198.51.100.1"}, in); code(err) != "invalid-challenge" {
		t.Fatalf("another address: %v", err)
	}
	rv, err := e.m.Redeem(e.cat, b, in)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := token.DecodeResponse(rv.Token, token.LivePrefix, func(string) *token.Key { return e.live }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.SiteID != "site-1" || tok.Action != "login" || tok.CData != "order-7" || tok.Hostname != testHost || !tok.HasIP ||
		tok.IPHash != IPHash(e.live, testAddr) || rv.ExpiresIn != 300 || tok.Expires-tok.Issued != 300 {
		t.Fatalf("token %+v, view %+v", tok, rv)
	}
	if _, err := e.m.Redeem(e.cat, b, in); code(err) != "challenge-used" {
		t.Fatalf("second redeem: %v", err)
	}
}

func TestRedeemRefusesBadWorkExpiryAndSignals(t *testing.T) {
	e := mustNewEnv(t)
	b := Browser{Host: testHost, Addr: testAddr}
	fresh := func() *ChallengeView {
		cv, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/p/")
		if err != nil {
			t.Fatal(err)
		}
		return cv
	}
	cv := fresh()
	salt, _ := base64.RawURLEncoding.DecodeString(cv.Pow.Salt)
	bad := 0
	for pow.Check(strconv.Itoa(bad), salt, cv.Pow.Iterations, cv.Pow.Difficulty) {
		bad++
	}
	tests := []struct {
		name string
		in   RedeemInput
		want string
	}{
		{"a nonce that does not solve the work is refused", RedeemInput{Challenge: cv.Challenge, Nonce: strconv.Itoa(bad)}, "invalid-solution"},
		{"a forged challenge is refused", RedeemInput{Challenge: cv.Challenge + "x", Nonce: "0"}, "invalid-challenge"},
		{"negative elapsed time is refused", RedeemInput{Challenge: cv.Challenge, Signals: RedeemSignals{ElapsedMS: -1}}, "invalid-field"},
		{"too many pointer moves are refused", RedeemInput{Challenge: cv.Challenge, Signals: RedeemSignals{PointerMoves: 100_001}}, "invalid-field"},
		{"a long answer is refused", RedeemInput{Challenge: cv.Challenge, Signals: RedeemSignals{Answer: strings.Repeat("A", 33)}}, "invalid-field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.m.Redeem(e.cat, b, &tc.in); code(err) != tc.want {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
		})
	}
	cv = fresh()
	nonce := solve(t, cv)
	e.advance(ChallengeTTL * time.Second)
	if _, err := e.m.Redeem(e.cat, b, &RedeemInput{Challenge: cv.Challenge, Nonce: nonce}); code(err) != "challenge-expired" {
		t.Fatalf("expired: %v", err)
	}
}

func TestVisualPuzzleAnswersAndImage(t *testing.T) {
	e := mustNewEnv(t)
	mode := catalog.ModeVisual
	e.apply(&catalog.UpdateSite{WorkspaceID: "ws1", ID: "site-1", Patch: catalog.SitePatch{ChallengeMode: &mode}})
	b := Browser{Host: testHost, Addr: testAddr}
	cv, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/v1/challenge/puzzle/")
	if err != nil {
		t.Fatal(err)
	}
	if cv.Puzzle == nil || !strings.HasPrefix(cv.Puzzle.ImageURL, "/v1/challenge/puzzle/pz1_") || !strings.HasSuffix(cv.Puzzle.ImageURL, ".png") {
		t.Fatalf("puzzle %+v", cv.Puzzle)
	}
	id := strings.TrimPrefix(cv.Puzzle.ImageURL, "/v1/challenge/puzzle/")
	img, err := e.m.PuzzleImage(e.cat, id)
	if err != nil || len(img) < 8 || string(img[1:4]) != "PNG" {
		t.Fatalf("image: %v", err)
	}
	if _, err := e.m.PuzzleImage(e.cat, strings.TrimSuffix(id, ".png")); code(err) != "not-found" {
		t.Fatalf("an id without .png: %v", err)
	}
	ch, _ := token.DecodeChallenge(cv.Challenge, func(string) *token.Key { return e.live })
	_, alt := PuzzleAnswers(e.live, ch.PuzzleSeed)
	rv, err := e.m.Redeem(e.cat, b, &RedeemInput{Challenge: cv.Challenge, Nonce: solve(t, cv), Signals: RedeemSignals{Answer: " " + alt + " "}})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := token.DecodeResponse(rv.Token, token.LivePrefix, func(string) *token.Key { return e.live }, nil)
	if tok.Variant != "alt_text" {
		t.Fatalf("variant %q", tok.Variant)
	}
	e.advance(ChallengeTTL * time.Second)
	if _, err := e.m.PuzzleImage(e.cat, id); code(err) != "not-found" {
		t.Fatalf("an expired puzzle: %v", err)
	}
}

func TestAnOutageNeverMakesChallengesCheaper(t *testing.T) {
	e := mustNewEnv(t)
	b := Browser{Host: testHost, Addr: testAddr}
	up, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/p/")
	if err != nil {
		t.Fatal(err)
	}
	down := New(downAsker{}, nil, e.m.now, Config{})
	dv, err := down.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/p/")
	if err != nil {
		t.Fatal(err)
	}
	if dv.Pow.Difficulty <= up.Pow.Difficulty {
		t.Fatalf("difficulty with velocity unreadable %d, readable %d", dv.Pow.Difficulty, up.Pow.Difficulty)
	}
	if _, err := down.Redeem(e.cat, b, &RedeemInput{Challenge: dv.Challenge, Nonce: solve(t, dv)}); code(err) != "unavailable" {
		t.Fatalf("redeem with the marker owner down: %v", err)
	}
}

// A client reads nothing of its verdict from its token's length: a
// scripted client's token is as long as a browser's (issue 24: 162
// against 161 characters, reasons and score being minimal varints).
func TestEveryVerdictGivesATokenOfOneLength(t *testing.T) {
	e := mustNewEnv(t)
	clients := []struct {
		name    string
		headers bool
		signals RedeemSignals
	}{
		{"a browser", true, human},
		{"a webdriver", true, RedeemSignals{Webdriver: true, Interaction: true, Visible: true, ElapsedMS: 4000}},
		{"a headless script", false, RedeemSignals{Webdriver: true, Headless: true}},
		{"a client without interaction", true, RedeemSignals{Visible: true, ElapsedMS: 50}},
		{"a hidden page", false, RedeemSignals{Interaction: true, ElapsedMS: 3_600_000}},
		{"no signals at all", false, RedeemSignals{}},
	}
	want, scores := 0, map[uint16]bool{}
	for _, c := range clients {
		b := Browser{Host: testHost, Addr: testAddr, Headers: c.headers}
		cv, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub", Action: "login"}, "/p/")
		if err != nil {
			t.Fatal(err)
		}
		rv, err := e.m.Redeem(e.cat, b, &RedeemInput{Challenge: cv.Challenge, Nonce: solve(t, cv), Signals: c.signals})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tok, err := token.DecodeResponse(rv.Token, token.LivePrefix, func(string) *token.Key { return e.live }, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		scores[tok.Score] = true
		if want == 0 {
			want = len(rv.Token)
		}
		if len(rv.Token) != want {
			t.Fatalf("%s (score %d, reasons %#x): a token of %d characters, the browser's has %d", c.name, tok.Score, tok.Reasons, len(rv.Token), want)
		}
	}
	if len(scores) < 3 {
		t.Fatalf("the clients should get different verdicts: %v", scores)
	}
}
