package http_test

import (
	"testing"

	"github.com/go-json-experiment/json"

	api "github.com/trustd/trustd/http"
	"github.com/trustd/trustd/risk/apiprotection"
)

func (tn *rlNode) assess(bearer string, body map[string]any) (int, apiprotection.APIAssessment, []byte) {
	tn.t.Helper()
	st, _, b := tn.do("POST", "/v1/api-protection/assess", bearer, body)
	var a apiprotection.APIAssessment
	if st == 200 {
		if err := json.Unmarshal(b, &a, json.RejectUnknownMembers(true)); err != nil {
			tn.t.Fatalf("assessment does not match the contract: %v: %s", err, b)
		}
	}
	return st, a, b
}

func TestAPIProtectionAssess(t *testing.T) {
	tn := mustStartRLNode(t)
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
			if st != 200 || a.Classification != tc.classification || a.Decision != tc.decision || (tc.reason != "" && !hasReason(a.ReasonCodes, tc.reason)) {
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
		if !hasReason(a.ReasonCodes, "velocity-subject-exceeded") || a.RetryAfterSeconds < 1 || a.RetryAfterSeconds > 60 || a.Decision != "throttle" {
			t.Fatalf("%+v", a)
		}
		if _, a, _ := tn.assess(tn.credential, base(map[string]any{"subject_id": "carol"})); hasReason(a.ReasonCodes, "velocity-subject-exceeded") {
			t.Fatal("another subject shares mallory's counter")
		}
	})
	t.Run("an idempotency key reused with another payload is scored, a retry is not", func(t *testing.T) {
		tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "aaa"}))
		_, a, _ := tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "aaa"}))
		if !hasReason(a.ReasonCodes, "idempotent-retry") || a.RiskScore != 0 {
			t.Fatalf("%+v", a)
		}
		_, a, _ = tn.assess(tn.credential, base(map[string]any{"idempotency_key": "k1", "payload_fingerprint": "bbb"}))
		if !hasReason(a.ReasonCodes, "idempotency-key-reused-with-different-payload") || a.Classification == "low" {
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
	tn := mustStartRLNode(t)
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
		if !hasReason(later.ReasonCodes, "prior-abuse-feedback") || later.RiskScore < 0.3 {
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

func TestAdaptiveCost(t *testing.T) {
	tn := mustStartRLNode(t)
	tn.admin("POST", tn.wsPath("/api-protection-policies"), map[string]any{"name": "strict", "path_pattern": "*", "require_authentication": true,
		"limits": map[string]any{"body_bytes": 10}}, 201, nil)
	tn.policy(map[string]any{"name": "adaptive", "action_pattern": "pay", "adaptive_cost": true,
		"bucket": map[string]any{"capacity": 100, "refill_amount": 1, "refill_interval_seconds": 3600}})
	risky := map[string]any{"secret": tn.secret, "method": "POST", "path": "/pay", "authentication_present": false, "body_bytes": 99}
	_, a, _ := tn.assess("", risky)
	if a.Classification != "high" {
		t.Fatalf("setup: %+v", a)
	}
	t.Run("the workspace switch is off by default, so the multiplier is 1", func(t *testing.T) {
		if d := tn.check(map[string]any{"action": "pay", "api_protection_assessment_id": a.AssessmentID}); d.AdaptiveMultiplier != 1 || d.Policies[0].Cost != 1 {
			t.Fatalf("%+v", d)
		}
	})
	tn.admin("PATCH", tn.wsPath(""), map[string]any{"adaptive_cost_enabled": true}, 200, nil)
	t.Run("a fresh authoritative assessment of the same site multiplies the cost by its risk", func(t *testing.T) {
		d := tn.check(map[string]any{"action": "pay", "api_protection_assessment_id": a.AssessmentID})
		if d.AdaptiveMultiplier != 4 || d.Policies[0].Cost != 4 || !hasReason(d.ReasonCodes, "adaptive-cost-applied") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("an assessment made with a workspace credential belongs to no site and is ignored", func(t *testing.T) {
		delete(risky, "secret")
		_, ca, _ := tn.assess(tn.credential, risky)
		d := tn.check(map[string]any{"action": "pay", "api_protection_assessment_id": ca.AssessmentID})
		if d.AdaptiveMultiplier != 1 || !hasReason(d.ReasonCodes, "adaptive-assessment-unusable") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("an unknown assessment id is ignored", func(t *testing.T) {
		d := tn.check(map[string]any{"action": "pay", "api_protection_assessment_id": "00000000-0000-4000-8000-000000000000"})
		if d.AdaptiveMultiplier != 1 || !hasReason(d.ReasonCodes, "adaptive-assessment-unusable") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("a policy without adaptive cost is not multiplied", func(t *testing.T) {
		tn.policy(map[string]any{"name": "plain", "action_pattern": "plain", "bucket": map[string]any{"capacity": 100, "refill_amount": 1, "refill_interval_seconds": 3600}})
		d := tn.check(map[string]any{"action": "plain", "api_protection_assessment_id": a.AssessmentID})
		if d.AdaptiveMultiplier != 1 || d.Policies[0].Cost != 1 {
			t.Fatalf("%+v", d)
		}
	})
}

func TestPolicyAdminValidation(t *testing.T) {
	tn := mustStartRLNode(t)
	good := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "p", "target": map[string]any{"type": "workspace"}, "action_pattern": "*", "scope": "workspace",
			"bucket": map[string]any{"capacity": 5, "refill_amount": 1, "refill_interval_seconds": 60}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"a missing name", good(map[string]any{"name": ""})},
		{"an unknown target type", good(map[string]any{"target": map[string]any{"type": "galaxy"}})},
		{"a site of nobody", good(map[string]any{"target": map[string]any{"type": "site", "id": "nope"}})},
		{"a malformed pattern", good(map[string]any{"action_pattern": "pay*"})},
		{"an unknown scope", good(map[string]any{"scope": "planet"})},
		{"a zero capacity", good(map[string]any{"bucket": map[string]any{"capacity": 0, "refill_amount": 1, "refill_interval_seconds": 60}})},
		{"a refill above capacity", good(map[string]any{"bucket": map[string]any{"capacity": 5, "refill_amount": 6, "refill_interval_seconds": 60}})},
		{"a zero interval", good(map[string]any{"bucket": map[string]any{"capacity": 5, "refill_amount": 1, "refill_interval_seconds": 0}})},
		{"a default cost above capacity", good(map[string]any{"default_cost": 6})},
		{"an unknown quota window", good(map[string]any{"quota": map[string]any{"limit": 5, "window": "week"}})},
		{"an unknown mode", good(map[string]any{"mode": "panic"})},
		{"an unknown degraded behaviour", good(map[string]any{"degraded_behaviour": "shrug"})},
		{"an enforce percentage above 100", good(map[string]any{"enforce_percentage": 101})},
	} {
		if st, _, b := tn.do("POST", tn.wsPath("/rate-limit-policies"), tn.n.AdminToken(), tc.body); st != 400 {
			t.Errorf("%s: got %d %s", tc.name, st, b)
		}
	}
	var p api.RateLimitPolicyView
	tn.admin("POST", tn.wsPath("/rate-limit-policies"), good(map[string]any{"quota": map[string]any{"limit": 5, "window": "month"}}), 201, &p)
	if p.Method != "*" || p.Mode != "workspace_default" || p.DegradedBehaviour != "fail_open" || p.EnforcePercentage != 100 || p.DefaultCost != 1 || p.Revision != 1 {
		t.Fatalf("defaults: %+v", p)
	}
	var patched api.RateLimitPolicyView
	tn.admin("PATCH", tn.wsPath("/rate-limit-policies/"+p.PolicyID), map[string]any{"quota": nil, "name": "renamed"}, 200, &patched)
	if patched.Quota != nil || patched.Name != "renamed" || patched.Revision != 2 || patched.Bucket.Capacity != 5 {
		t.Fatalf("patch: %+v", patched)
	}
	var list api.RateLimitPolicyList
	tn.admin("GET", tn.wsPath("/rate-limit-policies"), nil, 200, &list)
	if len(list.Policies) != 1 {
		t.Fatalf("%+v", list)
	}
	tn.admin("DELETE", tn.wsPath("/rate-limit-policies/"+p.PolicyID), nil, 204, nil)
	tn.admin("GET", tn.wsPath("/rate-limit-policies/"+p.PolicyID), nil, 404, nil)

	var ap api.APIProtectionPolicyView
	tn.admin("POST", tn.wsPath("/api-protection-policies"), map[string]any{"name": "a", "path_pattern": "/x/*"}, 201, &ap)
	tn.admin("PATCH", tn.wsPath("/api-protection-policies/"+ap.PolicyID), map[string]any{"enforcement_mode": "enforce"}, 200, &ap)
	if ap.EnforcementMode != "enforce" || ap.PathPattern != "/x/*" || ap.Revision != 2 {
		t.Fatalf("%+v", ap)
	}
	for _, bad := range []map[string]any{
		{"name": "a", "path_pattern": "x"},
		{"name": "a", "path_pattern": "/a*b"},
		{"name": "a", "path_pattern": "/a", "enforcement_mode": "maybe"},
		{"name": "a", "path_pattern": "/a", "velocity": map[string]any{"window_seconds": -1}},
	} {
		if st, _, b := tn.do("POST", tn.wsPath("/api-protection-policies"), tn.n.AdminToken(), bad); st != 400 {
			t.Errorf("%v: got %d %s", bad, st, b)
		}
	}
	t.Run("deleting the workspace deletes its policies", func(t *testing.T) {
		tn.admin("DELETE", tn.wsPath(""), nil, 204, nil)
		cat := tn.n.Store().Catalog()
		if len(cat.APIProtectionPolicies) != 0 || len(cat.RateLimitPolicies) != 0 {
			t.Fatalf("%d %d policies left", len(cat.APIProtectionPolicies), len(cat.RateLimitPolicies))
		}
	})
}
