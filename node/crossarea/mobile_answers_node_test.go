package crossarea_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/journeys/api/journeynode"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/risk/api/trusttest"
	"github.com/trustd/trustd/risk/trust"
)

// The mobile operations answer what their server counterparts answer, for
// the registered app's own mobile secret and identity only. Each test
// reads the answers, not just the status.

// mobileCallerChecks runs the refusals every mobile operation shares on a
// valid body: another app id is 403 invalid-app-identity, a body secret is
// 400 invalid-field, no bearer is 401 unauthorized, and the site's secret
// as bearer is 401 unauthorized.
func mobileCallerChecks(t *testing.T, tn *nodetest.Node, path, mobileSecret, siteSecret string, body map[string]any) {
	t.Helper()
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range body {
			out[kk] = vv
		}
		out[k] = v
		return out
	}
	tn.Do("POST", path, mobileSecret, with("app_id", "com.other.app")).Want(t, 403, "invalid-app-identity")
	tn.Do("POST", path, mobileSecret, with("platform", "ios")).Want(t, 403, "invalid-app-identity")
	if r := tn.Do("POST", path, mobileSecret, with("secret", siteSecret)); r.Status != 400 || (r.ErrorCode(t) != "invalid-field" && r.ErrorCode(t) != "unknown-field") {
		t.Fatalf("a body secret on %s: %d %s, want 400 invalid-field or unknown-field", path, r.Status, r.Body)
	}
	tn.Do("POST", path, "", body).Want(t, 401, "unauthorized")
	tn.Do("POST", path, siteSecret, body).Want(t, 401, "unauthorized")
}

