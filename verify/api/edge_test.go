package api

import (
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/verify"
)

// assessed runs a successful verification and returns its assessment id.
func (e *hvEnv) assessed(t *testing.T, signals map[string]any) string {
	t.Helper()
	m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", e.tokenFor("login", signals)))
	if m["success"] != true {
		t.Fatalf("verification failed: %v", m)
	}
	return m["assessment_id"].(string)
}

func TestPreclearanceBindingAndExpiry(t *testing.T) {
	e := mustNewHVEnv(t)
	aid := e.assessed(t, humanSignals())
	issue := func(body string) resp {
		return e.do(req{path: "/v1/edge/preclearance/issue", ctype: "application/json", body: body})
	}
	if r := issue(`{"secret":"` + e.secret + `","assessment_id":"00000000-0000-4000-8000-000000000000"}`); r.status != 404 || r.json(t)["error"] != "unknown-assessment" {
		t.Fatalf("unknown assessment: %d %s", r.status, r.body)
	}
	if r := e.do(req{path: "/v1/edge/preclearance/issue", ctype: "application/json", body: `{"assessment_id":"` + aid + `"}`,
		headers: map[string]string{"Authorization": "Bearer sk_other"}}); r.status != 404 {
		t.Fatalf("another site's secret must not clear this site's assessment: %d %s", r.status, r.body)
	}
	if r := issue(`{"assessment_id":"` + aid + `"}`); r.status != 401 {
		t.Fatalf("no secret: %d", r.status)
	}
	r := issue(`{"secret":"` + e.secret + `","assessment_id":"` + aid + `","host":"shop.example.com","action":"checkout","path":"/checkout","subject":"user-42","device":"dev-9","ttl_seconds":60}`)
	if r.status != 200 {
		t.Fatalf("issue: %d %s", r.status, r.body)
	}
	var pv verify.PreclearanceView
	if err := json.Unmarshal(r.body, &pv); err != nil || len(pv.Bound) != 6 || pv.ExpiresIn != 60 {
		t.Fatalf("issue answer %s", r.body)
	}
	good := map[string]string{"X-Service-Clearance": pv.Clearance, "X-Forwarded-Host": "shop.example.com",
		"X-Forwarded-Uri": "/checkout/pay?x=1", "X-Service-Action": "checkout", "X-Service-Subject": "user-42", "X-Service-Device": "dev-9"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name    string
		headers map[string]string
		path    string
		status  int
	}{
		{"a request matching every binding is allowed", good, "", 200},
		{"a request without a clearance is refused", with("X-Service-Clearance", ""), "", 401},
		{"another host is refused", with("X-Forwarded-Host", "evil.example.com"), "", 401},
		{"a sibling path is refused", with("X-Forwarded-Uri", "/checkouts"), "", 401},
		{"a request without a forwarded path is the root path, outside the binding", with("X-Forwarded-Uri", ""), "", 401},
		{"another action is refused", with("X-Service-Action", "login"), "", 401},
		{"another subject is refused", with("X-Service-Subject", "user-43"), "", 401},
		{"a missing device is refused", with("X-Service-Device", ""), "", 401},
		{"a pinned site key of another site is refused", good, "?sitekey=site_other", 401},
		{"the right pinned site key is allowed", good, "?sitekey=site_pub", 200},
		// What an origin strips, splits or folds differently (issue 24):
		// path parameters, encoded separators, look-alike dots.
		{"a dot-dot with a path parameter is refused", with("X-Forwarded-Uri", "/checkout/..;/admin"), "", 401},
		{"an encoded dot-dot with a named path parameter is refused", with("X-Forwarded-Uri", "/checkout/%2e%2e;x=1/admin"), "", 401},
		{"an encoded question mark before a dot-dot is refused", with("X-Forwarded-Uri", "/admin%3f/../checkout"), "", 401},
		{"an encoded hash before a dot-dot is refused", with("X-Forwarded-Uri", "/admin%23/../checkout"), "", 401},
		{"overlong UTF-8 dots are refused", with("X-Forwarded-Uri", "/checkout/%c0%ae%c0%ae/admin"), "", 401},
		{"full-width dots are refused", with("X-Forwarded-Uri", "/checkout/%ef%bc%8e%ef%bc%8e/admin"), "", 401},
		{"a two-dot leader is refused", with("X-Forwarded-Uri", "/checkout/%e2%80%a5/admin"), "", 401},
		{"a forged clearance is refused", with("X-Service-Clearance", pv.Clearance[:len(pv.Clearance)-2]+"AA"), "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: "GET", path: "/v1/edge/decision" + tc.path, headers: tc.headers})
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
		})
	}
	cookie := with("X-Service-Clearance", "")
	cookie["Cookie"] = "other=1; trustd_clearance=" + pv.Clearance
	if r := e.do(req{method: "GET", path: "/v1/edge/decision", headers: cookie}); r.status != 200 || r.header["X-Service-Assessment-Id"] != aid {
		t.Fatalf("cookie clearance: %d %v", r.status, r.header)
	}
	nginx := with("X-Forwarded-Uri", "")
	nginx["X-Original-URI"] = "/checkout"
	if r := e.do(req{method: "HEAD", path: "/v1/edge/decision", headers: nginx}); r.status != 200 {
		t.Fatalf("nginx-style HEAD: %d", r.status)
	}
	e.advance(61 * time.Second)
	if r := e.do(req{method: "GET", path: "/v1/edge/decision", headers: good}); r.status != 401 || r.json(t)["error"] != "clearance-required" {
		t.Fatalf("expired clearance: %d %s", r.status, r.body)
	}
	// An unbound clearance (site only) admits any host and path.
	r = issue(`{"secret":"` + e.secret + `","assessment_id":"` + aid + `"}`)
	_ = json.Unmarshal(r.body, &pv)
	if r := e.do(req{method: "GET", path: "/v1/edge/decision", headers: map[string]string{"X-Service-Clearance": pv.Clearance}}); r.status != 200 {
		t.Fatalf("site-only clearance: %d %s", r.status, r.body)
	}
}
