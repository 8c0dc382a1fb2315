package api

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
)

var (
	tsFormat   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
	uuidFormat = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

func codesOf(m map[string]any) []string {
	out := []string{}
	for _, c := range m["error-codes"].([]any) {
		out = append(out, c.(string))
	}
	return out
}

// checkResult validates an answer against section 2.2 and the contract
// type (strictly: no member the contract does not describe).
func checkResult(t *testing.T, r resp) map[string]any {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var typed verify.SiteverifyResult
	if err := json.Unmarshal(r.body, &typed, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("answer does not match the contract type: %v\n%s", err, r.body)
	}
	m := r.json(t)
	for _, k := range []string{"success", "challenge_ts", "hostname", "score", "score_threshold", "score_enforced", "challenge_type", "action", "error-codes"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("member %s missing: %s", k, r.body)
		}
	}
	if m["success"] == true {
		if !uuidFormat.MatchString(m["assessment_id"].(string)) || len(codesOf(m)) != 0 {
			t.Fatalf("success without assessment_id or with codes: %s", r.body)
		}
	} else if _, ok := m["assessment_id"]; ok {
		t.Fatalf("assessment_id on failure: %s", r.body)
	}
	if ts, ok := m["challenge_ts"].(string); ok && !tsFormat.MatchString(ts) {
		t.Fatalf("challenge_ts %q is not YYYY-MM-DD HH:MM:SS", ts)
	}
	if !regexp.MustCompile(`"score":(0|1\.000|0\.\d{3}),`).Match(r.body) || !regexp.MustCompile(`"score_threshold":\d\.\d{3},`).Match(r.body) {
		t.Fatalf("score is not written with three decimals: %s", r.body)
	}
	return m
}

func TestTokenLifecycle(t *testing.T) {
	// Spec 3.1: issued → consumed (even when policy fails) → duplicate; issued → expired.
	e := mustNewHVEnv(t)
	tok := e.tokenFor("login", humanSignals())
	m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok, "action", "login", "remoteip", "203.0.113.7"))
	if m["success"] != true || m["hostname"] != testHost || m["action"] != "login" || m["challenge_type"] != "checkbox" ||
		m["score"].(float64) != 0.9 || m["score_threshold"].(float64) != 0.5 || m["score_enforced"] != false || m["cdata"] != "sess-1" {
		t.Fatalf("first use of a token: %v", m)
	}
	if m["challenge_ts"] != time.Unix(0, e.now.Load()).UTC().Format("2006-01-02 15:04:05") {
		t.Fatalf("challenge_ts %v is not the issue time", m["challenge_ts"])
	}
	dup := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok))
	if dup["success"] != false || !slices.Equal(codesOf(dup), []string{"timeout-or-duplicate"}) ||
		dup["hostname"] != testHost || dup["action"] != "login" || dup["challenge_ts"] != m["challenge_ts"] {
		t.Fatalf("second use must be a duplicate echoing the bound context: %v", dup)
	}
	tok = e.tokenFor("login", humanSignals())
	e.advance(301 * time.Second)
	exp := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok))
	if exp["success"] != false || !slices.Equal(codesOf(exp), []string{"timeout-or-duplicate"}) || exp["hostname"] != testHost {
		t.Fatalf("expired token: %v", exp)
	}
}

