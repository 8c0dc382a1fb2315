package api_test

import (
	"strconv"
	"strings"
	"testing"

	api "github.com/trustd/trustd/traffic/api"
)

func hasReason(codes []string, want string) bool {
	for _, c := range codes {
		if c == want {
			return true
		}
	}
	return false
}

func TestRateLimitCheckRules(t *testing.T) {
	tn := mustStartRLNode(t)

	t.Run("rule 5: no matching policy allows with no-matching-policy", func(t *testing.T) {
		d := tn.check(map[string]any{"action": "nothing.here"})
		if !d.Allowed || d.Decision != "allow" || d.MatchedPolicyCount != 0 || !hasReason(d.ReasonCodes, "no-matching-policy") || d.Remaining != nil {
			t.Fatalf("%+v", d)
		}
	})

	tn.policy(map[string]any{"name": "login enforce", "action_pattern": "login", "bucket": map[string]any{"capacity": 2, "refill_amount": 1, "refill_interval_seconds": 60}})
	t.Run("rules 2 and 3: enforce rejects with HTTP 200, retry guidance and Retry-After", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if d := tn.check(map[string]any{"action": "login"}); !d.Allowed || *d.Remaining != int64(1-i) {
				t.Fatalf("check %d: %+v", i, d)
			}
		}
		st, h, b := tn.do("POST", "/v1/rate-limit/check", tn.secret, map[string]any{"action": "login"})
		if st != 200 {
			t.Fatalf("status %d", st)
		}
		if !strings.Contains(string(b), `"decision":"reject"`) || !strings.Contains(string(b), "token-bucket-exhausted") {
			t.Fatalf("%s", b)
		}
		if ra, _ := strconv.Atoi(h.Get("Retry-After")); ra < 1 || ra > 60 {
			t.Fatalf("Retry-After = %q", h.Get("Retry-After"))
		}
		d := tn.check(map[string]any{"action": "login"})
		if d.RetryAfterMs <= 0 || d.RetryAfterMs > 60_000 || d.RetryAfterSeconds != (d.RetryAfterMs+999)/1000 || d.Allowed {
			t.Fatalf("%+v", d)
		}
	})

	tn.policy(map[string]any{"name": "otp throttle", "action_pattern": "otp.*", "mode": "throttle", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 60}})
	t.Run("rule 2: throttle mode answers throttle", func(t *testing.T) {
		tn.check(map[string]any{"action": "otp.send"})
		d := tn.check(map[string]any{"action": "otp.send"})
		if d.Decision != "throttle" || d.Allowed || d.RetryAfterMs <= 0 {
			t.Fatalf("%+v", d)
		}
		if d := tn.check(map[string]any{"action": "otp"}); d.MatchedPolicyCount != 0 {
			t.Fatalf("otp.* must not match otp itself: %+v", d)
		}
	})

	obs := tn.policy(map[string]any{"name": "search observe", "action_pattern": "search", "mode": "observe", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
	t.Run("rule 2: observe records the restriction, applies allow and uses simulation capacity", func(t *testing.T) {
		tn.check(map[string]any{"action": "search"})
		d := tn.check(map[string]any{"action": "search"})
		if !d.Allowed || d.Decision != "allow" || d.RecommendedDecision != "throttle" || d.Policies[0].Enforced || !hasReason(d.ReasonCodes, "observe-only") {
			t.Fatalf("%+v", d)
		}
		var stats api.RateLimitPolicyStats
		tn.admin("GET", tn.wsPath("/rate-limit-policies/"+obs+"/stats"), nil, 200, &stats)
		if stats.ObservedWouldThrottle != 1 || stats.Matched != 2 || stats.Allowed != 0 {
			t.Fatalf("stats %+v", stats)
		}
		// Enforcing it now starts from live capacity, untouched by observation.
		tn.admin("PATCH", tn.wsPath("/rate-limit-policies/"+obs), map[string]any{"mode": "enforce"}, 200, nil)
		if d := tn.check(map[string]any{"action": "search"}); !d.Allowed || !d.Policies[0].Enforced {
			t.Fatalf("live bucket was consumed by observation: %+v", d)
		}
		if d := tn.check(map[string]any{"action": "search"}); d.Decision != "reject" {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("rule 1: all matching policies must have capacity and a refusal consumes nothing", func(t *testing.T) {
		tn.policy(map[string]any{"name": "pay wide", "action_pattern": "pay.*", "bucket": map[string]any{"capacity": 10, "refill_amount": 1, "refill_interval_seconds": 3600}})
		tn.policy(map[string]any{"name": "pay card", "action_pattern": "pay.card", "mode": "throttle", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		if d := tn.check(map[string]any{"action": "pay.card"}); !d.Allowed || d.MatchedPolicyCount != 2 || *d.Remaining != 0 {
			t.Fatalf("%+v", d)
		}
		for i := 0; i < 3; i++ {
			d := tn.check(map[string]any{"action": "pay.card"})
			if d.Decision != "throttle" {
				t.Fatalf("%+v", d)
			}
			for _, p := range d.Policies {
				if p.Name == "pay wide" && (!p.Refunded || *p.Remaining != 9) {
					t.Fatalf("the wide policy kept a reservation of a refused check: %+v", p)
				}
			}
		}
		d := tn.check(map[string]any{"action": "pay.iban"})
		if !d.Allowed || *d.Remaining != 8 {
			t.Fatalf("the wide policy should hold 9 before this check: %+v", d)
		}
	})

	t.Run("strictest wins: reject over throttle", func(t *testing.T) {
		tn.policy(map[string]any{"name": "x throttle", "action_pattern": "x.y", "mode": "throttle", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		tn.policy(map[string]any{"name": "x enforce", "action_pattern": "x.*", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		tn.check(map[string]any{"action": "x.y"})
		if d := tn.check(map[string]any{"action": "x.y"}); d.Decision != "reject" || d.RecommendedDecision != "reject" {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("cost: the policy cost is the minimum and a larger cost is honoured", func(t *testing.T) {
		tn.policy(map[string]any{"name": "cost", "action_pattern": "export", "default_cost": 3, "bucket": map[string]any{"capacity": 10, "refill_amount": 1, "refill_interval_seconds": 3600}})
		if d := tn.check(map[string]any{"action": "export", "cost": 1}); d.Policies[0].Cost != 3 || *d.Remaining != 7 {
			t.Fatalf("%+v", d)
		}
		if d := tn.check(map[string]any{"action": "export", "cost": 5}); d.Policies[0].Cost != 5 || *d.Remaining != 2 {
			t.Fatalf("%+v", d)
		}
		d := tn.check(map[string]any{"action": "export", "cost": 11})
		if d.Decision != "reject" || d.RetryAfterMs != 0 {
			t.Fatalf("a cost above capacity can never fit, so no wait is advised: %+v", d)
		}
	})

	t.Run("fixed quota: the window's limit is enforced", func(t *testing.T) {
		tn.policy(map[string]any{"name": "quota", "action_pattern": "report", "quota": map[string]any{"limit": 2, "window": "day"},
			"bucket": map[string]any{"capacity": 100, "refill_amount": 100, "refill_interval_seconds": 1}})
		tn.check(map[string]any{"action": "report"})
		if d := tn.check(map[string]any{"action": "report"}); !d.Allowed || *d.Policies[0].Quota.Remaining != 0 {
			t.Fatalf("%+v", d)
		}
		d := tn.check(map[string]any{"action": "report"})
		if d.Allowed || !hasReason(d.ReasonCodes, "fixed-window-quota-exceeded") || d.Policies[0].Quota.ResetsAt == nil || d.RetryAfterMs <= 0 {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("subject scope keeps one bucket per subject", func(t *testing.T) {
		tn.policy(map[string]any{"name": "per subject", "action_pattern": "comment", "scope": "subject", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		tn.check(map[string]any{"action": "comment", "subject_id": "alice"})
		if d := tn.check(map[string]any{"action": "comment", "subject_id": "alice"}); d.Allowed {
			t.Fatalf("%+v", d)
		}
		if d := tn.check(map[string]any{"action": "comment", "subject_id": "bob"}); !d.Allowed {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("method matching: a GET policy ignores the default POST", func(t *testing.T) {
		tn.policy(map[string]any{"name": "get only", "action_pattern": "list", "method": "get", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		if d := tn.check(map[string]any{"action": "list"}); d.MatchedPolicyCount != 0 {
			t.Fatalf("%+v", d)
		}
		if d := tn.check(map[string]any{"action": "list", "method": "GET"}); d.MatchedPolicyCount != 1 {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("a PATCHed capacity takes effect on the next check", func(t *testing.T) {
		id := tn.policy(map[string]any{"name": "grow", "action_pattern": "grow", "bucket": map[string]any{"capacity": 1, "refill_amount": 1, "refill_interval_seconds": 3600}})
		tn.check(map[string]any{"action": "grow"})
		if d := tn.check(map[string]any{"action": "grow"}); d.Allowed {
			t.Fatalf("%+v", d)
		}
		tn.admin("PATCH", tn.wsPath("/rate-limit-policies/"+id), map[string]any{"bucket": map[string]any{"capacity": 100, "refill_amount": 100, "refill_interval_seconds": 1}}, 200, nil)
		// Raising capacity mints no tokens at once, but the next check
		// sees the new capacity and the new refill rate.
		if d := tn.check(map[string]any{"action": "grow"}); d.Policies[0].Capacity != 100 || d.RetryAfterMs > 1000 {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("enforce_percentage splits keys stably between enforced and observed", func(t *testing.T) {
		tn.policy(map[string]any{"name": "rollout", "action_pattern": "rollout", "scope": "device", "enforce_percentage": 50,
			"bucket": map[string]any{"capacity": 5, "refill_amount": 1, "refill_interval_seconds": 3600}})
		enforced := 0
		for i := 0; i < 40; i++ {
			dev := "device-" + strconv.Itoa(i)
			a := tn.check(map[string]any{"action": "rollout", "device_id": dev})
			b := tn.check(map[string]any{"action": "rollout", "device_id": dev})
			if a.Policies[0].Enforced != b.Policies[0].Enforced {
				t.Fatalf("device %s flipped between enforced and observed", dev)
			}
			if a.Policies[0].Enforced {
				enforced++
			}
		}
		if enforced == 0 || enforced == 40 {
			t.Fatalf("%d of 40 keys enforced at 50%%", enforced)
		}
	})
}

func TestRateLimitCheckTargets(t *testing.T) {
	tn := mustStartRLNode(t)
	tn.policy(map[string]any{"name": "site only", "action_pattern": "a", "target": map[string]any{"type": "site", "id": tn.siteID}})
	tn.policy(map[string]any{"name": "app only", "action_pattern": "a", "target": map[string]any{"type": "mobile_app", "id": tn.mobileID}})
	d := tn.check(map[string]any{"action": "a"})
	if d.MatchedPolicyCount != 1 || d.Policies[0].Name != "site only" {
		t.Fatalf("site check: %+v", d)
	}
	st, _, b := tn.do("POST", "/v1/mobile/rate-limit/check", tn.mobileSecret, map[string]any{"action": "a", "platform": "android", "app_id": "com.example.app"})
	if st != 200 || !strings.Contains(string(b), `"name":"app only"`) || strings.Contains(string(b), "site only") {
		t.Fatalf("mobile check: %d %s", st, b)
	}
	t.Run("the body secret works when there is no bearer", func(t *testing.T) {
		st, _, b := tn.do("POST", "/v1/rate-limit/check", "", map[string]any{"action": "a", "secret": tn.secret})
		if st != 200 || !strings.Contains(string(b), `"success":true`) {
			t.Fatalf("%d %s", st, b)
		}
	})
}

func TestRateLimitCheckErrors(t *testing.T) {
	tn := mustStartRLNode(t)
	tn.policy(map[string]any{"name": "subj", "action_pattern": "s", "scope": "subject"})
	tn.policy(map[string]any{"name": "dev", "action_pattern": "d", "scope": "device"})
	tn.policy(map[string]any{"name": "route", "action_pattern": "r", "scope": "route"})
	tn.policy(map[string]any{"name": "custom", "action_pattern": "c", "scope": "custom"})
	const check, mobile = "/v1/rate-limit/check", "/v1/mobile/rate-limit/check"
	tests := []struct {
		name   string
		path   string
		bearer string
		body   any
		status int
		code   string
	}{
		{"no secret at all is missing-input-secret", check, "", map[string]any{"action": "a"}, 400, "missing-input-secret"},
		{"an unknown secret is invalid-input-secret", check, "sk_live_nope", map[string]any{"action": "a"}, 400, "invalid-input-secret"},
		{"a mobile secret on the site endpoint is invalid-input-secret", check, tn.mobileSecret, map[string]any{"action": "a"}, 400, "invalid-input-secret"},
		{"two different secrets are refused", check, tn.secret, map[string]any{"action": "a", "secret": "other"}, 400, "invalid-input-secret"},
		{"a missing action is invalid-action", check, tn.secret, map[string]any{}, 400, "invalid-action"},
		{"a malformed action is invalid-action", check, tn.secret, map[string]any{"action": "pay..card"}, 400, "invalid-action"},
		{"a non-string action is invalid-action", check, tn.secret, `{"action":5}`, 400, "invalid-action"},
		{"a subject policy without subject_id is invalid-subject_id", check, tn.secret, map[string]any{"action": "s"}, 400, "invalid-subject_id"},
		{"a subject_id with control characters is invalid-subject_id", check, tn.secret, map[string]any{"action": "s", "subject_id": "a\nb"}, 400, "invalid-subject_id"},
		{"a device policy without device_id is invalid-device_id", check, tn.secret, map[string]any{"action": "d"}, 400, "invalid-device_id"},
		{"a route policy without route is missing-route", check, tn.secret, map[string]any{"action": "r"}, 400, "missing-route"},
		{"a route with a query string is missing-route", check, tn.secret, map[string]any{"action": "r", "route": "/a?b=1"}, 400, "missing-route"},
		{"a custom policy without scope_key is invalid-scope_key", check, tn.secret, map[string]any{"action": "c"}, 400, "invalid-scope_key"},
		{"a fractional cost is invalid-cost", check, tn.secret, `{"action":"a","cost":1.5}`, 400, "invalid-cost"},
		{"a zero cost is invalid-cost", check, tn.secret, `{"action":"a","cost":0}`, 400, "invalid-cost"},
		{"a cost past float64's range is invalid-cost", check, tn.secret, `{"action":"a","cost":1e700}`, 400, "invalid-cost"},
		{"a bad method is invalid-method", check, tn.secret, map[string]any{"action": "a", "method": "GE T"}, 400, "invalid-method"},
		{"a malformed assessment id is refused", check, tn.secret, map[string]any{"action": "a", "api_protection_assessment_id": "x"}, 400, "invalid-api_protection_assessment_id"},
		{"malformed JSON is refused", check, tn.secret, `{"action":`, 400, "malformed-json"},
		{"trailing data is refused", check, tn.secret, `{"action":"a"} {}`, 400, "malformed-json"},
		{"invalid UTF-8 is refused", check, tn.secret, "{\"action\":\"a\",\"subject_id\":\"\xff\"}", 400, "malformed-json"},
		{"a lone surrogate escape is refused", check, tn.secret, `{"action":"a","subject_id":"\ud800"}`, 400, "malformed-json"},
		{"a nested value is refused", check, tn.secret, `{"action":{"a":1}}`, 400, "malformed-json"},
		{"a duplicate key is refused", check, tn.secret, `{"action":"a","action":"b"}`, 400, "unknown-field"},
		{"a duplicate spelled with an escape is refused", check, tn.secret, `{"action":"a","\u0061ction":"b"}`, 400, "unknown-field"},
		{"an unknown field is refused", check, tn.secret, map[string]any{"action": "a", "risk_score": 0}, 400, "unknown-field"},
		{"platform is not a field of the site check", check, tn.secret, map[string]any{"action": "a", "platform": "android"}, 400, "unknown-field"},
		{"a mobile check with another app_id is invalid-app-identity", mobile, tn.mobileSecret, map[string]any{"action": "a", "platform": "android", "app_id": "com.other"}, 403, "invalid-app-identity"},
		{"a mobile check with another platform is invalid-app-identity", mobile, tn.mobileSecret, map[string]any{"action": "a", "platform": "ios", "app_id": "com.example.app"}, 403, "invalid-app-identity"},
		{"a mobile check without app identity is invalid-app-identity", mobile, tn.mobileSecret, map[string]any{"action": "a"}, 403, "invalid-app-identity"},
		{"a site secret on the mobile endpoint is invalid-input-secret", mobile, tn.secret, map[string]any{"action": "a", "platform": "android", "app_id": "com.example.app"}, 400, "invalid-input-secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, code := tn.specErr(tc.path, tc.bearer, tc.body)
			if st != tc.status || code != tc.code {
				t.Fatalf("got %d %s, want %d %s", st, code, tc.status, tc.code)
			}
		})
	}

	t.Run("a sandbox secret is refused by the production check", func(t *testing.T) {
		var sb struct {
			Secret string `json:"secret"`
		}
		tn.admin("POST", tn.wsPath("/sites"), map[string]any{"name": "sb", "environment": "sandbox"}, 201, &sb)
		if st, code := tn.specErr(check, sb.Secret, map[string]any{"action": "a"}); st != 400 || code != "invalid-input-secret" {
			t.Fatalf("%d %s", st, code)
		}
	})
	t.Run("a workspace that disabled rate limiting answers 403 rate-limiting-disabled", func(t *testing.T) {
		tn.admin("PATCH", tn.wsPath(""), map[string]any{"rate_limiting_enabled": false}, 200, nil)
		defer tn.admin("PATCH", tn.wsPath(""), map[string]any{"rate_limiting_enabled": true}, 200, nil)
		if st, code := tn.specErr(check, tn.secret, map[string]any{"action": "a"}); st != 403 || code != "rate-limiting-disabled" {
			t.Fatalf("%d %s", st, code)
		}
	})
	t.Run("over the credential's ingress limit the endpoint answers 429 rate-limit-exceeded", func(t *testing.T) {
		tn.admin("PATCH", tn.wsPath(""), map[string]any{"ingress_per_second": 1, "ingress_burst": 1}, 200, nil)
		defer tn.admin("PATCH", tn.wsPath(""), map[string]any{"ingress_per_second": 0, "ingress_burst": 0}, 200, nil)
		for i := 0; i < 5; i++ {
			st, h, b := tn.do("POST", check, tn.secret, map[string]any{"action": "a"})
			if st == 429 {
				if !strings.Contains(string(b), `"error":"rate-limit-exceeded"`) || h.Get("Retry-After") == "" || h.Get("X-RateLimit-Limit") == "" {
					t.Fatalf("%v %s", h, b)
				}
				return
			}
		}
		t.Fatal("five immediate checks never met the ingress limit of 1/s")
	})
}
