package api_test

import (
	nethttp "net/http"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node/nodetest"
	api "github.com/trustd/trustd/risk/api"
	"github.com/trustd/trustd/risk/apiprotection"
)

// apNode is a node with a workspace, a site and a site.verify credential.
type apNode struct {
	*nodetest.Node
	ws, secret, credential string
}

func mustStartAPNode(t *testing.T) *apNode {
	t.Helper()
	tn := nodetest.Start(t)
	ten := tn.MustTenant("ap")
	return &apNode{Node: tn, ws: ten.WorkspaceID, secret: ten.Secret, credential: ten.Credential}
}

func (tn *apNode) wsPath(p string) string { return "/admin/v1/workspaces/" + tn.ws + p }

// do sends a request and returns status, headers and body.
func (tn *apNode) do(method, path, bearer string, body any) (int, nethttp.Header, []byte) {
	tn.T.Helper()
	r := tn.Do(method, path, bearer, body)
	return r.Status, r.Header, r.Body
}

// admin sends an admin request, wants status want and decodes into out.
func (tn *apNode) admin(method, path string, body any, want int, out any) {
	tn.T.Helper()
	r := tn.Do(method, path, tn.N.AdminToken(), body)
	if r.Status != want {
		tn.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	if out != nil {
		r.Decode(tn.T, out)
	}
}

func (tn *apNode) assess(bearer string, body map[string]any) (int, apiprotection.APIAssessment, []byte) {
	tn.T.Helper()
	st, _, b := tn.do("POST", "/v1/api-protection/assess", bearer, body)
	var a apiprotection.APIAssessment
	if st == 200 {
		if err := json.Unmarshal(b, &a, json.RejectUnknownMembers(true)); err != nil {
			tn.T.Fatalf("assessment does not match the contract: %v: %s", err, b)
		}
	}
	return st, a, b
}

func TestAPIProtectionAssess(t *testing.T) {
	tn := mustStartAPNode(t)
	var pol api.APIProtectionPolicyView
	tn.admin("POST", tn.wsPath("/api-protection-policies"), map[string]any{"name": "orders", "path_pattern": "/v2/orders/*",
		"require_authentication": true, "enforcement_mode": "enforce",
		"limits":   map[string]any{"body_bytes": 1000, "page_size": 100, "query_depth": 3, "resource_cost": 10},
		"velocity": map[string]any{"window_seconds": 60, "per_subject": 2}}, 201, &pol)
	tn.admin("POST", tn.wsPath("/api-protection-policies"), map[string]any{"name": "search observe", "path_pattern": "/search",
		"limits": map[string]any{"page_size": 10}}, 201, nil)

	base := func(extra map[string]any) map[string]any {
		b := map[string]any{"method": "POST", "path": "/v2/orders/1", "authentication_present": true, "content_type": "application/json", "body_bytes": 10}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name           string
		body           map[string]any
		classification string
		decision       string
		reason         string
	}{
		{"a request within the policy is low risk and allowed", base(nil), "low", "allow", ""},
		{"a missing authentication is medium risk and throttled", base(map[string]any{"authentication_present": false}), "medium", "throttle", "authentication-missing"},
		{"several shape violations are high risk and rejected", base(map[string]any{"body_bytes": 5000, "page_size": 500, "query_depth": 9}), "high", "reject", "query-depth-exceeded"},
		{"an excessive resource cost is scored", base(map[string]any{"resource_cost": 50, "authentication_present": false}), "high", "reject", "resource-cost-exceeded"},
		{"a path no policy covers says no-matching-policy", base(map[string]any{"path": "/other"}), "low", "allow", "no-matching-policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, a, b := tn.assess(tn.credential, tc.body)
			if st != 200 || a.Classification != tc.classification || a.Decision != tc.decision || (tc.reason != "" && !slices.Contains(a.ReasonCodes, tc.reason)) {
				t.Fatalf("%d %s", st, b)
			}
		})
	}
	t.Run("observe mode recommends but applies allow", func(t *testing.T) {
		_, a, b := tn.assess("", map[string]any{"secret": tn.secret, "method": "GET", "path": "/search", "page_size": 500, "body_bytes": 10, "content_type": "text/plain"})
		if a.EnforcementMode != "observe" || a.RecommendedDecision == "allow" || a.Decision != "allow" || a.PolicyName != "search observe" {
			t.Fatalf("%s", b)
		}
	})
	t.Run("velocity per subject over the threshold raises risk with retry guidance", func(t *testing.T) {
		var a apiprotection.APIAssessment
		for i := 0; i < 3; i++ {
			_, a, _ = tn.assess(tn.credential, base(map[string]any{"subject_id": "mallory"}))
		}
		if !slices.Contains(a.ReasonCodes, "velocity-subject-exceeded") || a.RetryAfterSeconds < 1 || a.RetryAfterSeconds > 60 || a.Decision != "throttle" {
			t.Fatalf("%+v", a)
		}
		if _, a, _ := tn.assess(tn.credential, base(map[string]any{"subject_id": "carol"})); slices.Contains(a.ReasonCodes, "velocity-subject-exceeded") {
			t.Fatal("another subject shares mallory's counter")
		}
	})
	t.Run("an idempotency key reused with another payload is scored, a retry is not", func(t *testing.T) {
		tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "aaa"}))
		_, a, _ := tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "aaa"}))
		if !slices.Contains(a.ReasonCodes, "idempotent-retry") || a.RiskScore != 0 {
			t.Fatalf("%+v", a)
		}
		_, a, _ = tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "bbb"}))
		if !slices.Contains(a.ReasonCodes, "idempotency-key-reused-with-different-payload") || a.Classification == "low" {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("authentication errors", func(t *testing.T) {
		var weak struct {
			Credential string `json:"credential"`
		}
		tn.admin("POST", tn.wsPath("/credentials"), map[string]any{"name": "weak", "scopes": []string{"identity.verify"}}, 201, &weak)
		for _, tc := range []struct {
			name   string
			bearer string
			body   map[string]any
			status int
		}{
			{"no credential is 401", "", base(nil), 401},
			{"an unknown bearer is 401", "cred_nope", base(nil), 401},
			{"a wrong body secret is 401", "", base(map[string]any{"secret": "sk_live_nope"}), 401},
			{"a credential without site.verify is 403", weak.Credential, base(nil), 403},
			{"an invalid path is 400", tn.credential, base(map[string]any{"path": "orders?x"}), 400},
			{"a negative size is 400", tn.credential, base(map[string]any{"body_bytes": -1}), 400},
			{"an unknown field is 400", tn.credential, base(map[string]any{"risk_score": 0.1}), 400},
		} {
			if st, _, b := tn.assess(tc.bearer, tc.body); st != tc.status {
				t.Errorf("%s: got %d %s", tc.name, st, b)
			}
		}
	})
}