func TestSiteverifyTokenFailures(t *testing.T) {
	// Spec 7.2, token failures (HTTP 200): one row each, plus combinations.
	e := mustNewHVEnv(t)
	other := func(tr *token.Response) { tr.SiteID = "site-2" }
	enforced := func(score uint16) func(*token.Response) {
		return func(tr *token.Response) { tr.Mode, tr.Score = token.ModeScoreEnforced, score }
	}
	sbxKey := e.hv.Signer(e.store.Catalog(), catalog.KeySandbox)
	sandboxTok := func() string {
		tr := token.Response{ID: verify.RandomID(), SiteID: "site-1", Hostname: testHost, Mode: token.ModeCheckbox, Score: 900,
			Issued: 0, Expires: 1 << 40}
		return tr.Sign(sbxKey, token.SandboxPrefix)
	}()
	tests := []struct {
		name     string
		token    string
		fields   []string
		codes    []string
		known    bool
		action   any
		enforced bool
	}{
		{"garbage is invalid-input-response with null context", "not-a-token", nil, []string{"invalid-input-response"}, false, nil, false},
		{"a token of another site is invalid-input-response", e.mint(other), nil, []string{"invalid-input-response"}, false, nil, false},
		{"a sandbox token is invalid-input-response", sandboxTok, nil, []string{"invalid-input-response"}, false, nil, false},
		{"a wrong action is action-mismatch returning the bound action", e.mint(nil), []string{"action", "checkout"}, []string{"action-mismatch"}, true, "login", false},
		{"a different remoteip is remoteip-mismatch", e.mint(nil), []string{"remoteip", "198.51.100.9"}, []string{"remoteip-mismatch"}, true, "login", false},
		{"an unparsable remoteip is remoteip-mismatch", e.mint(nil), []string{"remoteip", "not-an-ip"}, []string{"remoteip-mismatch"}, true, "login", false},
		{"an empty remoteip is absent", e.mint(nil), []string{"remoteip", ""}, nil, true, "login", false},
		{"an IPv4-mapped remoteip matches its IPv4 binding", e.mint(nil), []string{"remoteip", "::ffff:203.0.113.7"}, nil, true, "login", false},
		{"a low score in score_enforced mode is low-score", e.mint(enforced(300)), nil, []string{"low-score"}, true, "login", true},
		{"a score at the threshold passes", e.mint(enforced(500)), nil, nil, true, "login", true},
		{"score_based mode never returns low-score", e.mint(func(tr *token.Response) { tr.Mode, tr.Score = token.ModeScoreBased, 100 }), nil, nil, true, "login", false},
		{"several failures are reported together", e.mint(enforced(100)), []string{"action", "x", "remoteip", "192.0.2.1"},
			[]string{"action-mismatch", "remoteip-mismatch", "low-score"}, true, "login", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := checkResult(t, e.verify("/v1/siteverify", append([]string{"secret", e.secret, "response", tc.token}, tc.fields...)...))
			want := tc.codes
			if want == nil {
				want = []string{}
			}
			if got := codesOf(m); !slices.Equal(got, want) {
				t.Fatalf("error-codes %v, want %v", got, want)
			}
			if (m["success"] == true) != (len(want) == 0) {
				t.Fatalf("success %v with codes %v", m["success"], want)
			}
			if !tc.known {
				if m["challenge_ts"] != nil || m["hostname"] != nil || m["challenge_type"] != nil || m["action"] != nil || m["score"].(float64) != 0 {
					t.Fatalf("unrecognised token must have null context and score 0: %v", m)
				}
				return
			}
			if m["action"] != tc.action || m["score_enforced"] != tc.enforced {
				t.Fatalf("action %v enforced %v, want %v %v", m["action"], m["score_enforced"], tc.action, tc.enforced)
			}
			// Every recognised token is consumed, whatever the policy said.
			again := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tc.token))
			if !slices.Equal(codesOf(again), []string{"timeout-or-duplicate"}) {
				t.Fatalf("the token was not consumed: %v", again)
			}
		})
	}
}

