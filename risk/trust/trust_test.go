package trust

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

func mustEnv(t *testing.T) *Env {
	t.Helper()
	e, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAssuranceLadder(t *testing.T) {
	cases := []struct {
		name       string
		have, want string
		ok         bool
	}{
		{"high satisfies standard", "high", "standard", true},
		{"high satisfies document_only", "high", "document_only", true},
		{"standard satisfies standard", "standard", "standard", true},
		{"standard does not satisfy high", "standard", "high", false},
		{"document_only does not satisfy standard", "document_only", "standard", false},
		{"none satisfies nothing requested", "none", "", true},
		{"none does not satisfy document_only", "none", "document_only", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, ok1 := ParseLevel(c.have)
			w, ok2 := ParseLevel(c.want)
			if !ok1 || !ok2 {
				t.Fatal("level did not parse")
			}
			if h.Satisfies(w) != c.ok {
				t.Fatalf("%s satisfies %s = %v", c.have, c.want, !c.ok)
			}
		})
	}
	if _, ok := ParseLevel("Standard"); ok {
		t.Error("level names are exact")
	}
	if _, ok := ParseLevel("medium"); ok {
		t.Error("an unknown level parsed")
	}
}

func TestRuleCompilation(t *testing.T) {
	env := mustEnv(t)
	cases := []struct {
		name, expr, errPart string
	}{
		{"a typed comparison compiles", `signals.failed_attempts_5m >= 3 && request.action == "pay"`, ""},
		{"a list membership compiles", `request.network_type in ["tor", "vpn"]`, ""},
		{"a string compared with an int is refused", `signals.failed_attempts_5m >= "3"`, "no matching overload"},
		{"an undeclared variable is refused", `signals.nope == 1`, "undeclared reference"},
		{"a non-bool result is refused", `risk.score + 1.0`, "must be a bool"},
		{"a syntax error is refused", `request.action ==`, "Syntax error"},
		{"an empty condition is refused", `  `, "1 to 2048"},
		{"an over-long condition is refused", strings.Repeat("true && ", 300) + "true", "1 to 2048"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := env.Compile(c.expr)
			if c.errPart == "" {
				if err != nil {
					t.Fatalf("compile: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), c.errPart) {
				t.Fatalf("err = %v, want invalid-trust-rule with %q", err, c.errPart)
			}
		})
	}
}

func rule(t *testing.T, env *Env, name, expr, outcome, mode string) Rule {
	t.Helper()
	p, err := env.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return Rule{Name: name, ReasonCode: name + "_reason", Outcome: outcome, Mode: mode, Program: p}
}

func TestRuleEvaluation(t *testing.T) {
	env := mustEnv(t)
	big := rule(t, env, "big", `request.transaction_amount >= 1000`, Review, ModeEnforce)
	tor := rule(t, env, "tor", `request.network_type == "tor"`, Block, ModeEnforce)
	watch := rule(t, env, "watch", `request.country_code == "ZZ"`, Block, ModeObserve)
	lenient := rule(t, env, "lenient", `true`, Allow, ModeEnforce)
	cases := []struct {
		name     string
		rules    []Rule
		req      DecisionRequest
		sig      Signals
		want     string
		matched  []string
		observed []string
	}{
		{"no rule fires: allow", []Rule{big, tor}, DecisionRequest{TransactionAmount: 5}, Signals{}, Allow, nil, nil},
		{"an enforced rule forces its outcome", []Rule{big, tor}, DecisionRequest{TransactionAmount: 5000}, Signals{}, Review, []string{"big"}, nil},
		{"the most severe outcome wins", []Rule{big, tor}, DecisionRequest{TransactionAmount: 5000, NetworkType: "tor"}, Signals{}, Block, []string{"big", "tor"}, nil},
		{"an observe rule is counted, never applied", []Rule{watch}, DecisionRequest{CountryCode: "ZZ"}, Signals{}, Allow, nil, []string{"watch"}},
		{"an allow rule cannot lower another rule", []Rule{lenient, tor}, DecisionRequest{NetworkType: "tor"}, Signals{}, Block, []string{"lenient", "tor"}, nil},
		{"an allow rule cannot lower the service's score", []Rule{lenient}, DecisionRequest{}, Signals{Label: "abuse", FailedAttempts5m: 3}, Review, []string{"builtin/risk_score", "lenient"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Evaluate(c.rules, Input{Request: c.req, Signals: c.sig}, true)
			if d.Decision != c.want || d.Risk.Outcome != c.want {
				t.Fatalf("decision %s, want %s (%+v)", d.Decision, c.want, d.Risk)
			}
			var got []string
			for _, m := range d.Risk.MatchedRules {
				got = append(got, m.PolicyName)
			}
			if !slices.Equal(got, c.matched) {
				t.Errorf("matched %v, want %v", got, c.matched)
			}
			got = nil
			for _, m := range d.Observed {
				got = append(got, m.PolicyName)
			}
			if !slices.Equal(got, c.observed) {
				t.Errorf("observed %v, want %v", got, c.observed)
			}
			if d.Risk.EngineStatus != EngineOK {
				t.Errorf("engine %s", d.Risk.EngineStatus)
			}
		})
	}
}

func TestHintsRaiseNeverLower(t *testing.T) {
	env := mustEnv(t)
	rules := builtinRules(t, env)
	cases := []struct {
		name   string
		hints  Hints
		sig    Signals
		want   string
		reason string
	}{
		{"a clean subject with no hints is allowed", Hints{}, Signals{}, Allow, ""},
		{"a high hinted score raises to verify", Hints{RiskScore: 0.7}, Signals{}, Verify, "risk_score_high"},
		{"a critical hinted score raises to review", Hints{RiskScore: 0.95}, Signals{}, Review, "risk_score_critical"},
		{"hinted failed attempts raise to verify", Hints{FailedAttempts5m: 4}, Signals{}, Verify, "failed_attempts"},
		{"a zero hinted score does not lower observed abuse", Hints{RiskScore: 0}, Signals{Label: "abuse"}, Review, "prior_abuse_feedback"},
		{"zero hinted failures do not lower observed failures", Hints{FailedAttempts5m: 0}, Signals{FailedAttempts5m: 12}, Block, "failed_attempts_burst"},
		{"hinted velocity zero does not hide observed velocity", Hints{RequestVelocity5m: 0}, Signals{Decisions5m: 40}, Verify, "high_velocity"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Evaluate(rules, Input{Request: DecisionRequest{Action: "pay", Hints: c.hints}, Signals: c.sig}, true)
			if d.Decision != c.want {
				t.Fatalf("decision %s, want %s (%+v)", d.Decision, c.want, d.Risk)
			}
			if c.reason != "" && !slices.ContainsFunc(d.Risk.MatchedRules, func(m Match) bool { return m.ReasonCode == c.reason }) {
				t.Errorf("matched %+v lacks %s", d.Risk.MatchedRules, c.reason)
			}
			if d.Risk.Score < ServiceScore(c.sig) {
				t.Errorf("score %.3f is below the service's own %.3f", d.Risk.Score, ServiceScore(c.sig))
			}
		})
	}
}

