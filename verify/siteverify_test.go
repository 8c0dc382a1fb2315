package verify

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/token"
)

func (e *env) siteverify(q Request) (Verdict, error) {
	e.t.Helper()
	return e.m.Siteverify(e.cat, e.site(), &q, make([]byte, 512))
}

func TestSiteverifyVerdicts(t *testing.T) {
	e := mustNewEnv(t)
	enforced := func(score uint16) func(*token.Response) {
		return func(tr *token.Response) { tr.Mode, tr.Score = token.ModeScoreEnforced, score }
	}
	sandboxTok := (&token.Response{ID: RandomID(), SiteID: "site-1", Mode: token.ModeCheckbox, Expires: 1 << 40}).Sign(e.sbx, token.SandboxPrefix)
	tests := []struct {
		name  string
		q     Request
		codes []string
		known bool
	}{
		{"a fresh token succeeds", Request{Response: []byte(e.mint(nil)), Action: []byte("login"), RemoteIP: []byte(testAddr)}, nil, true},
		{"garbage is invalid-input-response", Request{Response: []byte("nope")}, []string{"invalid-input-response"}, false},
		{"another site's token is invalid-input-response", Request{Response: []byte(e.mint(func(r *token.Response) { r.SiteID = "site-2" }))}, []string{"invalid-input-response"}, false},
		{"a sandbox token is invalid-input-response at the live verifier", Request{Response: []byte(sandboxTok)}, []string{"invalid-input-response"}, false},
		{"another action is action-mismatch", Request{Response: []byte(e.mint(nil)), Action: []byte("pay")}, []string{"action-mismatch"}, true},
		{"another address is remoteip-mismatch", Request{Response: []byte(e.mint(nil)), RemoteIP: []byte("198.51.100.9")}, []string{"remoteip-mismatch"}, true},
		{"an IPv4-mapped address matches", Request{Response: []byte(e.mint(nil)), RemoteIP: []byte("::ffff:" + testAddr)}, nil, true},
		{"another address is only a signal in the dialects", Request{Response: []byte(e.mint(nil)), RemoteIP: []byte("198.51.100.9"), RemoteIPSignal: true}, nil, true},
		{"a low enforced score is low-score", Request{Response: []byte(e.mint(enforced(499)))}, []string{"low-score"}, true},
		{"a score at the threshold passes", Request{Response: []byte(e.mint(enforced(500)))}, nil, true},
		{"an expired token is timeout-or-duplicate", Request{Response: []byte(e.mint(func(r *token.Response) { r.Expires = r.Issued }))}, []string{"timeout-or-duplicate"}, true},
		{"failures are reported together", Request{Response: []byte(e.mint(enforced(1))), Action: []byte("x"), RemoteIP: []byte("192.0.2.1")},
			[]string{"action-mismatch", "remoteip-mismatch", "low-score"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := e.siteverify(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.CodeNames(nil); !slices.Equal(got, tc.codes) || v.Known != tc.known || v.Success() != (tc.codes == nil) {
				t.Fatalf("codes %v known %v, want %v %v", got, v.Known, tc.codes, tc.known)
			}
			if v.Success() != (v.AssessmentID != "") {
				t.Fatalf("assessment id %q on success=%v", v.AssessmentID, v.Success())
			}
			var res SiteverifyResult
			if err := json.Unmarshal(AppendResult(nil, &v), &res, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("the answer is not the contract's type: %v", err)
			}
		})
	}
}

func TestSiteverifyConsumesOnceAndReplaysWithAKey(t *testing.T) {
	e := mustNewEnv(t)
	tok := []byte(e.mint(nil))
	first, err := e.siteverify(Request{Response: tok, IdempotencyKey: []byte("k1")})
	if err != nil || !first.Success() {
		t.Fatalf("first %+v %v", first, err)
	}
	retry, _ := e.siteverify(Request{Response: tok, IdempotencyKey: []byte("k1")})
	if !retry.Success() || retry.AssessmentID != first.AssessmentID {
		t.Fatalf("a retry with the key must get the first answer: %+v", retry)
	}
	for _, q := range []Request{{Response: tok}, {Response: tok, IdempotencyKey: []byte("k2")}, {Response: tok, IdempotencyKey: []byte("k1"), Action: []byte("login")}} {
		if v, _ := e.siteverify(q); v.Codes != CodeTimeoutOrDuplicate {
			t.Fatalf("%+v got %v, want a duplicate", q, v.CodeNames(nil))
		}
	}
	get, err := e.m.getVerification(first.AssessmentID)
	if err != nil || !get.Found || get.A.SiteID != "site-1" {
		t.Fatalf("the verification was not kept: %+v %v", get, err)
	}
	down := New(downAsker{}, nil, e.m.now, Config{})
	if _, err := down.Siteverify(e.cat, e.site(), &Request{Response: []byte(e.mint(nil))}, make([]byte, 512)); code(err) != "unavailable" {
		t.Fatalf("an unreachable owner: %v", err)
	}
	if v, err := down.Siteverify(e.cat, e.site(), &Request{Response: []byte("garbage")}, make([]byte, 512)); err != nil || v.Codes != CodeInvalidInput {
		t.Fatalf("garbage must be refused without an actor: %+v %v", v, err)
	}
}

func TestAnswerShapes(t *testing.T) {
	e := mustNewEnv(t)
	v, _ := e.siteverify(Request{Response: []byte(e.mint(func(r *token.Response) {
		r.CData, r.Mode, r.Score = `a"<b>`, token.ModeScoreBased, 700
	})), RemoteIP: []byte("198.51.100.1"), RemoteIPSignal: true})
	native := string(AppendResult(nil, &v))
	if !regexp.MustCompile(`"score":0\.700,"score_threshold":0\.500,`).MatchString(native) || !strings.Contains(native, `"cdata":"a\"\u003cb\u003e"`) ||
		!regexp.MustCompile(`"challenge_ts":"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"`).MatchString(native) {
		t.Fatalf("native answer %s", native)
	}
	var ts TurnstileResult
	if err := json.Unmarshal(AppendDialect(nil, Turnstile, &v), &ts, json.RejectUnknownMembers(true)); err != nil || !ts.Success || ts.CData != `a"<b>` {
		t.Fatalf("turnstile %+v %v", ts, err)
	}
	if _, err := time.Parse(time.RFC3339, ts.ChallengeTS); err != nil {
		t.Fatal(err)
	}
	var rc RecaptchaResult
	if err := json.Unmarshal(AppendDialect(nil, Recaptcha, &v), &rc, json.RejectUnknownMembers(true)); err != nil || rc.Score == nil || *rc.Score != 0.6 || rc.ErrorCodes != nil {
		t.Fatalf("recaptcha with another address lowers 0.7 to 0.6: %+v %v", rc, err)
	}
	if got := string(AppendDialectError(nil, "invalid-input-secret")); got != `{"success":false,"error-codes":["invalid-input-secret"]}` {
		t.Fatal(got)
	}
}

func TestSandboxScenariosThroughTheVerifier(t *testing.T) {
	e := mustNewEnv(t)
	sbx := e.cat.Sites["site-sbx"]
	for _, sc := range Scenarios().Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			iv, err := e.m.SandboxIssue(e.cat, &SandboxIssueInput{SiteKey: "site_sandbox_pub", Scenario: sc.Name, Action: "login"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := e.m.Siteverify(e.cat, sbx, &Request{Response: []byte(iv.Token), Action: []byte("login"), RemoteIP: []byte("198.51.100.1"), Sandbox: true}, make([]byte, 512))
			if sc.HTTPStatus == 503 {
				if err != ErrSandboxServiceError {
					t.Fatalf("service_error: %v", err)
				}
				return
			}
			if err != nil || v.Success() != sc.Success || !slices.Equal(v.CodeNames([]string{}), sc.ErrorCodes) {
				t.Fatalf("got %v %v (%v), want %v %v", v.Success(), v.CodeNames(nil), err, sc.Success, sc.ErrorCodes)
			}
		})
	}
	for _, in := range []SandboxIssueInput{{SiteKey: "site_pub", Scenario: "success"}, {SiteKey: "site_sandbox_pub", Scenario: "nope"},
		{SiteKey: "site_sandbox_pub", Scenario: "success", Hostname: "Not A Host"}} {
		if _, err := e.m.SandboxIssue(e.cat, &in); err == nil {
			t.Fatalf("%+v was accepted", in)
		}
	}
}

