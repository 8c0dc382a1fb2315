package api_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/risk/api/trusttest"
	"github.com/trustd/trustd/risk/trust"
)

// trustEnv is the Trust API's dev node (risk/api/trusttest).
type trustEnv struct{ *trusttest.Env }

func startTrustNode(t *testing.T) *trustEnv {
	t.Helper()
	return &trustEnv{trusttest.Start(t)}
}

func TestTrustPoliciesAdmin(t *testing.T) {
	e := startTrustNode(t)
	base := "/workspaces/" + e.Dev.WorkspaceID + "/trust-policies"
	bad := e.Admin("POST", base, map[string]any{"name": "bad", "condition": `signals.failed_attempts_5m >= "x"`, "reason_code": "r", "outcome": "review"})
	bad.Want(t, 400, "invalid-trust-rule")
	if !strings.Contains(string(bad.Body), "no matching overload") {
		t.Errorf("the CEL error is not in the answer: %s", bad.Body)
	}
	e.Admin("POST", base, map[string]any{"name": "x", "condition": `signals.nope`, "reason_code": "r", "outcome": "review"}).Want(t, 400, "invalid-trust-rule")
	e.Admin("POST", base, map[string]any{"name": "x", "condition": `true`, "reason_code": "r", "outcome": "deny"}).Want(t, 400, "invalid-trust-policy")
	e.Admin("POST", base, map[string]any{"name": "Bad Name", "condition": `true`, "reason_code": "r", "outcome": "block"}).Want(t, 400, "invalid-trust-policy")
	e.Admin("POST", base, map[string]any{"name": "x", "condition": `true`, "reason_code": "r", "outcome": "block", "extra": 1}).Want(t, 400, "unknown-field")
	e.Admin("POST", "/workspaces/nope/trust-policies", map[string]any{"name": "x", "condition": `true`, "reason_code": "r", "outcome": "block"}).Want(t, 404, "not-found")

	var p struct {
		ID   string `json:"trust_policy_id"`
		Mode string `json:"mode"`
	}
	e.MustCreate(base, map[string]any{"name": "watch-zz", "condition": `request.country_code == "ZZ"`, "reason_code": "zz_country", "outcome": "block"}, &p)
	if p.Mode != "observe" {
		t.Fatalf("a new policy starts in %q, want observe", p.Mode)
	}
	e.Admin("POST", base, map[string]any{"name": "watch-zz", "condition": `true`, "reason_code": "r", "outcome": "block"}).Want(t, 409, "conflict")

	// An observe rule never changes a decision; its would-have-matched
	// count is visible to the admin.
	d := e.Decide(map[string]any{"action": "login", "subject_id": "obs-user", "country_code": "ZZ"})
	if d.Decision != "allow" || d.Matched("zz_country") {
		t.Fatalf("an observe rule changed the decision: %+v", d)
	}
	var list struct {
		Policies []struct {
			Name         string `json:"name"`
			MatchesToday int64  `json:"matches_today"`
		} `json:"policies"`
		BuiltinsActive bool `json:"builtins_active"`
		Builtins       []struct {
			Name string `json:"name"`
		} `json:"builtins"`
	}
	r := e.Admin("GET", base, nil)
	r.Decode(t, &list)
	if len(list.Policies) != 1 || list.Policies[0].MatchesToday != 1 || !list.BuiltinsActive || len(list.Builtins) != len(trust.Builtins) {
		t.Fatalf("list: %s", r.Body)
	}

	// Enforced, it blocks, and the built-ins step aside.
	r = e.Admin("PUT", base+"/"+p.ID, map[string]any{"name": "watch-zz", "condition": `request.country_code == "ZZ"`, "reason_code": "zz_country", "outcome": "block", "mode": "enforce"})
	if r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	e.Admin("PUT", base+"/"+p.ID, map[string]any{"name": "watch-zz", "condition": `1`, "reason_code": "zz_country", "outcome": "block"}).Want(t, 400, "invalid-trust-rule")
	d = e.Decide(map[string]any{"action": "login", "subject_id": "obs-user", "country_code": "ZZ"})
	if d.Decision != "block" || !d.Matched("zz_country") {
		t.Fatalf("an enforced rule did not block: %+v", d)
	}
	d = e.Decide(map[string]any{"action": "login", "subject_id": "obs-user", "new_device": true})
	if d.Matched("new_device") {
		t.Errorf("built-ins still apply next to an enforced policy: %+v", d)
	}
	r = e.Admin("GET", base+"/"+p.ID, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"matches_today":2`) {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	if r := e.Admin("DELETE", base+"/"+p.ID, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	e.Admin("GET", base+"/"+p.ID, nil).Want(t, 404, "trust-policy-not-found")
	e.Admin("DELETE", base+"/"+p.ID, nil).Want(t, 404, "trust-policy-not-found")
	e.Do("GET", "/admin/v1"+base, "wrong", nil).Want(t, 401, "unauthorized")
}

func TestTrustDecisionThroughHTTP(t *testing.T) {
	e := startTrustNode(t)
	d := e.Decide(map[string]any{"action": "login", "subject_id": "alice"})
	if !d.Success || d.Decision != "allow" || d.Method != "human_verification" || d.RequestedAssurance != "none" || !d.EnrollmentAvailable ||
		d.Risk.EngineStatus != "ok" || d.Risk.Level != "low" || d.DecisionID == "" {
		t.Fatalf("a clean subject: %+v", d)
	}
	d = e.Decide(map[string]any{"action": "pay", "subject_id": "alice", "requested_assurance": "standard", "new_device": true})
	if d.Decision != "verify" || d.Method != "facial_authorization" || !d.Requirements.Liveness || !d.Matched("new_device") || d.EnrollmentAvailable {
		t.Fatalf("a new device for a payment: %+v", d)
	}
	d = e.Decide(map[string]any{"action": "pay", "subject_id": "alice", "risk_score": 0.95})
	if d.Decision != "review" || d.Risk.Score != 0.95 || d.Risk.Level != "critical" {
		t.Fatalf("a critical hinted score: %+v", d)
	}

	// Feedback: a fraudulent label raises the subject's later decisions,
	// a zero hint cannot lower it, and an exact retry is de-duplicated.
	first := e.Decide(map[string]any{"action": "pay", "subject_id": "mallory"})
	if first.Decision != "allow" {
		t.Fatalf("mallory before feedback: %+v", first)
	}
	fb := map[string]any{"decision_id": first.DecisionID, "label": "fraudulent", "reason_code": "account_takeover"}
	var f1, f2 struct {
		FeedbackID string `json:"feedback_id"`
		Duplicate  bool   `json:"duplicate"`
	}
	r := e.Post("/trust/feedback", fb)
	if r.Status != 200 {
		t.Fatalf("feedback: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &f1)
	r = e.Post("/trust/feedback", map[string]any{"decision_id": first.DecisionID, "label": "fraudulent", "reason_code": "account_takeover"})
	r.Decode(t, &f2)
	if f1.FeedbackID == "" || f2.FeedbackID != f1.FeedbackID || !f2.Duplicate || f1.Duplicate {
		t.Fatalf("an exact retry is not de-duplicated: %+v %+v", f1, f2)
	}
	d = e.Decide(map[string]any{"action": "pay", "subject_id": "mallory", "risk_score": 0})
	if d.Decision != "review" || !d.Matched("prior_abuse_feedback") {
		t.Fatalf("fraudulent feedback did not raise the next decision: %+v", d)
	}
	e.Post("/trust/feedback", map[string]any{"decision_id": "8d8ac610-566d-4ef0-9c22-186b2a5ed793", "label": "legitimate", "reason_code": "other"}).Want(t, 404, "unknown-decision")
	e.Post("/trust/feedback", map[string]any{"decision_id": first.DecisionID, "label": "maybe", "reason_code": "other"}).Want(t, 400, "invalid-trust-feedback")

	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"no subject", map[string]any{"action": "pay"}},
		{"a bad action", map[string]any{"action": "pay now", "subject_id": "a"}},
		{"a score over 1", map[string]any{"action": "pay", "subject_id": "a", "risk_score": 1.5}},
		{"negative failures", map[string]any{"action": "pay", "subject_id": "a", "failed_attempts_5m": -1}},
		{"an unknown assurance", map[string]any{"action": "pay", "subject_id": "a", "requested_assurance": "medium"}},
		{"a lower-case country", map[string]any{"action": "pay", "subject_id": "a", "country_code": "fr"}},
		{"a control character in the subject", map[string]any{"action": "pay", "subject_id": "a\x01"}},
	} {
		t.Run(c.name, func(t *testing.T) { e.Post("/trust/decision", c.body).Want(t, 400, "invalid-trust-request") })
	}
	e.Do("POST", "/v1/trust/decision", "", map[string]any{"action": "pay", "subject_id": "a"}).Want(t, 401, "unauthorized")
	e.Post("/trust/decision", map[string]any{"secret": "nope", "action": "pay", "subject_id": "a"}).Want(t, 401, "unauthorized")
	e.Post("/trust/decision", map[string]any{"secret": e.Dev.SandboxSecret, "action": "pay", "subject_id": "a"}).Want(t, 403, "forbidden")
	e.Post("/trust/decision", map[string]any{"action": "pay", "subject_id": "a", "nope": 1}).Want(t, 400, "unknown-field")
	e.Do("POST", "/v1/trust/decision", "", "{", "Content-Type", "application/json").Want(t, 400, "malformed-json")

	// Mobile: the mobile secret plus the registered identity.
	mob := map[string]any{"platform": e.Dev.MobilePlatform, "app_id": e.Dev.MobileAppID, "action": "login", "subject_id": "alice"}
	r = e.Do("POST", "/v1/mobile/trust/decision", e.Dev.MobileSecret, mob)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"decision":"allow"`) {
		t.Fatalf("mobile decision: %d %s", r.Status, r.Body)
	}
	mob["app_id"] = "com.other.app"
	e.Do("POST", "/v1/mobile/trust/decision", e.Dev.MobileSecret, mob).Want(t, 403, "invalid-app-identity")
	e.Do("POST", "/v1/mobile/trust/decision", e.Dev.Secret, mob).Want(t, 401, "unauthorized")
}