func TestAPIProtectionFeedback(t *testing.T) {
	tn := mustStartAPNode(t)
	tn.admin("POST", tn.wsPath("/api-protection-policies"), map[string]any{"name": "all", "path_pattern": "*"}, 201, nil)
	_, a, _ := tn.assess(tn.credential, map[string]any{"method": "GET", "path": "/x", "subject_id": "eve"})
	fb := func(body map[string]any) (int, apiprotection.FeedbackRecord) {
		st, _, b := tn.do("POST", "/v1/api-protection/feedback", tn.credential, body)
		var r apiprotection.FeedbackRecord
		if st == 200 {
			if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
		}
		return st, r
	}
	st, first := fb(map[string]any{"assessment_id": a.AssessmentID, "label": "abuse", "reason_code": "scraping"})
	if st != 200 || !first.Accepted || first.FeedbackID == "" {
		t.Fatalf("%d %+v", st, first)
	}
	t.Run("an exact retry is de-duplicated to the first feedback id", func(t *testing.T) {
		if _, again := fb(map[string]any{"assessment_id": a.AssessmentID, "label": "abuse", "reason_code": "scraping"}); again.FeedbackID != first.FeedbackID {
			t.Fatalf("%+v vs %+v", again, first)
		}
	})
	t.Run("an abuse label raises the subject's later risk", func(t *testing.T) {
		_, later, _ := tn.assess(tn.credential, map[string]any{"method": "GET", "path": "/x", "subject_id": "eve"})
		if !slices.Contains(later.ReasonCodes, "prior-abuse-feedback") || later.RiskScore < 0.3 {
			t.Fatalf("%+v", later)
		}
	})
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"an unknown assessment is 404", map[string]any{"assessment_id": "00000000-0000-4000-8000-000000000000", "label": "abuse", "reason_code": "other"}, 404},
		{"a malformed assessment id is 400", map[string]any{"assessment_id": "x", "label": "abuse", "reason_code": "other"}, 400},
		{"an unknown label is 400", map[string]any{"assessment_id": a.AssessmentID, "label": "meh", "reason_code": "other"}, 400},
		{"an unknown reason code is 400", map[string]any{"assessment_id": a.AssessmentID, "label": "abuse", "reason_code": "because"}, 400},
	} {
		if st, _ := fb(tc.body); st != tc.status {
			t.Errorf("%s: got %d", tc.name, st)
		}
	}
}