func TestMobileTrustOrchestrateReceiptsAndFeedback(t *testing.T) {
	e := trusttest.Start(t)
	mob := func(kv ...any) map[string]any {
		m := map[string]any{"platform": e.Dev.MobilePlatform, "app_id": e.Dev.MobileAppID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	proof := e.Proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelStandard, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: "transfer-7", Action: "transfer", AuthTime: time.Now()})
	r := e.Do("POST", "/v1/mobile/trust/siteverify", e.Dev.MobileSecret, mob("response", proof, "action", "transfer", "expected_assurance", "standard",
		"require_identity", true, "require_liveness", true, "require_operation_binding", true, "operation_reference", "transfer-7"))
	var sv trusttest.SiteverifyAnswer
	r.Decode(t, &sv)
	if r.Status != 200 || !sv.Success || sv.AssessmentID == "" || sv.Trust == nil || sv.Trust.AssuranceLevel != "standard" || !sv.Trust.OperationBound {
		t.Fatalf("mobile siteverify: %d %s", r.Status, r.Body)
	}

	// Orchestrate: the same refusals as every mobile operation, then one
	// decision with a receipt, once.
	orch := mob("assessment_id", sv.AssessmentID, "subject_id", "alice", "action", "transfer", "operation_reference", "transfer-7")
	mobileCallerChecks(t, e.Node, "/v1/mobile/trust/orchestrate", e.Dev.MobileSecret, e.Dev.Secret, orch)
	e.Do("POST", "/v1/mobile/trust/orchestrate", e.Dev.MobileSecret, mob("assessment_id", sv.AssessmentID, "subject_id", "bob",
		"action", "transfer", "operation_reference", "transfer-7")).Want(t,
		409, "assessment-context-mismatch")

	r = e.Do("POST", "/v1/mobile/trust/orchestrate", e.Dev.MobileSecret, orch)
	var o struct {
		trusttest.DecisionAnswer
		ReceiptExpiresAt int64 `json:"receipt_expires_at"`
	}
	r.Decode(t, &o)
	if r.Status != 200 || !o.Success || o.Decision != "allow" || o.AssuranceLevel != "standard" || o.DecisionID == "" ||
		!strings.HasPrefix(o.Receipt, "ey") || o.ReceiptExpiresAt <= time.Now().Unix() {
		t.Fatalf("mobile orchestrate: %d %s", r.Status, r.Body)
	}
	if h := trusttest.ReceiptHeader(t, o.Receipt); h["alg"] != "Ed25519" {
		t.Fatalf("receipt header %v", h)
	}
	e.Do("POST", "/v1/mobile/trust/orchestrate", e.Dev.MobileSecret, orch).Want(t, 409, "assessment-already-orchestrated")

	// Receipt verification, with and without matching bindings, here and at
	// the server operation (one workspace, one receipt).
	type rv struct {
		Success    bool     `json:"success"`
		ErrorCodes []string `json:"error-codes"`
		Claims     *struct {
			Aud                string `json:"aud"`
			Jti                string `json:"jti"`
			Action             string `json:"action"`
			OperationReference string `json:"operation_reference"`
			Decision           string `json:"decision"`
			AssuranceLevel     string `json:"assurance_level"`
		} `json:"claims"`
	}
	ver := mob("receipt", o.Receipt, "action", "transfer", "operation_reference", "transfer-7", "subject_id", "alice")
	mobileCallerChecks(t, e.Node, "/v1/mobile/trust/receipts/verify", e.Dev.MobileSecret, e.Dev.Secret, ver)
	var v rv
	e.Do("POST", "/v1/mobile/trust/receipts/verify", e.Dev.MobileSecret, ver).Decode(t, &v)
	if !v.Success || len(v.ErrorCodes) != 0 || v.Claims == nil || v.Claims.Aud != e.Dev.WorkspaceID || v.Claims.Jti != o.DecisionID ||
		v.Claims.Action != "transfer" || v.Claims.OperationReference != "transfer-7" || v.Claims.Decision != "allow" || v.Claims.AssuranceLevel != "standard" {
		t.Fatalf("mobile receipt verify: %+v", v)
	}
	v = rv{}
	e.Do("POST", "/v1/mobile/trust/receipts/verify", e.Dev.MobileSecret, mob("receipt", o.Receipt, "action", "refund", "subject_id", "bob")).Decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "action-mismatch,subject-mismatch" || v.Claims == nil {
		t.Fatalf("mobile receipt verify with other bindings: %+v", v)
	}
	v = rv{}
	e.Do("POST", "/v1/mobile/trust/receipts/verify", e.Dev.MobileSecret, mob("receipt", "a.b.c")).Decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "invalid-receipt" || v.Claims != nil {
		t.Fatalf("mobile receipt verify of garbage: %+v", v)
	}
	e.Do("POST", "/v1/mobile/trust/receipts/verify", e.Dev.MobileSecret, mob()).Want(t, 400, "invalid-field")
	v = rv{}
	e.Post("/trust/receipts/verify", map[string]any{"receipt": o.Receipt}).Decode(t, &v)
	if !v.Success {
		t.Fatalf("the server operation verifies the app's receipt: %+v", v)
	}

	// Feedback on the decision: an id, and an exact retry is the same one.
	fb := mob("decision_id", o.DecisionID, "label", "legitimate", "reason_code", "passed_step_up")
	mobileCallerChecks(t, e.Node, "/v1/mobile/trust/feedback", e.Dev.MobileSecret, e.Dev.Secret, fb)
	type fa struct {
		Success    bool   `json:"success"`
		FeedbackID string `json:"feedback_id"`
		Duplicate  bool   `json:"duplicate"`
	}
	var f1, f2 fa
	if r := e.Do("POST", "/v1/mobile/trust/feedback", e.Dev.MobileSecret, fb); r.Status != 200 {
		t.Fatalf("mobile feedback: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &f1)
	}
	e.Do("POST", "/v1/mobile/trust/feedback", e.Dev.MobileSecret, fb).Decode(t, &f2)
	if !f1.Success || f1.FeedbackID == "" || f1.Duplicate || !f2.Success || !f2.Duplicate || f2.FeedbackID != f1.FeedbackID {
		t.Fatalf("mobile feedback then its retry: %+v %+v", f1, f2)
	}
	e.Do("POST", "/v1/mobile/trust/feedback", e.Dev.MobileSecret, mob("decision_id", "8d8ac610-566d-4ef0-9c22-186b2a5ed793",
		"label", "fraudulent", "reason_code", "chargeback")).Want(t,
		404, "unknown-decision")

}

func TestMobileJourneySiteverifyAndEscalateAnswers(t *testing.T) {
	e := journeynode.Start(t)
	// Passkeys and widget tokens need a site's domain; an app's journey
	// completes with a facial method, here over the fake presence check.
	e.N.Journeys().WithFace(fakePresence{}, nil, nil)
	if r := e.Do("PUT", "/admin/v1/workspaces/"+e.Dev.WorkspaceID+"/journeys/live", e.Dev.AdminToken, map[string]any{
		"name": "Live check", "method": "facial_liveness", "consent": map[string]any{"required": true, "version": "c1"},
		"requirements": map[string]any{"liveness": true, "operation_binding": true}}); r.Status != 200 {
		t.Fatalf("define: %d %s", r.Status, r.Body)
	}
	mob := func(kv ...any) map[string]any {
		m := map[string]any{"platform": e.Dev.MobilePlatform, "app_id": e.Dev.MobileAppID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	start := func(op string) journeynode.StartAnswer {
		t.Helper()
		r := e.Do("POST", "/v1/mobile/journeys/start", e.Dev.MobileSecret, mob("journey_key", "live", "subject_id", "alice", "action", "pay",
			"operation_reference", op, "consent_version", "c1"))
		if r.Status != 200 {
			t.Fatalf("mobile start: %d %s", r.Status, r.Body)
		}
		var st journeynode.StartAnswer
		r.Decode(t, &st)
		return st
	}
	st := start("order-m1")
	capability := journeynode.CapabilityOf(t, st.Endpoint)
	if r := e.Do("POST", "/v1/journeys/person/face/begin", "", nil, "X-Service-Journey-Token", capability); r.Status != 200 {
		t.Fatalf("face begin: %d %s", r.Status, r.Body)
	}
	frame := base64.StdEncoding.EncodeToString([]byte("face:a"))
	r := e.Do("POST", "/v1/journeys/person/face/complete", "", map[string]any{"frames": []any{map[string]any{"image": frame, "offset_ms": 0}}},
		"X-Service-Journey-Token", capability)
	var out journeynode.AttemptAnswer
	r.Decode(t, &out)
	proof := out.Response
	if r.Status != 200 || !out.Success || !strings.HasPrefix(proof, "tp1_") {
		t.Fatalf("face completion: %d %s", r.Status, r.Body)
	}
	sv := mob("session_token", st.SessionToken, "response", proof, "subject_id", "alice", "action", "pay",
		"operation_reference", "order-m1", "consent_version", "c1", "consent_accepted", true)
	mobileCallerChecks(t, e.Node, "/v1/mobile/journeys/siteverify", e.Dev.MobileSecret, e.Dev.Secret, sv)
	type verifyAnswer struct {
		Success bool `json:"success"`
		Trust   *struct {
			Method           string `json:"method"`
			AssuranceLevel   string `json:"assurance_level"`
			IdentityBound    bool   `json:"identity_bound"`
			LivenessVerified bool   `json:"liveness_verified"`
			OperationBound   bool   `json:"operation_bound"`
			Authorization    bool   `json:"authorization_capable"`
		} `json:"trust"`
		Journey *struct {
			Key    string `json:"key"`
			Status string `json:"status"`
		} `json:"journey"`
		ErrorCodes []string `json:"error-codes"`
		NextStep   string   `json:"next_step"`
	}
	// The site cannot redeem the app's session.
	var v verifyAnswer
	site := map[string]any{}
	for k, val := range sv {
		if k != "platform" && k != "app_id" {
			site[k] = val
		}
	}
	e.Post("/journeys/siteverify", site).Decode(t, &v)
	if v.Success || len(v.ErrorCodes) == 0 {
		t.Fatalf("the site redeemed the app's journey: %+v", v)
	}
	v = verifyAnswer{}
	r = e.Do("POST", "/v1/mobile/journeys/siteverify", e.Dev.MobileSecret, sv)
	r.Decode(t, &v)
	if r.Status != 200 || !v.Success || len(v.ErrorCodes) != 0 || v.Trust == nil || v.Journey == nil ||
		v.Trust.Method != "facial_liveness" || !v.Trust.LivenessVerified || !v.Trust.OperationBound || v.Trust.Authorization ||
		v.Journey.Key != "live" || v.Journey.Status != "completed" {
		t.Fatalf("mobile journey siteverify: %d %s", r.Status, r.Body)
	}
	v = verifyAnswer{}
	e.Do("POST", "/v1/mobile/journeys/siteverify", e.Dev.MobileSecret, sv).Decode(t, &v)
	if v.Success || !strings.Contains(strings.Join(v.ErrorCodes, ","), "timeout-or-duplicate") {
		t.Fatalf("mobile journey siteverify replay: %+v", v)
	}

	// Escalation: a case reference and the escalated status; the journey
	// then refuses to complete (assisted review never approves a proof).
	st2 := start("order-m2")
	esc := mob("session_token", st2.SessionToken, "reason_code", "stuck", "priority", "high", "operation_label", "payment")
	mobileCallerChecks(t, e.Node, "/v1/mobile/journeys/escalate", e.Dev.MobileSecret, e.Dev.Secret, esc)
	e.Do("POST", "/v1/mobile/journeys/escalate", e.Dev.MobileSecret, mob("session_token", st2.SessionToken, "reason_code", "Alice said so")).Want(t,
		400, "invalid-journey-request")

	r = e.Do("POST", "/v1/mobile/journeys/escalate", e.Dev.MobileSecret, esc)
	var ea struct {
		Success       bool   `json:"success"`
		CaseReference string `json:"case_reference"`
		Status        string `json:"status"`
	}
	r.Decode(t, &ea)
	if r.Status != 200 || !ea.Success || !strings.HasPrefix(ea.CaseReference, "case_") || ea.Status != "escalated" {
		t.Fatalf("mobile escalate: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "alice") || strings.Contains(string(r.Body), st2.SessionToken) {
		t.Fatalf("the escalation answer is not privacy-safe: %s", r.Body)
	}
	r = e.Do("POST", "/v1/mobile/journeys/status", e.Dev.MobileSecret, mob("session_token", st2.SessionToken))
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"escalated"`) {
		t.Fatalf("status after escalation: %d %s", r.Status, r.Body)
	}
	e.Do("POST", "/v1/journeys/escalate", "", map[string]any{"secret": e.Dev.Secret, "session_token": st2.SessionToken, "reason_code": "stuck"}).Want(t,
		404, "invalid-journey-session")

}
