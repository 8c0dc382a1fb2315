package http_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/risk/trust"
)

// The mobile operations answer what their server counterparts answer, for
// the registered app's own mobile secret and identity only. Each test
// reads the answers, not just the status.

// mobileCallerChecks runs the refusals every mobile operation shares on a
// valid body: another app id is 403 invalid-app-identity, a body secret is
// 400 invalid-field, no bearer is 401 unauthorized, and the site's secret
// as bearer is 401 unauthorized.
func mobileCallerChecks(t *testing.T, tn *testNode, path, mobileSecret, siteSecret string, body map[string]any) {
	t.Helper()
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range body {
			out[kk] = vv
		}
		out[k] = v
		return out
	}
	wantCode(t, tn.do("POST", path, mobileSecret, with("app_id", "com.other.app")), 403, "invalid-app-identity")
	wantCode(t, tn.do("POST", path, mobileSecret, with("platform", "ios")), 403, "invalid-app-identity")
	if r := tn.do("POST", path, mobileSecret, with("secret", siteSecret)); r.status != 400 || (r.errorCode(t) != "invalid-field" && r.errorCode(t) != "unknown-field") {
		t.Fatalf("a body secret on %s: %d %s, want 400 invalid-field or unknown-field", path, r.status, r.body)
	}
	wantCode(t, tn.do("POST", path, "", body), 401, "unauthorized")
	wantCode(t, tn.do("POST", path, siteSecret, body), 401, "unauthorized")
}