func TestTestSecretsOnlyInDevOrSandbox(t *testing.T) {
	e := mustNewEnv(t)
	pass, fail := []byte("1x0000000000000000000000000000000AA"), []byte("2x0000000000000000000000000000000AA")
	if e.m.IsTestSecret(pass, false) || !e.m.IsTestSecret(pass, true) || e.m.IsTestSecret([]byte(testSecret), true) {
		t.Fatal("a production module honours test secrets only at the sandbox")
	}
	dev := New(downAsker{}, nil, e.m.now, Config{Dev: true})
	if !dev.IsTestSecret(fail, false) {
		t.Fatal("a dev module honours test secrets everywhere")
	}
	if r := dev.TestSecretResult(pass, "login"); !r.Success || *r.Action != "login" || r.Score != 0.9 {
		t.Fatalf("%+v", r)
	}
	if r := dev.TestSecretTurnstile(fail, ""); r.Success || !slices.Equal(r.ErrorCodes, []string{"invalid-input-response"}) {
		t.Fatalf("%+v", r)
	}
}

// lostAnswer runs every ask on the owner and then loses the answer, as a
// sender whose forwarded ask timed out while the owner completed it.
type lostAnswer struct{ actors.PartitionAsker }

func (l lostAnswer) Ask(key string, op actors.Op) error {
	if err := l.PartitionAsker.Ask(key, op); err != nil {
		return err
	}
	return cluster.ErrUnavailable
}

