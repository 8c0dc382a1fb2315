package api_test

import (
	"testing"

	"github.com/go-json-experiment/json"

	api "github.com/trustd/trustd/traffic/api"
)

// assessment is the part of an API Protection assessment the adaptive
// cost reads; the answer is checked against the contract by nodetest, so
// the test needs no type of the risk area (a change there does not
// recompile this package's tests).
type assessment struct {
	AssessmentID   string `json:"assessment_id"`
	Classification string `json:"classification"`
}

func (tn *rlNode) assess(bearer string, body map[string]any) (int, assessment, []byte) {
	tn.t.Helper()
	st, _, b := tn.do("POST", "/v1/api-protection/assess", bearer, body)
	var a assessment
	if st == 200 {
		if err := json.Unmarshal(b, &a, json.RejectUnknownMembers(false)); err != nil || a.AssessmentID == "" {
			tn.t.Fatalf("assessment: %v: %s", err, b)
		}
	}
	return st, a, b
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

	var ap struct {
		PolicyID        string `json:"policy_id"`
		PathPattern     string `json:"path_pattern"`
		EnforcementMode string `json:"enforcement_mode"`
		Revision        int64  `json:"revision"`
	}
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
