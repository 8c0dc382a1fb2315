package api

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
)

func TestSandboxScenarios(t *testing.T) {
	e := mustNewHVEnv(t)
	list := e.do(req{method: "GET", path: "/v1/sandbox/scenarios"})
	var sl verify.SandboxScenarioList
	if err := json.Unmarshal(list.body, &sl); err != nil || len(sl.Scenarios) != 9 {
		t.Fatalf("scenario list: %v %s", err, list.body)
	}
	for _, sc := range sl.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			r := e.do(req{path: "/v1/sandbox/issue", ctype: "application/json",
				body: `{"site_key":"site_sandbox_pub","scenario":"` + sc.Name + `","action":"login","hostname":"localhost"}`})
			if r.status != 200 {
				t.Fatalf("issue: %d %s", r.status, r.body)
			}
			var iv verify.SandboxIssueView
			if err := json.Unmarshal(r.body, &iv); err != nil || !strings.HasPrefix(iv.Token, token.SandboxPrefix) {
				t.Fatalf("issue answer %s", r.body)
			}
			// Production refuses the sandbox token: it is not a live token.
			prod := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", iv.Token))
			if !slices.Equal(codesOf(prod), []string{"invalid-input-response"}) {
				t.Fatalf("production answered a sandbox token with %v", prod)
			}
			v := e.verify("/v1/sandbox/siteverify", "secret", e.sbxSec, "response", iv.Token, "action", "login", "remoteip", "198.51.100.1")
			if v.status != sc.HTTPStatus {
				t.Fatalf("status %d, want %d: %s", v.status, sc.HTTPStatus, v.body)
			}
			if sc.HTTPStatus == 503 {
				if string(v.body) != `{"success":false,"error":"service-unavailable"}` {
					t.Fatalf("service_error body %s", v.body)
				}
				return
			}
			m := checkResult(t, v)
			if m["success"] != sc.Success || !slices.Equal(codesOf(m), sc.ErrorCodes) {
				t.Fatalf("answer %v, want success=%v %v", m, sc.Success, sc.ErrorCodes)
			}
			switch sc.Name {
			case "hostname_mismatch":
				if m["hostname"] != "hostname-mismatch.sandbox.invalid" {
					t.Fatalf("hostname %v", m["hostname"])
				}
			case "action_mismatch":
				if m["action"] != "sandbox-other-action" {
					t.Fatalf("the bound action must be returned: %v", m["action"])
				}
			case "invalid_input":
				if m["hostname"] != nil || m["score"].(float64) != 0 {
					t.Fatalf("invalid input echoes context: %v", m)
				}
			}
		})
	}
}

func TestSandboxIsolation(t *testing.T) {
	e := mustNewHVEnv(t)
	issue := func(key string) resp {
		return e.do(req{path: "/v1/sandbox/issue", ctype: "application/json", body: `{"site_key":"` + key + `","scenario":"success","action":"a"}`})
	}
	if r := issue("site_pub"); r.status != 400 || r.json(t)["error"] != "invalid-sitekey" {
		t.Fatalf("a production key at /sandbox/issue: %d %s", r.status, r.body)
	}
	if r := e.verify("/v1/sandbox/siteverify", "secret", e.secret, "response", "x"); r.status != 400 || string(r.body) != `{"success":false,"error":"invalid-input-secret"}` {
		t.Fatalf("a production secret at /sandbox/siteverify: %d %s", r.status, r.body)
	}
	if r := e.verify("/v1/sandbox/siteverify", "secret", e.sbxSec, "response", e.mint(nil)); !slices.Equal(codesOf(checkResult(t, r)), []string{"invalid-input-response"}) {
		t.Fatalf("a live token at /sandbox/siteverify: %s", r.body)
	}
	var iv verify.SandboxIssueView
	if err := json.Unmarshal(issue("site_sandbox_pub").body, &iv); err != nil {
		t.Fatal(err)
	}
	m := checkResult(t, e.verify("/v1/sandbox/siteverify", "secret", e.sbxSec, "response", iv.Token))
	if m["success"] != true {
		t.Fatalf("sandbox success: %v", m)
	}
	// The sandbox never stores an assessment: live operations do not know its id.
	r := e.do(req{path: "/v1/edge/preclearance/issue", ctype: "application/json",
		body: `{"secret":"` + e.secret + `","assessment_id":"` + m["assessment_id"].(string) + `"}`})
	if r.status != 404 {
		t.Fatalf("a sandbox assessment reached live state: %d %s", r.status, r.body)
	}
}