func TestMobileTrustOrchestrateReceiptsAndFeedback(t *testing.T) {
	e := startTrustNode(t)
	mob := func(kv ...any) map[string]any {
		m := map[string]any{"platform": e.dev.MobilePlatform, "app_id": e.dev.MobileAppID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	proof := e.proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelStandard, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: "transfer-7", Action: "transfer", AuthTime: time.Now()})
	r := e.do("POST", "/v1/mobile/trust/siteverify", e.dev.MobileSecret, mob("response", proof, "action", "transfer", "expected_assurance", "standard",
		"require_identity", true, "require_liveness", true, "require_operation_binding", true, "operation_reference", "transfer-7"))
	var sv svAnswer
	r.decode(t, &sv)
	if r.status != 200 || !sv.Success || sv.AssessmentID == "" || sv.Trust == nil || sv.Trust.AssuranceLevel != "standard" || !sv.Trust.OperationBound {
		t.Fatalf("mobile siteverify: %d %s", r.status, r.body)
	}

	// Orchestrate: the same refusals as every mobile operation, then one
	// decision with a receipt, once.
	orch := mob("assessment_id", sv.AssessmentID, "subject_id", "alice", "action", "transfer", "operation_reference", "transfer-7")
	mobileCallerChecks(t, e.testNode, "/v1/mobile/trust/orchestrate", e.dev.MobileSecret, e.dev.Secret, orch)
	wantCode(t, e.do("POST", "/v1/mobile/trust/orchestrate", e.dev.MobileSecret, mob("assessment_id", sv.AssessmentID, "subject_id", "bob",
		"action", "transfer", "operation_reference", "transfer-7")), 409, "assessment-context-mismatch")
	r = e.do("POST", "/v1/mobile/trust/orchestrate", e.dev.MobileSecret, orch)
	var o struct {
		decisionAnswer
		ReceiptExpiresAt int64 `json:"receipt_expires_at"`
	}
	r.decode(t, &o)
	if r.status != 200 || !o.Success || o.Decision != "allow" || o.AssuranceLevel != "standard" || o.DecisionID == "" ||
		!strings.HasPrefix(o.Receipt, "ey") || o.ReceiptExpiresAt <= time.Now().Unix() {
		t.Fatalf("mobile orchestrate: %d %s", r.status, r.body)
	}
	if h := receiptHeader(t, o.Receipt); h["alg"] != "Ed25519" {
		t.Fatalf("receipt header %v", h)
	}
	wantCode(t, e.do("POST", "/v1/mobile/trust/orchestrate", e.dev.MobileSecret, orch), 409, "assessment-already-orchestrated")

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
	mobileCallerChecks(t, e.testNode, "/v1/mobile/trust/receipts/verify", e.dev.MobileSecret, e.dev.Secret, ver)
	var v rv
	e.do("POST", "/v1/mobile/trust/receipts/verify", e.dev.MobileSecret, ver).decode(t, &v)
	if !v.Success || len(v.ErrorCodes) != 0 || v.Claims == nil || v.Claims.Aud != e.dev.WorkspaceID || v.Claims.Jti != o.DecisionID ||
		v.Claims.Action != "transfer" || v.Claims.OperationReference != "transfer-7" || v.Claims.Decision != "allow" || v.Claims.AssuranceLevel != "standard" {
		t.Fatalf("mobile receipt verify: %+v", v)
	}
	v = rv{}
	e.do("POST", "/v1/mobile/trust/receipts/verify", e.dev.MobileSecret, mob("receipt", o.Receipt, "action", "refund", "subject_id", "bob")).decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "action-mismatch,subject-mismatch" || v.Claims == nil {
		t.Fatalf("mobile receipt verify with other bindings: %+v", v)
	}
	v = rv{}
	e.do("POST", "/v1/mobile/trust/receipts/verify", e.dev.MobileSecret, mob("receipt", "a.b.c")).decode(t, &v)
	if v.Success || strings.Join(v.ErrorCodes, ",") != "invalid-receipt" || v.Claims != nil {
		t.Fatalf("mobile receipt verify of garbage: %+v", v)
	}
	wantCode(t, e.do("POST", "/v1/mobile/trust/receipts/verify", e.dev.MobileSecret, mob()), 400, "invalid-field")
	v = rv{}
	e.post("/trust/receipts/verify", map[string]any{"receipt": o.Receipt}).decode(t, &v)
	if !v.Success {
		t.Fatalf("the server operation verifies the app's receipt: %+v", v)
	}

	// Feedback on the decision: an id, and an exact retry is the same one.
	fb := mob("decision_id", o.DecisionID, "label", "legitimate", "reason_code", "passed_step_up")
	mobileCallerChecks(t, e.testNode, "/v1/mobile/trust/feedback", e.dev.MobileSecret, e.dev.Secret, fb)
	type fa struct {
		Success    bool   `json:"success"`
		FeedbackID string `json:"feedback_id"`
		Duplicate  bool   `json:"duplicate"`
	}
	var f1, f2 fa
	if r := e.do("POST", "/v1/mobile/trust/feedback", e.dev.MobileSecret, fb); r.status != 200 {
		t.Fatalf("mobile feedback: %d %s", r.status, r.body)
	} else {
		r.decode(t, &f1)
	}
	e.do("POST", "/v1/mobile/trust/feedback", e.dev.MobileSecret, fb).decode(t, &f2)
	if !f1.Success || f1.FeedbackID == "" || f1.Duplicate || !f2.Success || !f2.Duplicate || f2.FeedbackID != f1.FeedbackID {
		t.Fatalf("mobile feedback then its retry: %+v %+v", f1, f2)
	}
	wantCode(t, e.do("POST", "/v1/mobile/trust/feedback", e.dev.MobileSecret, mob("decision_id", "8d8ac610-566d-4ef0-9c22-186b2a5ed793",
		"label", "fraudulent", "reason_code", "chargeback")), 404, "unknown-decision")
}