func builtinRules(t *testing.T, env *Env) []Rule {
	t.Helper()
	var out []Rule
	for _, b := range Builtins {
		p, err := env.Compile(b.Condition)
		if err != nil {
			t.Fatalf("builtin %s: %v", b.Name, err)
		}
		out = append(out, Rule{Name: b.Name, ReasonCode: b.ReasonCode, Outcome: b.Outcome, Mode: b.Mode, Program: p})
	}
	return out
}

func TestEngineStatus(t *testing.T) {
	env := mustEnv(t)
	// Integer overflow is a CEL run-time error: the rule is skipped.
	boom := rule(t, env, "boom", `request.transaction_amount * 9223372036854775807 > 0`, Block, ModeEnforce)
	d := Evaluate([]Rule{boom}, Input{Request: DecisionRequest{TransactionAmount: 10}}, true)
	if d.Risk.EngineStatus != EngineDegraded || d.Decision != Allow {
		t.Errorf("a failing rule: %s %s, want degraded allow", d.Risk.EngineStatus, d.Decision)
	}
	d = Evaluate(nil, Input{}, false)
	if d.Risk.EngineStatus != EngineFailed || d.Decision != Review {
		t.Errorf("signals unavailable: %s %s, want failed review", d.Risk.EngineStatus, d.Decision)
	}
}

func TestDecisionAssuranceAndMethod(t *testing.T) {
	cases := []struct {
		name, requested string
		hint            float64
		level, method   string
		req             Requirements
	}{
		{"nothing requested at low risk: human verification", "", 0, "none", MethodHuman, Requirements{}},
		{"document_only requested", "document_only", 0, "document_only", MethodDocument, Requirements{Identity: true}},
		{"standard requested", "standard", 0, "standard", MethodFacial, Requirements{Identity: true, Liveness: true}},
		{"high requested", "high", 0, "high", MethodFacial, Requirements{Identity: true, Liveness: true, DeviceBinding: true}},
		{"a high score asks for standard at least", "", 0.7, "standard", MethodFacial, Requirements{Identity: true, Liveness: true}},
		{"a high score never lowers high", "high", 0.7, "high", MethodFacial, Requirements{Identity: true, Liveness: true, DeviceBinding: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Evaluate(nil, Input{Request: DecisionRequest{RequestedAssurance: c.requested, Hints: Hints{RiskScore: c.hint}}}, true)
			if d.RequestedAssurance.String() != c.level || d.Method != c.method || d.Requirements != c.req {
				t.Fatalf("got %s %s %+v", d.RequestedAssurance, d.Method, d.Requirements)
			}
			if d.EnrollmentAvailable != (c.method == MethodHuman) {
				t.Errorf("enrollment_available %v", d.EnrollmentAvailable)
			}
		})
	}
}

func TestProofCheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	op := [16]byte{1}
	full := Achieved{Method: MethodFacial, Assurance: LevelHigh, Identity: true, Liveness: true, OperationBound: true, Operation: op, Action: "pay", AuthTime: now.Add(-time.Minute)}
	cases := []struct {
		name string
		req  SiteverifyRequest
		a    Achieved
		want []string
	}{
		{"a high proof satisfies a standard requirement", SiteverifyRequest{ExpectedAssurance: "standard", Action: "pay"}, full, []string{}},
		{"a document proof fails a standard requirement", SiteverifyRequest{ExpectedAssurance: "standard"}, Achieved{Assurance: LevelDocumentOnly, AuthTime: now}, []string{errcode.CodeInsufficient}},
		{"another action is a mismatch", SiteverifyRequest{Action: "login"}, full, []string{errcode.CodeActionMismatch}},
		{"identity and liveness are required separately", SiteverifyRequest{RequireIdentity: true, RequireLiveness: true}, Achieved{}, []string{CodeIdentityRequired, CodeLivenessRequired}},
		{"an unbound proof fails operation binding", SiteverifyRequest{RequireOperationBinding: true, OperationReference: "op-1"}, Achieved{}, []string{CodeOperationNotBound}},
		{"a proof bound to another operation is a mismatch", SiteverifyRequest{OperationReference: "op-2"}, Achieved{OperationBound: true, Operation: [16]byte{2}}, []string{errcode.CodeOperationMismatch}},
		{"an old step-up is stale", SiteverifyRequest{ExpectedAssurance: "standard"}, Achieved{Assurance: LevelHigh, AuthTime: now.Add(-time.Hour)}, []string{CodeStaleAuthentication}},
		{"max_age_seconds widens freshness", SiteverifyRequest{ExpectedAssurance: "standard", MaxAgeSeconds: 7200}, Achieved{Assurance: LevelHigh, AuthTime: now.Add(-time.Hour)}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(c.req, c.a, op, now)
			if !slices.Equal(got, c.want) {
				t.Fatalf("codes %v, want %v", got, c.want)
			}
		})
	}
}

func TestProofTokenRoundTrip(t *testing.T) {
	k := token.NewKey("k1", []byte("0123456789abcdef0123456789abcdef"))
	ws := &catalog.Workspace{ID: "ws1", ScopeKey: []byte("scope")}
	now := time.Unix(1_800_000_000, 0)
	text := IssueProof(k, ws, ProofInput{Method: MethodFacial, Assurance: LevelStandard, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: "op-9", Action: "pay", AuthTime: now}, now)
	lookup := func(id string) *token.Key {
		if id == "k1" {
			return k
		}
		return nil
	}
	p, err := token.DecodeProof(text, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if p.WorkspaceID != "ws1" || p.Assurance != uint8(LevelStandard) || !p.HasSubject || p.SubjectHash != SubjectBinding(ws.ScopeKey, "alice") ||
		p.OperationHash != OperationBinding(ws.ScopeKey, "op-9") || p.Expires != now.Add(ProofTTL).Unix() || strings.Contains(text, "alice") {
		t.Fatalf("decoded %+v", p)
	}
	for name, bad := range map[string]string{
		"a flipped character": text[:len(text)-3] + map[bool]string{true: "B", false: "A"}[text[len(text)-3] == 'A'] + text[len(text)-2:],
		"a response token":    strings.Replace(text, token.ProofPrefix, token.LivePrefix, 1),
		"garbage":             "tp1_%%%",
	} {
		if _, err := token.DecodeProof(bad, lookup); err == nil {
			t.Errorf("%s decoded", name)
		}
	}
	if _, err := token.DecodeProof(text, func(string) *token.Key { return nil }); !errors.Is(err, token.ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestRulesCacheCompilesOncePerCondition(t *testing.T) {
	env := mustEnv(t)
	cache := NewCache(env)
	cat := catalog.Empty()
	cat.TrustPolicies = map[string]*catalog.TrustPolicy{
		"p1": {ID: "p1", WorkspaceID: "w", Name: "a", Condition: `risk.score > 0.5`, ReasonCode: "r", Outcome: Review, Mode: ModeObserve},
	}
	cat.Index, cat.ConfigIndex = 7, 7
	rs := Rules(cache, cat, "w")
	if !rs.BuiltinsActive || len(rs.Rules) != 1+len(Builtins) {
		t.Fatalf("an observe-only workspace keeps the built-ins: %+v", rs)
	}
	first := rs.Rules[0].Program
	if again := Rules(cache, cat, "w"); again.Rules[0].Program != first {
		t.Error("the same condition was compiled twice")
	}
	next := *cat
	next.Index, next.ConfigIndex = 8, 8
	next.TrustPolicies = map[string]*catalog.TrustPolicy{
		"p1": {ID: "p1", WorkspaceID: "w", Name: "a", Condition: `risk.score > 0.6`, ReasonCode: "r", Outcome: Review, Mode: ModeEnforce},
	}
	rs = Rules(cache, &next, "w")
	if rs.BuiltinsActive || len(rs.Rules) != 1 {
		t.Fatalf("an enforcing workspace replaces the built-ins: %+v", rs)
	}
	if cache.Len() != 1+len(Builtins) {
		t.Errorf("cache holds %d programs after a change, want the live ones only", cache.Len())
	}
}