func TestTrustSiteverifyOrchestrateAndReceipts(t *testing.T) {
	e := startTrustNode(t)
	now := time.Now()
	high := e.Proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: "pay-42", Action: "pay", AuthTime: now})

	a := e.Siteverify(map[string]any{"response": high, "action": "pay", "expected_assurance": "standard", "require_identity": true,
		"require_liveness": true, "require_operation_binding": true, "operation_reference": "pay-42"})
	if !a.Success || len(a.ErrorCodes) != 0 || a.AssessmentID == "" || a.Trust == nil || a.Trust.AssuranceLevel != "high" || !a.Trust.OperationBound {
		t.Fatalf("a high proof for a standard requirement: %+v", a)
	}
	replay := e.Siteverify(map[string]any{"response": high, "action": "pay"})
	if replay.Success || len(replay.ErrorCodes) != 1 || replay.ErrorCodes[0] != "timeout-or-duplicate" {
		t.Fatalf("a replayed proof: %+v", replay)
	}

	for _, c := range []struct {
		name string
		in   trust.ProofInput
		req  map[string]any
		code string
	}{
		{"a document proof for a standard requirement", trust.ProofInput{Method: "document_verification", Assurance: trust.LevelDocumentOnly, Identity: true, AuthTime: now},
			map[string]any{"expected_assurance": "standard"}, "insufficient-assurance"},
		{"a proof for another operation", trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, OperationReference: "pay-1", AuthTime: now},
			map[string]any{"operation_reference": "pay-2"}, "operation-mismatch"},
		{"a proof without liveness", trust.ProofInput{Method: "document_verification", Assurance: trust.LevelDocumentOnly, Identity: true, AuthTime: now},
			map[string]any{"require_liveness": true}, "liveness-not-verified"},
		{"an old step-up", trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, AuthTime: now.Add(-time.Hour)},
			map[string]any{"expected_assurance": "high"}, "stale-authentication"},
		{"a proof for another action", trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, Action: "login", AuthTime: now},
			map[string]any{"action": "pay"}, "action-mismatch"},
		{"an expired proof", trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, AuthTime: now, TTL: time.Nanosecond},
			map[string]any{}, "timeout-or-duplicate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := c.req
			body["response"] = e.Proof(c.in)
			a := e.Siteverify(body)
			if a.Success || len(a.ErrorCodes) != 1 || a.ErrorCodes[0] != c.code || a.AssessmentID != "" {
				t.Fatalf("got %+v, want %s", a, c.code)
			}
			// The failed proof was consumed all the same (spec 3.1).
			if c.code != "timeout-or-duplicate" {
				again := e.Siteverify(map[string]any{"response": body["response"]})
				if again.Success || again.ErrorCodes[0] != "timeout-or-duplicate" {
					t.Fatalf("a failed proof was not consumed: %+v", again)
				}
			}
		})
	}
	for _, resp := range []string{"nonsense", "tp1_AAAA", high[:len(high)-4] + "AAAA"} {
		if a := e.Siteverify(map[string]any{"response": resp}); a.Success || a.Trust != nil || a.ErrorCodes[0] != "invalid-input-response" {
			t.Fatalf("%q: %+v", resp, a)
		}
	}
	// A proof of another workspace is not recognised.
	var ws2 struct {
		ID string `json:"workspace_id"`
	}
	e.MustCreate("/workspaces", map[string]any{"name": "other"}, &ws2)
	foreign := trusttest.MintProof(t, e.N.Store().Catalog(), ws2.ID, trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, AuthTime: now})
	if a := e.Siteverify(map[string]any{"response": foreign}); a.Success || a.ErrorCodes[0] != "invalid-input-response" {
		t.Fatalf("a foreign proof: %+v", a)
	}
	e.Post("/trust/siteverify", map[string]any{"response": high, "require_operation_binding": true}).Want(t, 400, "invalid-trust-request")
	e.Post("/trust/siteverify", map[string]any{"response": high, "expected_assurance": "ultra"}).Want(t, 400, "invalid-trust-request")
	e.Post("/trust/siteverify", map[string]any{}).Want(t, 400, "invalid-field")

	// A widget token is a proof of presence: consumed by the same marker
	// as /siteverify, good for no assurance.
	tok := nodetest.WidgetToken(t, e.Node, e.Dev.SiteKey, "login")
	w := e.Siteverify(map[string]any{"response": tok, "action": "login", "expected_assurance": "standard"})
	if w.Success || w.Trust == nil || w.Trust.Method != "human_verification" || strings.Join(w.ErrorCodes, ",") != "insufficient-assurance" {
		t.Fatalf("a widget token for a standard requirement: %+v", w)
	}
	r := e.Do("POST", "/v1/siteverify", "", map[string]any{"secret": e.Dev.Secret, "response": tok})
	if !strings.Contains(string(r.Body), "timeout-or-duplicate") {
		t.Fatalf("a token spent at /trust/siteverify still verifies at /siteverify: %s", r.Body)
	}
	tok = nodetest.WidgetToken(t, e.Node, e.Dev.SiteKey, "login")
	w = e.Siteverify(map[string]any{"response": tok, "action": "login"})
	if !w.Success || w.AssessmentID == "" || w.Trust.AssuranceLevel != "none" {
		t.Fatalf("a widget token with no assurance requested: %+v", w)
	}

	// Orchestrate: the proof's assessment, the same subject, action and
	// operation, a decision and a receipt, once.
	orch := map[string]any{"assessment_id": a.AssessmentID, "subject_id": "bob", "action": "pay", "operation_reference": "pay-42"}
	e.Post("/trust/orchestrate", orch).Want(t, 409, "assessment-context-mismatch")
	orch["subject_id"] = "alice"
	orch["operation_reference"] = "pay-43"
	e.Post("/trust/orchestrate", orch).Want(t, 409, "assessment-context-mismatch")
	orch["operation_reference"] = "pay-42"
	r = e.Post("/trust/orchestrate", orch)
	if r.Status != 200 {
		t.Fatalf("orchestrate: %d %s", r.Status, r.Body)
	}
	var o trusttest.DecisionAnswer
	r.Decode(t, &o)
	if o.Decision != "allow" || o.Receipt == "" || o.AssuranceLevel != "high" {
		t.Fatalf("orchestrate: %s", r.Body)
	}
	e.Post("/trust/orchestrate", orch).Want(t, 409, "assessment-already-orchestrated")
	e.Post("/trust/orchestrate", map[string]any{"assessment_id": "8d8ac610-566d-4ef0-9c22-186b2a5ed793", "subject_id": "alice", "action": "pay", "operation_reference": "x"}).Want(t, 404, "unknown-assessment")
	e.Post("/trust/orchestrate", map[string]any{"assessment_id": "nope", "subject_id": "alice", "action": "pay", "operation_reference": "x"}).Want(t, 400, "invalid-trust-request")

	// The widget verification (no subject binding) orchestrates for the
	// action it was bound to.
	e.Post("/trust/orchestrate", map[string]any{"assessment_id": w.AssessmentID, "subject_id": "carol", "action": "pay", "operation_reference": "o-1"}).Want(t, 409, "assessment-context-mismatch")
	r = e.Post("/trust/orchestrate", map[string]any{"assessment_id": w.AssessmentID, "subject_id": "carol", "action": "login", "operation_reference": "o-1"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"assurance_level":"none"`) {
		t.Fatalf("orchestrate a widget verification: %d %s", r.Status, r.Body)
	}

	// The receipt verifies here, with its bindings…
	type rv struct {
		Success    bool     `json:"success"`
		ErrorCodes []string `json:"error-codes"`
		Claims     *struct {
			Aud, Sub string
		} `json:"claims"`
	}
	var v rv
	e.Post("/trust/receipts/verify", map[string]any{"receipt": o.Receipt, "action": "pay", "operation_reference": "pay-42", "subject_id": "alice"}).Decode(t, &v)
	if !v.Success || len(v.ErrorCodes) != 0 || v.Claims == nil {
		t.Fatalf("receipt verify: %+v", v)
	}
	v = rv{}
	e.Post("/trust/receipts/verify", map[string]any{"receipt": o.Receipt, "action": "refund", "operation_reference": "pay-9", "subject_id": "bob"}).Decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "action-mismatch,operation-mismatch,subject-mismatch" {
		t.Fatalf("receipt with wrong bindings: %+v", v)
	}
	v = rv{}
	parts := strings.Split(o.Receipt, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"trustd","decision":"allow"}`)) + "." + parts[2]
	e.Post("/trust/receipts/verify", map[string]any{"receipt": tampered}).Decode(t, &v)
	if v.Success || v.ErrorCodes[0] != "invalid-receipt" || v.Claims != nil {
		t.Fatalf("a tampered receipt: %+v", v)
	}

	// Offline verification with third-party JOSE libraries, under both alg
	// names: trust_receipt_alg_test.go.

	// Mobile siteverify takes step-up proofs with the app's identity.
	mp := e.Proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelStandard, Identity: true, Liveness: true, AuthTime: now})
	body := map[string]any{"platform": e.Dev.MobilePlatform, "app_id": e.Dev.MobileAppID, "response": mp, "expected_assurance": "document_only"}
	r = e.Do("POST", "/v1/mobile/trust/siteverify", e.Dev.MobileSecret, body)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"success":true`) {
		t.Fatalf("mobile siteverify: %d %s", r.Status, r.Body)
	}
	body["platform"] = "symbian"
	e.Do("POST", "/v1/mobile/trust/siteverify", e.Dev.MobileSecret, body).Want(t, 403, "invalid-app-identity")
}

func TestTrustOperationsRefuseBadRequests(t *testing.T) {
	e := startTrustNode(t)
	for _, path := range []string{"/trust/decision", "/trust/siteverify", "/trust/orchestrate", "/trust/receipts/verify", "/trust/feedback"} {
		t.Run(path, func(t *testing.T) {
			e.Do("POST", "/v1"+path, "", "secret="+e.Dev.Secret, "Content-Type", "application/x-www-form-urlencoded").Want(t, 415, "unsupported-media-type")
			e.Do("POST", "/v1"+path, "", `{}`).Want(t, 401, "unauthorized")
			e.Do("POST", "/v1"+path, "", `{"secret":7}`).Want(t, 400, "invalid-field")
			e.Do("POST", "/v1"+path, "", `{"secret":"`+e.Dev.Secret+`","secret":"x"}`).Want(t, 400, "malformed-json")
			e.Do("GET", "/v1"+path, "", nil).Want(t, 405, "method-not-allowed")
		})
	}
	e.Post("/trust/receipts/verify", map[string]any{}).Want(t, 400, "invalid-field")
	var v struct {
		Success    bool     `json:"success"`
		ErrorCodes []string `json:"error-codes"`
	}
	e.Post("/trust/receipts/verify", map[string]any{"receipt": "a.b.c"}).Decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "invalid-receipt" {
		t.Fatalf("garbage receipt: %+v", v)
	}
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"EdDSA","kid":"nope","typ":"JWT"}`))
	e.Post("/trust/receipts/verify", map[string]any{"receipt": hdr + ".e30." + base64.RawURLEncoding.EncodeToString(make([]byte, 64))}).Decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "unknown-receipt-key" {
		t.Fatalf("unknown kid: %+v", v)
	}
	mob := map[string]any{"platform": e.Dev.MobilePlatform, "app_id": e.Dev.MobileAppID, "secret": e.Dev.Secret, "action": "login", "subject_id": "a"}
	e.Do("POST", "/v1/mobile/trust/decision", e.Dev.MobileSecret, mob).Want(t, 400, "invalid-field")
	delete(mob, "secret")
	e.Do("POST", "/v1/mobile/trust/decision", "", mob).Want(t, 401, "unauthorized")
	mob["response"] = nodetest.WidgetToken(t, e.Node, e.Dev.SiteKey, "login")
	delete(mob, "action")
	delete(mob, "subject_id")
	r := e.Do("POST", "/v1/mobile/trust/siteverify", e.Dev.MobileSecret, mob)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"error-codes":["invalid-input-response"]`) {
		t.Fatalf("a widget token at the mobile siteverify: %d %s", r.Status, r.Body)
	}
}