func TestSiteverifyRequestErrors(t *testing.T) {
	// Spec 7.2, request-level failures: {success:false,error}.
	e := mustNewHVEnv(t)
	tests := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"no secret", req{path: "/v1/siteverify", ctype: "application/x-www-form-urlencoded", body: "response=x"}, 400, "missing-input-secret"},
		{"an unknown secret", req{path: "/v1/siteverify", ctype: "application/x-www-form-urlencoded", body: "secret=nope&response=x"}, 400, "invalid-input-secret"},
		{"a sandbox secret at the production endpoint", req{path: "/v1/siteverify", ctype: "application/x-www-form-urlencoded", body: "secret=" + e.sbxSec + "&response=x"}, 400, "invalid-input-secret"},
		{"no response", req{path: "/v1/siteverify", ctype: "application/x-www-form-urlencoded", body: "secret=" + e.secret}, 400, "missing-input-response"},
		{"an empty JSON response", req{path: "/v1/siteverify", ctype: "application/json", body: `{"secret":"` + e.secret + `","response":""}`}, 400, "missing-input-response"},
		{"broken JSON", req{path: "/v1/siteverify", ctype: "application/json", body: `{"secret":`}, 400, "bad-request"},
		{"a field sent twice", req{path: "/v1/siteverify", ctype: "application/x-www-form-urlencoded", body: "secret=a&secret=b&response=x"}, 400, "bad-request"},
		{"an unsupported content type", req{path: "/v1/siteverify", ctype: "text/xml", body: "<x/>"}, 400, "bad-request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.r)
			if r.status != tc.status || string(r.body) != `{"success":false,"error":"`+tc.code+`"}` {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
}

func TestSiteverifyRateLimitAnd503(t *testing.T) {
	e := mustNewHVEnv(t)
	one := 1
	if _, err := e.store.Apply(t.Context(), &catalog.UpdateWorkspace{ID: "ws1", Patch: catalog.WorkspacePatch{IngressPerSecond: &one, IngressBurst: &one}}); err != nil {
		t.Fatal(err)
	}
	tok := e.mint(nil)
	var limited resp
	for i := 0; i < 5; i++ {
		if limited = e.verify("/v1/siteverify", "secret", e.secret, "response", tok); limited.status == 429 {
			break
		}
	}
	if limited.status != 429 || string(limited.body) != `{"success":false,"error":"rate-limit-exceeded"}` || limited.header["Retry-After"] == "" || limited.header["X-Ratelimit-Limit"] == "" {
		t.Fatalf("rate limit: %d %s %v", limited.status, limited.body, limited.header)
	}

	e2 := mustNewHVEnv(t)
	tok = e2.mint(nil)
	e2.sys.Stop() // the owner of every key is now unreachable
	if r := e2.verify("/v1/siteverify", "secret", e2.secret, "response", tok); r.status != 503 || string(r.body) != `{"success":false,"error":"service-unavailable"}` {
		t.Fatalf("unreachable owner: %d %s", r.status, r.body)
	}
	// Garbage is refused on the receiving node without reaching an actor,
	// so it is answered even while the owners are down.
	if r := e2.verify("/v1/siteverify", "secret", e2.secret, "response", token.LivePrefix+"AAAA"); r.status != 200 {
		t.Fatalf("an invalid token needed an actor: %d %s", r.status, r.body)
	}
}

func TestSiteverifyJSONAndIdempotency(t *testing.T) {
	e := mustNewHVEnv(t)
	tok := e.mint(nil)
	post := func(body string) map[string]any {
		return checkResult(t, e.do(req{path: "/v1/siteverify", ctype: "application/json; charset=utf-8", body: body}))
	}
	key := "5f0c1a52-7c1f-4a8e-9b3d-2f64b7c1d001"
	first := post(`{"secret":"` + e.secret + `","response":"` + tok + `","idempotency_key":"` + key + `","unknown":[1,{"a":null}]}`)
	if first["success"] != true {
		t.Fatalf("first: %v", first)
	}
	retry := post(`{"secret":"` + e.secret + `","response":"` + tok + `","idempotency_key":"` + key + `"}`)
	if retry["success"] != true || retry["assessment_id"] != first["assessment_id"] {
		t.Fatalf("a retry with the same idempotency key must return the first result: %v", retry)
	}
	other := post(`{"secret":"` + e.secret + `","response":"` + tok + `","idempotency_key":"another-key"}`)
	if !slices.Equal(codesOf(other), []string{"timeout-or-duplicate"}) {
		t.Fatalf("another key is a duplicate: %v", other)
	}
	// The key replays only the same request: another action or remote
	// address with the same key and token is a duplicate, not the first
	// answer.
	for _, changed := range []string{`,"action":"login"`, `,"remoteip":"203.0.113.9"`} {
		m := post(`{"secret":"` + e.secret + `","response":"` + tok + `","idempotency_key":"` + key + `"` + changed + `}`)
		if !slices.Equal(codesOf(m), []string{"timeout-or-duplicate"}) {
			t.Fatalf("the key with %s replayed the first answer: %v", changed, m)
		}
	}
	none := post(`{"secret":"` + e.secret + `","response":"` + tok + `","remoteip":null}`)
	if !slices.Equal(codesOf(none), []string{"timeout-or-duplicate"}) {
		t.Fatalf("no key is a duplicate: %v", none)
	}
	// A policy failure is replayed alike.
	tok = e.mint(nil)
	f1 := post(`{"secret":"` + e.secret + `","response":"` + tok + `","action":"pay","idempotency_key":"k2"}`)
	f2 := post(`{"secret":"` + e.secret + `","response":"` + tok + `","action":"pay","idempotency_key":"k2"}`)
	if !slices.Equal(codesOf(f1), []string{"action-mismatch"}) || !slices.Equal(codesOf(f2), codesOf(f1)) {
		t.Fatalf("replayed failure: %v then %v", f1, f2)
	}
	// Escaped JSON strings are decoded.
	tok = e.mint(nil)
	esc := strings.Replace(e.secret, "_", `\u005f`, 1)
	if m := post(`{"secret":"` + esc + `","response":"` + tok + `"}`); m["success"] != true {
		t.Fatalf("escaped secret: %v", m)
	}
}

func TestParallelReplayYieldsOneSuccess(t *testing.T) {
	e := mustNewHVEnv(t)
	tok := e.tokenFor("login", humanSignals())
	var wg sync.WaitGroup
	results := make([]resp, 200)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.verify("/v1/siteverify", "secret", e.secret, "response", tok, "action", "login")
		}()
	}
	wg.Wait()
	successes := 0
	for _, r := range results {
		m := checkResult(t, r)
		switch {
		case m["success"] == true:
			successes++
		case !slices.Equal(codesOf(m), []string{"timeout-or-duplicate"}):
			t.Fatalf("unexpected answer %s", r.body)
		}
	}
	if successes != 1 {
		t.Fatalf("%d successes out of 200 parallel verifications of one token, want exactly 1", successes)
	}
}

func TestScoreReflectsSignals(t *testing.T) {
	e := mustNewHVEnv(t)
	bot := map[string]any{"webdriver": true, "headless": true, "interaction": false, "elapsed_ms": 50, "pointer_moves": 0, "keypresses": 0, "visible": false}
	tok := e.tokenFor("login", bot)
	m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok))
	if m["success"] != true || m["score"].(float64) != 0 {
		t.Fatalf("checkbox mode reports but does not enforce a bot's score: %v", m)
	}
	mode := catalog.ModeScoreEnforced
	e.patchSite(catalog.SitePatch{ChallengeMode: &mode})
	tok = e.tokenFor("login", bot)
	m = checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok))
	if m["success"] != false || !slices.Equal(codesOf(m), []string{"low-score"}) || m["score_enforced"] != true || m["challenge_type"] != "score_enforced" {
		t.Fatalf("score_enforced refuses a bot: %v", m)
	}
}