func TestMobileJourneySiteverifyAndEscalateAnswers(t *testing.T) {
	e := startJourneyNode(t)
	// Passkeys and widget tokens need a site's domain; an app's journey
	// completes with a facial method, here over the fake presence check.
	e.n.Journeys().WithFace(fakePresence{}, nil, nil)
	if r := e.do("PUT", "/admin/v1/workspaces/"+e.dev.WorkspaceID+"/journeys/live", e.dev.AdminToken, map[string]any{
		"name": "Live check", "method": "facial_liveness", "consent": map[string]any{"required": true, "version": "c1"},
		"requirements": map[string]any{"liveness": true, "operation_binding": true}}); r.status != 200 {
		t.Fatalf("define: %d %s", r.status, r.body)
	}
	mob := func(kv ...any) map[string]any {
		m := map[string]any{"platform": e.dev.MobilePlatform, "app_id": e.dev.MobileAppID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	start := func(op string) startAnswer {
		t.Helper()
		r := e.do("POST", "/v1/mobile/journeys/start", e.dev.MobileSecret, mob("journey_key", "live", "subject_id", "alice", "action", "pay",
			"operation_reference", op, "consent_version", "c1"))
		if r.status != 200 {
			t.Fatalf("mobile start: %d %s", r.status, r.body)
		}
		var st startAnswer
		r.decode(t, &st)
		return st
	}
	st := start("order-m1")
	capability := capabilityOf(t, st.Endpoint)
	if r := e.do("POST", "/v1/journeys/person/face/begin", "", nil, "X-Service-Journey-Token", capability); r.status != 200 {
		t.Fatalf("face begin: %d %s", r.status, r.body)
	}
	frame := base64.StdEncoding.EncodeToString([]byte("face:a"))
	r := e.do("POST", "/v1/journeys/person/face/complete", "", map[string]any{"frames": []any{map[string]any{"image": frame, "offset_ms": 0}}},
		"X-Service-Journey-Token", capability)
	var out attemptAnswer
	r.decode(t, &out)
	proof := out.Response
	if r.status != 200 || !out.Success || !strings.HasPrefix(proof, "tp1_") {
		t.Fatalf("face completion: %d %s", r.status, r.body)
	}
	sv := mob("session_token", st.SessionToken, "response", proof, "subject_id", "alice", "action", "pay",
		"operation_reference", "order-m1", "consent_version", "c1", "consent_accepted", true)
	mobileCallerChecks(t, e.testNode, "/v1/mobile/journeys/siteverify", e.dev.MobileSecret, e.dev.Secret, sv)
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
	e.post("/journeys/siteverify", site).decode(t, &v)
	if v.Success || len(v.ErrorCodes) == 0 {
		t.Fatalf("the site redeemed the app's journey: %+v", v)
	}
	v = verifyAnswer{}
	r = e.do("POST", "/v1/mobile/journeys/siteverify", e.dev.MobileSecret, sv)
	r.decode(t, &v)
	if r.status != 200 || !v.Success || len(v.ErrorCodes) != 0 || v.Trust == nil || v.Journey == nil ||
		v.Trust.Method != "facial_liveness" || !v.Trust.LivenessVerified || !v.Trust.OperationBound || v.Trust.Authorization ||
		v.Journey.Key != "live" || v.Journey.Status != "completed" {
		t.Fatalf("mobile journey siteverify: %d %s", r.status, r.body)
	}
	v = verifyAnswer{}
	e.do("POST", "/v1/mobile/journeys/siteverify", e.dev.MobileSecret, sv).decode(t, &v)
	if v.Success || !strings.Contains(strings.Join(v.ErrorCodes, ","), "timeout-or-duplicate") {
		t.Fatalf("mobile journey siteverify replay: %+v", v)
	}

	// Escalation: a case reference and the escalated status; the journey
	// then refuses to complete (assisted review never approves a proof).
	st2 := start("order-m2")
	esc := mob("session_token", st2.SessionToken, "reason_code", "stuck", "priority", "high", "operation_label", "payment")
	mobileCallerChecks(t, e.testNode, "/v1/mobile/journeys/escalate", e.dev.MobileSecret, e.dev.Secret, esc)
	wantCode(t, e.do("POST", "/v1/mobile/journeys/escalate", e.dev.MobileSecret, mob("session_token", st2.SessionToken, "reason_code", "Alice said so")),
		400, "invalid-journey-request")
	r = e.do("POST", "/v1/mobile/journeys/escalate", e.dev.MobileSecret, esc)
	var ea struct {
		Success       bool   `json:"success"`
		CaseReference string `json:"case_reference"`
		Status        string `json:"status"`
	}
	r.decode(t, &ea)
	if r.status != 200 || !ea.Success || !strings.HasPrefix(ea.CaseReference, "case_") || ea.Status != "escalated" {
		t.Fatalf("mobile escalate: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "alice") || strings.Contains(string(r.body), st2.SessionToken) {
		t.Fatalf("the escalation answer is not privacy-safe: %s", r.body)
	}
	r = e.do("POST", "/v1/mobile/journeys/status", e.dev.MobileSecret, mob("session_token", st2.SessionToken))
	if r.status != 200 || !strings.Contains(string(r.body), `"status":"escalated"`) {
		t.Fatalf("status after escalation: %d %s", r.status, r.body)
	}
	wantCode(t, e.do("POST", "/v1/journeys/escalate", "", map[string]any{"secret": e.dev.Secret, "session_token": st2.SessionToken, "reason_code": "stuck"}),
		404, "invalid-journey-session")
}
