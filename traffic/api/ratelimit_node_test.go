package api_test

import (
	nethttp "net/http"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	api "github.com/trustd/trustd/traffic/api"
)

// rlNode is a real single node on loopback (node/nodetest) with one
// workspace, a site and a mobile app.
type rlNode struct {
	t            testing.TB
	tn           *nodetest.Node
	n            *node.Node
	ws           string
	siteID       string
	secret       string
	mobileID     string
	mobileSecret string
	credential   string
}

func mustStartRLNode(t testing.TB) *rlNode {
	t.Helper()
	nt := nodetest.Start(t)
	// Runs before the node stops (cleanups run last-in first-out): idle
	// keep-alive connections would otherwise hold its graceful shutdown.
	t.Cleanup(nethttp.DefaultClient.CloseIdleConnections)
	ten := nt.MustTenant("rl")
	tn := &rlNode{t: t, tn: nt, n: nt.N, ws: ten.WorkspaceID, siteID: ten.SiteID, secret: ten.Secret, credential: ten.Credential}
	var app struct {
		MobileAppID  string `json:"mobile_app_id"`
		MobileSecret string `json:"mobile_secret"`
	}
	tn.admin("POST", tn.wsPath("/mobile-apps"), map[string]any{"name": "app", "platform": "android", "app_id": "com.example.app"}, 201, &app)
	tn.mobileID, tn.mobileSecret = app.MobileAppID, app.MobileSecret
	return tn
}

func (tn *rlNode) wsPath(p string) string { return "/admin/v1/workspaces/" + tn.ws + p }

// do sends a request and returns status, headers and body; every answer
// is checked against the node's contract.
func (tn *rlNode) do(method, path, bearer string, body any) (int, nethttp.Header, []byte) {
	tn.t.Helper()
	r := tn.tn.Do(method, path, bearer, body)
	return r.Status, r.Header, r.Body
}

func (tn *rlNode) admin(method, path string, body any, want int, out any) {
	tn.t.Helper()
	st, _, b := tn.do(method, path, tn.n.AdminToken(), body)
	if st != want {
		tn.t.Fatalf("%s %s: status %d, want %d: %s", method, path, st, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out, json.RejectUnknownMembers(false)); err != nil {
			tn.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// policy creates a rate-limit policy from defaults overridden by fields.
func (tn *rlNode) policy(fields map[string]any) string {
	tn.t.Helper()
	body := map[string]any{"name": "p", "target": map[string]any{"type": "workspace"}, "action_pattern": "*",
		"scope": "workspace", "bucket": map[string]any{"capacity": 5, "refill_amount": 1, "refill_interval_seconds": 3600},
		"mode": "enforce"}
	for k, v := range fields {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	var p api.RateLimitPolicyView
	tn.admin("POST", tn.wsPath("/rate-limit-policies"), body, 201, &p)
	return p.PolicyID
}

// check calls the rate-limit check with the site secret as bearer and
// decodes the answer strictly into the contract type.
func (tn *rlNode) check(body map[string]any) api.RateLimitDecision {
	tn.t.Helper()
	st, _, b := tn.do("POST", "/v1/rate-limit/check", tn.secret, body)
	if st != 200 {
		tn.t.Fatalf("check: status %d: %s", st, b)
	}
	var d api.RateLimitDecision
	if err := json.Unmarshal(b, &d, json.RejectUnknownMembers(true)); err != nil {
		tn.t.Fatalf("the answer does not match the contract type: %v: %s", err, b)
	}
	return d
}

func (tn *rlNode) specErr(path, bearer string, body any) (int, string) {
	tn.t.Helper()
	st, _, b := tn.do("POST", path, bearer, body)
	var e struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal(b, &e, json.RejectUnknownMembers(true)); err != nil {
		tn.t.Fatalf("%s: error body is not {success,error}: %v: %s", path, err, b)
	}
	if e.Success {
		tn.t.Fatalf("error body says success: %s", b)
	}
	return st, e.Error
}

func TestRateLimitCheckExactUnderConcurrency(t *testing.T) {
	tn := mustStartRLNode(t)
	const capacity = 100
	tn.policy(map[string]any{"bucket": map[string]any{"capacity": capacity, "refill_amount": 1, "refill_interval_seconds": 31536000},
		"scope": "subject"})
	var mu sync.Mutex
	allowed, refused := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				st, _, b := tn.do("POST", "/v1/rate-limit/check", tn.secret, map[string]any{"action": "login", "subject_id": "alice"})
				if st != 200 {
					t.Errorf("status %d: %s", st, b)
					return
				}
				var d api.RateLimitDecision
				if err := json.Unmarshal(b, &d); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					allowed++
				} else {
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != capacity || refused != 64*5-capacity {
		t.Fatalf("allowed %d, refused %d; want exactly %d allowed of %d", allowed, refused, capacity, 64*5)
	}
}

func TestContractDescribesTheTrafficRoutes(t *testing.T) {
	tn := mustStartRLNode(t)
	st, _, b := tn.do("GET", "/openapi.json", "", nil)
	if st != 200 {
		t.Fatal(st)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string         `json:"operationId"`
			Responses   map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	for path, id := range map[string]string{
		"/v1/rate-limit/check": "rateLimitCheck", "/v1/mobile/rate-limit/check": "mobileRateLimitCheck",
		"/v1/api-protection/assess": "apiProtectionAssess", "/v1/api-protection/feedback": "apiProtectionFeedback",
		"/admin/v1/workspaces/{workspace_id}/rate-limit-policies/{policy_id}/stats": "rateLimitPolicyStats",
	} {
		op, ok := doc.Paths[path]["post"]
		if !ok {
			op, ok = doc.Paths[path]["get"]
		}
		if !ok || op.OperationID != id {
			t.Errorf("%s: %+v", path, doc.Paths[path])
		}
	}
	for _, code := range []string{"400", "403", "429", "503"} {
		if _, ok := doc.Paths["/v1/rate-limit/check"]["post"].Responses[code]; !ok {
			t.Errorf("the check documents no %s answer", code)
		}
	}
}