func TestAnIdempotentRetryGetsTheFirstAnswerAfterALostOneAndPastTheTokensLifetime(t *testing.T) {
	e := mustNewEnv(t)
	tok := []byte(e.mint(nil))
	lost := New(lostAnswer{e.m.ask}, e, e.m.now, Config{})
	q := Request{Response: tok, Action: []byte("login"), IdempotencyKey: []byte("retry-1")}
	if _, err := lost.Siteverify(e.cat, e.site(), &q, make([]byte, 512)); code(err) != "unavailable" {
		t.Fatalf("the attempt whose answer was lost: %v", err)
	}
	first, err := e.siteverify(q)
	if err != nil || !first.Success() || first.AssessmentID == "" {
		t.Fatalf("the retry after a lost answer: %v %+v", err, first.CodeNames(nil))
	}
	e.advance(301 * time.Second) // past the token's lifetime
	for name, want := range map[string]bool{"retry-1": true, "another": false, "": false} {
		q := Request{Response: tok, Action: []byte("login"), IdempotencyKey: []byte(name)}
		v, err := e.siteverify(q)
		if err != nil || v.Success() != want || (want && v.AssessmentID != first.AssessmentID) || (!want && v.Codes != CodeTimeoutOrDuplicate) {
			t.Fatalf("key %q past the lifetime: %v success=%v codes %v id %q", name, err, v.Success(), v.CodeNames(nil), v.AssessmentID)
		}
	}
	e.advance(6 * time.Minute) // past the replay grace too
	if v, _ := e.siteverify(q); v.Codes != CodeTimeoutOrDuplicate {
		t.Fatalf("past the replay grace: %v", v.CodeNames(nil))
	}
	// An unused token is not consumed by a keyed attempt past its lifetime.
	old := []byte(e.mint(func(r *token.Response) { r.Expires = r.Issued }))
	if v, _ := e.siteverify(Request{Response: old, IdempotencyKey: []byte("k")}); v.Codes != CodeTimeoutOrDuplicate {
		t.Fatalf("an expired unused token: %v", v.CodeNames(nil))
	}
}

func TestRecaptchaScoreTreatsRemoteIPAsASignalOnly(t *testing.T) {
	tests := []struct {
		name       string
		milli      uint16
		ipMismatch bool
		want       float64
	}{
		{"the same address reports the score as is", 900, false, 0.9},
		{"a clear human from a proxy's address loses a little", 900, true, 0.8},
		{"a perfect score from a proxy's address stays high", 1000, true, 0.9},
		{"a human just above the common threshold stays at it", 550, true, 0.5},
		{"a human exactly at the threshold stays at it", 500, true, 0.5},
		{"a score one thousandth above the threshold stays at the threshold", 501, true, 0.5},
		{"a score below the threshold is left as it is", 400, true, 0.4},
		{"a zero score stays zero", 0, true, 0},
		{"the same address keeps a low score", 100, false, 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := recaptchaScore(tc.milli, tc.ipMismatch); got != tc.want {
				t.Fatalf("recaptchaScore(%d, %v) = %v, want %v", tc.milli, tc.ipMismatch, got, tc.want)
			}
		})
	}
	// Every score a human can have (at or above 0.5) stays at or above it,
	// and the signal never raises a score.
	for m := uint16(0); m <= 1000; m++ {
		got := recaptchaScore(m, true)
		if plain := recaptchaScore(m, false); got > plain {
			t.Fatalf("a mismatch raised %d to %v", m, got)
		}
		if m >= 500 && got < 0.5 {
			t.Fatalf("a mismatch alone took %d below 0.5: %v", m, got)
		}
	}
}

// ctxRecorder is an Asker that takes contexts, as the cluster's router
// does, and records the value of ctxKey{} in each context it is given.
type ctxRecorder struct {
	actors.PartitionAsker
	seen []any
}

type ctxKey struct{}

func (r *ctxRecorder) AskContext(ctx context.Context, key string, op actors.Op) error {
	r.seen = append(r.seen, ctx.Value(ctxKey{}))
	return r.Ask(key, op)
}

// TestSiteverifyAsksWithinTheRequestsContext: the ask that consumes the
// token carries the request's context (its trace continues on the owner);
// without a context it is a plain ask.
func TestSiteverifyAsksWithinTheRequestsContext(t *testing.T) {
	e := mustNewEnv(t)
	rec := &ctxRecorder{PartitionAsker: e.m.ask}
	m := New(rec, e, e.m.now, Config{})
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-1")
	v, err := m.Siteverify(e.cat, e.site(), &Request{Ctx: ctx, Response: []byte(e.mint(nil))}, make([]byte, 512))
	if err != nil || !v.Success() {
		t.Fatalf("siteverify %+v %v", v, err)
	}
	if len(rec.seen) != 1 || rec.seen[0] != "request-1" {
		t.Fatalf("contexts seen by the asker: %v, want the request's once", rec.seen)
	}
	if v, err := m.Siteverify(e.cat, e.site(), &Request{Response: []byte(e.mint(nil))}, make([]byte, 512)); err != nil || !v.Success() || len(rec.seen) != 1 {
		t.Fatalf("without a context: %+v %v, contexts %v", v, err, rec.seen)
	}
}
