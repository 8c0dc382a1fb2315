package api_test

import (
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
)

// trafficEnv is a real node (node/nodetest) with one workspace, two sites
// and a mobile app, ready for traffic-control calls.
type trafficEnv struct {
	t       *testing.T
	tn      *nodetest.Node
	ws      string
	secret  string // site A
	secretB string // site B, same workspace
	siteA   string
	mobile  string // mobile server secret
}

func mustStartTrafficNode(t *testing.T) *trafficEnv {
	t.Helper()
	e := &trafficEnv{t: t, tn: nodetest.Start(t)}
	// Runs before the node stops (cleanups run last-in first-out): idle
	// keep-alive connections left by the parallel tests would otherwise
	// hold its graceful shutdown.
	t.Cleanup(nethttp.DefaultClient.CloseIdleConnections)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	e.admin("POST", "/workspaces", map[string]any{"name": "traffic"}, 201, &ws)
	e.ws = ws.WorkspaceID
	var site struct {
		SiteID string `json:"site_id"`
		Secret string `json:"secret"`
	}
	e.admin("POST", "/workspaces/"+e.ws+"/sites", map[string]any{"name": "a", "hostnames": []string{"a.example"}}, 201, &site)
	e.secret, e.siteA = site.Secret, site.SiteID
	e.admin("POST", "/workspaces/"+e.ws+"/sites", map[string]any{"name": "b", "hostnames": []string{"b.example"}}, 201, &site)
	e.secretB = site.Secret
	var app struct {
		MobileSecret string `json:"mobile_secret"`
	}
	e.admin("POST", "/workspaces/"+e.ws+"/mobile-apps", map[string]any{"name": "app", "platform": "android", "app_id": "com.example.app"}, 201, &app)
	e.mobile = app.MobileSecret
	return e
}

// do sends a JSON request and decodes the answer into out (when not nil).
func (e *trafficEnv) do(method, path, bearer string, body any, out any) int {
	e.t.Helper()
	r := e.tn.Do(method, path, bearer, body)
	if out != nil && len(r.Body) > 0 {
		r.Decode(e.t, out)
	}
	return r.Status
}

func (e *trafficEnv) admin(method, path string, body any, want int, out any) {
	e.t.Helper()
	var raw map[string]any
	if out == nil {
		out = &raw
	}
	if got := e.do(method, "/admin/v1"+path, e.tn.N.AdminToken(), body, out); got != want {
		e.t.Fatalf("%s %s = %d, want %d (%v)", method, path, got, want, out)
	}
}

func (e *trafficEnv) constraint(body map[string]any) string {
	e.t.Helper()
	var v struct {
		ConstraintID string `json:"constraint_id"`
	}
	e.admin("POST", "/workspaces/"+e.ws+"/concurrency-constraints", body, 201, &v)
	return v.ConstraintID
}

type leaseAnswer struct {
	Success          bool     `json:"success"`
	Acquired         bool     `json:"acquired"`
	LeaseID          string   `json:"lease_id"`
	LeaseToken       string   `json:"lease_token"`
	TTLMs            int64    `json:"ttl_ms"`
	IdempotentReplay bool     `json:"idempotent_replay"`
	Constraint       string   `json:"constraint"`
	RetryAfterMs     int64    `json:"retry_after_ms"`
	ReasonCodes      []string `json:"reason_codes"`
	FencingTokens    []struct {
		Constraint   string
		FencingToken uint64 `json:"fencing_token"`
	} `json:"fencing_tokens"`
	Released bool   `json:"released"`
	Error    string `json:"error"`
}

func (e *trafficEnv) lease(op, secret string, body map[string]any) (int, leaseAnswer) {
	e.t.Helper()
	var a leaseAnswer
	st := e.do("POST", "/v1/concurrency/"+op, secret, body, &a)
	return st, a
}

func TestLeaseParallelAcquiresGetExactlyCapacity(t *testing.T) {
	e := mustStartTrafficNode(t)
	const capacity, callers = 5, 40
	e.constraint(map[string]any{"name": "exports", "action_pattern": "export.*", "capacity": capacity})
	var mu sync.Mutex
	var got []leaseAnswer
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a leaseAnswer
			if st := e.do("POST", "/v1/concurrency/acquire", e.secret, map[string]any{"action": "export.report"}, &a); st != 200 {
				t.Errorf("acquire = %d %+v", st, a)
				return
			}
			mu.Lock()
			got = append(got, a)
			mu.Unlock()
		}()
	}
	wg.Wait()
	acquired, fences := 0, map[uint64]bool{}
	for _, a := range got {
		if a.Acquired {
			acquired++
			fences[a.FencingTokens[0].FencingToken] = true
			continue
		}
		if a.Constraint != "exports" || a.RetryAfterMs <= 0 || a.LeaseToken != "" {
			t.Errorf("a refusal must name the constraint, give retry guidance and hold nothing: %+v", a)
		}
	}
	if acquired != capacity || len(fences) != capacity {
		t.Fatalf("%d of %d acquires succeeded with %d distinct fencing tokens, want exactly %d", acquired, callers, len(fences), capacity)
	}
}

func TestLeaseExpiryFreesCapacity(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "one", "action_pattern": "*", "capacity": 1, "min_ttl_ms": 100, "default_ttl_ms": 200})
	st, first := e.lease("acquire", e.secret, map[string]any{"action": "job.run"})
	if st != 200 || !first.Acquired || first.TTLMs != 200 {
		t.Fatalf("first acquire = %d %+v", st, first)
	}
	// The holder "crashes": it never renews nor releases. Its slot must
	// come back by itself once the lease expires.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, a := e.lease("acquire", e.secret, map[string]any{"action": "job.run"})
		if a.Acquired {
			if a.FencingTokens[0].FencingToken <= first.FencingTokens[0].FencingToken {
				t.Fatalf("fencing token did not increase: %d after %d", a.FencingTokens[0].FencingToken, first.FencingTokens[0].FencingToken)
			}
			break
		}
		if a.RetryAfterMs <= 0 || a.RetryAfterMs > 200 {
			t.Fatalf("retry guidance %dms, want (0, 200]", a.RetryAfterMs)
		}
		if time.Now().After(deadline) {
			t.Fatal("an expired lease never freed its slot")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, _ := e.lease("renew", e.secret, map[string]any{"action": "job.run", "lease_token": first.LeaseToken}); st != 409 {
		t.Fatalf("renew of an expired lease = %d, want 409", st)
	}
}

func TestLeaseTokenIsBoundToItsContext(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "per-subject", "scope": "subject", "action_pattern": "payment.*", "capacity": 1})
	ctx := map[string]any{"action": "payment.send", "subject_id": "alice"}
	st, l := e.lease("acquire", e.secret, ctx)
	if st != 200 || !l.Acquired {
		t.Fatalf("acquire = %d %+v", st, l)
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{"lease_token": l.LeaseToken}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	tampered := []byte(l.LeaseToken)
	tampered[len("lease_")+10] ^= 1
	tests := []struct {
		name   string
		secret string
		body   map[string]any
		status int
		code   string
	}{
		{"another subject cannot renew it", e.secret, with(ctx, "subject_id", "mallory"), 403, "lease-context-mismatch"},
		{"another action cannot renew it", e.secret, with(ctx, "action", "payment.refund"), 403, "lease-context-mismatch"},
		{"another application of the workspace cannot renew it", e.secretB, with(ctx), 403, "lease-context-mismatch"},
		{"a tampered token is invalid", e.secret, with(ctx, "lease_token", string(tampered)), 400, "invalid-lease"},
		{"a token of another kind is invalid", e.secret, with(ctx, "lease_token", "admit_"+l.LeaseToken[6:]), 400, "invalid-lease"},
		{"a bad secret is unauthorized", "sk_live_nope", with(ctx), 401, "unauthorized"},
		{"the holder in its own context renews it", e.secret, with(ctx), 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, a := e.lease("renew", tc.secret, tc.body)
			if st != tc.status || a.Error != tc.code {
				t.Fatalf("renew = %d %q, want %d %q", st, a.Error, tc.status, tc.code)
			}
		})
	}
	t.Run("a missing subject is an invalid field, not a free pass", func(t *testing.T) {
		st, a := e.lease("acquire", e.secret, map[string]any{"action": "payment.send"})
		if st != 400 || a.Error != "invalid-field" {
			t.Fatalf("acquire without subject_id = %d %q", st, a.Error)
		}
	})
}

func TestLeaseReleaseThenRenewIsRefused(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "one", "action_pattern": "*", "capacity": 1})
	ctx := map[string]any{"action": "job.run"}
	_, l := e.lease("acquire", e.secret, ctx)
	body := map[string]any{"action": "job.run", "lease_token": l.LeaseToken}
	if st, a := e.lease("release", e.secret, body); st != 200 || !a.Released {
		t.Fatalf("release = %d %+v", st, a)
	}
	if st, a := e.lease("renew", e.secret, body); st != 409 || a.Error != "lease-expired" {
		t.Fatalf("renew after release = %d %q, want 409 lease-expired", st, a.Error)
	}
	if st, a := e.lease("release", e.secret, body); st != 200 || a.Released {
		t.Fatalf("second release = %d %+v, want 200 released=false", st, a)
	}
	if _, a := e.lease("acquire", e.secret, ctx); !a.Acquired {
		t.Fatalf("the released slot was not free: %+v", a)
	}
}

func TestLeaseIdempotentRetryReturnsTheSameLease(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "two", "action_pattern": "*", "capacity": 2})
	body := map[string]any{"action": "job.run", "idempotency_key": "req-1"}
	_, a := e.lease("acquire", e.secret, body)
	_, b := e.lease("acquire", e.secret, body)
	if !a.Acquired || !b.Acquired || a.LeaseID != b.LeaseID || a.LeaseToken != b.LeaseToken || !b.IdempotentReplay || a.IdempotentReplay {
		t.Fatalf("retry returned another lease:\n%+v\n%+v", a, b)
	}
	// The retry took no second slot: one more distinct acquire fits, then
	// the constraint is full.
	if _, c := e.lease("acquire", e.secret, map[string]any{"action": "job.run"}); !c.Acquired {
		t.Fatalf("second slot: %+v", c)
	}
	if _, d := e.lease("acquire", e.secret, map[string]any{"action": "job.run"}); d.Acquired {
		t.Fatalf("capacity 2 granted a third lease: %+v", d)
	}
}

func TestLeaseHierarchicalConstraintsAreAllOrNothing(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "workspace-cap", "action_pattern": "*", "capacity": 3})
	e.constraint(map[string]any{"name": "per-app", "scope": "application", "action_pattern": "*", "capacity": 2})
	e.constraint(map[string]any{"name": "per-subject", "scope": "subject", "action_pattern": "report.*", "capacity": 1})
	acq := func(secret, subject string) leaseAnswer {
		t.Helper()
		st, a := e.lease("acquire", secret, map[string]any{"action": "report.build", "subject_id": subject})
		if st != 200 {
			t.Fatalf("acquire = %d %+v", st, a)
		}
		return a
	}
	steps := []struct {
		name, secret, subject string
		refusedBy             string
	}{
		{"a first subject of site A takes a slot in all three", e.secret, "s1", ""},
		{"the same subject again is refused by its subject constraint", e.secret, "s1", "per-subject"},
		{"a second subject of site A fills site A's application slots", e.secret, "s2", ""},
		{"a third subject of site A is refused by the application constraint", e.secret, "s3", "per-app"},
		{"site B still gets the last workspace slot", e.secretB, "s4", ""},
		{"then the workspace constraint refuses everyone", e.secretB, "s5", "workspace-cap"},
	}
	for _, s := range steps {
		a := acq(s.secret, s.subject)
		if s.refusedBy == "" && (!a.Acquired || len(a.FencingTokens) != 3) {
			t.Fatalf("%s: %+v", s.name, a)
		}
		if s.refusedBy != "" && (a.Acquired || a.Constraint != s.refusedBy) {
			t.Fatalf("%s: refused by %q, want %q (%+v)", s.name, a.Constraint, s.refusedBy, a)
		}
	}
}

func TestMobileLeasesCheckTheAppIdentity(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "one", "action_pattern": "*", "capacity": 1})
	var a leaseAnswer
	st := e.do("POST", "/v1/mobile/concurrency/acquire", e.mobile, map[string]any{"platform": "ios", "app_id": "com.example.app", "action": "sync.run"}, &a)
	if st != 403 || a.Error != "invalid-app-identity" {
		t.Fatalf("wrong platform = %d %q, want 403 invalid-app-identity", st, a.Error)
	}
	body := map[string]any{"platform": "android", "app_id": "com.example.app", "action": "sync.run"}
	if st := e.do("POST", "/v1/mobile/concurrency/acquire", e.mobile, body, &a); st != 200 || !a.Acquired {
		t.Fatalf("mobile acquire = %d %+v", st, a)
	}
	body["lease_token"] = a.LeaseToken
	if st := e.do("POST", "/v1/concurrency/renew", e.secret, map[string]any{"action": "sync.run", "lease_token": a.LeaseToken}, &a); st != 403 {
		t.Fatalf("a site renewing the app's lease = %d, want 403", st)
	}
	var r leaseAnswer
	if st := e.do("POST", "/v1/mobile/concurrency/release", e.mobile, body, &r); st != 200 || !r.Released {
		t.Fatalf("mobile release = %d %+v", st, r)
	}
}

type admitAnswer struct {
	Admitted       bool   `json:"admitted"`
	Reason         string `json:"reason"`
	State          string `json:"state"`
	Probe          bool   `json:"probe"`
	AdmissionToken string `json:"admission_token"`
	RetryAfterMs   int64  `json:"retry_after_ms"`
	Counted        bool   `json:"counted"`
	Error          string `json:"error"`
}

func (e *trafficEnv) admit(body map[string]any) admitAnswer {
	e.t.Helper()
	var a admitAnswer
	if st := e.do("POST", "/v1/dependency-resilience/admit", e.secret, body, &a); st != 200 {
		e.t.Fatalf("admit = %d %+v", st, a)
	}
	return a
}

func (e *trafficEnv) feedback(token, outcome string) (int, admitAnswer) {
	e.t.Helper()
	var a admitAnswer
	st := e.do("POST", "/v1/dependency-resilience/feedback", e.secret, map[string]any{"admission_token": token, "outcome": outcome, "latency_ms": 12}, &a)
	return st, a
}

func TestBreakerClosedOpenHalfOpenClosedThroughHTTP(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.admin("POST", "/workspaces/"+e.ws+"/dependencies", map[string]any{"name": "payments-api", "window_size": 10,
		"minimum_calls": 5, "open_duration_ms": 300, "half_open_probes": 2}, 201, nil)
	dep := map[string]any{"dependency": "payments-api"}
	for i := 0; i < 5; i++ {
		a := e.admit(dep)
		if !a.Admitted || a.State != "closed" {
			t.Fatalf("call %d while closed: %+v", i, a)
		}
		if st, fb := e.feedback(a.AdmissionToken, "timeout"); st != 200 || !fb.Counted {
			t.Fatalf("feedback %d = %d %+v", i, st, fb)
		}
	}
	refused := e.admit(dep)
	if refused.Admitted || refused.Reason != "circuit-open" || refused.State != "open" || refused.RetryAfterMs <= 0 || refused.RetryAfterMs > 300 {
		t.Fatalf("after 5 failures of 5: %+v", refused)
	}
	var probes []admitAnswer
	deadline := time.Now().Add(5 * time.Second)
	for len(probes) == 0 {
		if a := e.admit(dep); a.Admitted {
			probes = append(probes, a)
		}
		if time.Now().After(deadline) {
			t.Fatal("the circuit never turned half-open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	probes = append(probes, e.admit(dep))
	if third := e.admit(dep); third.Admitted || third.State != "half-open" {
		t.Fatalf("half-open admitted more than its 2 probes: %+v", third)
	}
	for i, p := range probes {
		if !p.Admitted || !p.Probe || p.State != "half-open" {
			t.Fatalf("probe %d: %+v", i, p)
		}
	}
	_, fb := e.feedback(probes[0].AdmissionToken, "success")
	if fb.State != "half-open" {
		t.Fatalf("after one of two probes: %+v", fb)
	}
	if _, fb = e.feedback(probes[1].AdmissionToken, "success"); fb.State != "closed" {
		t.Fatalf("after both probes succeeded: %+v", fb)
	}
	if a := e.admit(dep); !a.Admitted || a.State != "closed" {
		t.Fatalf("closed again: %+v", a)
	}
}

func TestAdmissionFeedbackIsSingleUseAndBound(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.admin("POST", "/workspaces/"+e.ws+"/dependencies", map[string]any{"name": "search", "max_concurrent": 2,
		"retry_ratio": 0, "retry_min_per_second": 0}, 201, nil)
	a1, a2 := e.admit(map[string]any{"dependency": "search"}), e.admit(map[string]any{"dependency": "search", "attempt": 1})
	if full := e.admit(map[string]any{"dependency": "search"}); full.Admitted || full.Reason != "bulkhead-full" || full.RetryAfterMs <= 0 {
		t.Fatalf("third concurrent call: %+v", full)
	}
	var other admitAnswer
	if st := e.do("POST", "/v1/dependency-resilience/feedback", e.secretB, map[string]any{"admission_token": a1.AdmissionToken, "outcome": "success"}, &other); st != 403 || other.Error != "admission-context-mismatch" {
		t.Fatalf("feedback from another application = %d %q", st, other.Error)
	}
	if st, _ := e.feedback(a1.AdmissionToken, "success"); st != 200 {
		t.Fatalf("feedback = %d", st)
	}
	if st, again := e.feedback(a1.AdmissionToken, "success"); st != 409 || again.Error != "admission-used" {
		t.Fatalf("second feedback = %d %q, want 409 admission-used", st, again.Error)
	}
	if st, bad := e.feedback("admit_garbage.AAAAAAAAAAAAAAAAAAAAAA", "success"); st != 400 || bad.Error != "invalid-admission" {
		t.Fatalf("garbage token = %d %q", st, bad.Error)
	}
	if r := e.admit(map[string]any{"dependency": "search", "retry": true}); r.Admitted || r.Reason != "retry-budget-exhausted" {
		t.Fatalf("retry with an empty budget: %+v", r)
	}
	if st, _ := e.feedback(a2.AdmissionToken, "failure"); st != 200 {
		t.Fatalf("feedback = %d", st)
	}
	var unknown admitAnswer
	if st := e.do("POST", "/v1/dependency-resilience/admit", e.secret, map[string]any{"dependency": "nope"}, &unknown); st != 400 || unknown.Error != "unknown-dependency" {
		t.Fatalf("unknown dependency = %d %q", st, unknown.Error)
	}
}

func TestTrafficControlIsInTheContract(t *testing.T) {
	e := mustStartTrafficNode(t)
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody map[string]any `json:"requestBody"`
			Responses   map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if st := e.do("GET", "/v1/openapi.json", "", nil, &doc); st != 200 {
		t.Fatalf("openapi = %d", st)
	}
	for _, p := range []string{"/v1/concurrency/acquire", "/v1/concurrency/renew", "/v1/concurrency/release",
		"/v1/mobile/concurrency/acquire", "/v1/mobile/concurrency/renew", "/v1/mobile/concurrency/release",
		"/v1/dependency-resilience/admit", "/v1/dependency-resilience/feedback",
		"/v1/mobile/dependency-resilience/admit", "/v1/mobile/dependency-resilience/feedback",
		"/admin/v1/workspaces/{workspace_id}/concurrency-constraints", "/admin/v1/workspaces/{workspace_id}/dependencies/{dependency_id}"} {
		op, ok := doc.Paths[p]
		if !ok {
			t.Errorf("%s is missing from /openapi.json", p)
			continue
		}
		for m, o := range op {
			if strings.HasPrefix(p, "/v1/") && (o.RequestBody == nil || o.Responses["200"] == nil) {
				t.Errorf("%s %s lacks a request body or a 200 answer", m, p)
			}
		}
	}
}

func TestTrafficAdminValidatesAndManagesConfiguration(t *testing.T) {
	e := mustStartTrafficNode(t)
	base := "/workspaces/" + e.ws
	invalid := []struct {
		name string
		path string
		body map[string]any
	}{
		{"a constraint without capacity", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "*"}},
		{"a constraint with zero capacity", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "*", "capacity": 0}},
		{"a constraint with an unknown scope", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "*", "capacity": 1, "scope": "planet"}},
		{"a constraint with a malformed pattern", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "pay*", "capacity": 1}},
		{"a constraint whose default lifetime is outside its bounds", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "*", "capacity": 1, "max_ttl_ms": 5000, "default_ttl_ms": 6000}},
		{"a constraint for an application of no workspace", "/concurrency-constraints", map[string]any{"name": "a", "action_pattern": "*", "capacity": 1, "application_id": "nope"}},
		{"a dependency without a name", "/dependencies", map[string]any{"window_size": 10}},
		{"a dependency whose minimum exceeds its window", "/dependencies", map[string]any{"name": "x", "window_size": 10, "minimum_calls": 11}},
		{"a dependency with a failure rate above 1", "/dependencies", map[string]any{"name": "x", "failure_rate_threshold": 1.5}},
		{"a dependency with a negative bulkhead", "/dependencies", map[string]any{"name": "x", "max_concurrent": -1}},
		{"a dependency with no probes", "/dependencies", map[string]any{"name": "x", "half_open_probes": 0}},
	}
	for _, tc := range invalid {
		t.Run(tc.name+" is refused as an invalid field", func(t *testing.T) {
			var a struct {
				Error string `json:"error"`
			}
			e.admin("POST", base+tc.path, tc.body, 400, &a)
			if a.Error != "invalid-field" {
				t.Fatalf("error = %q", a.Error)
			}
		})
	}
	t.Run("a constraint can be created, scoped to a site, patched, listed and deleted", func(t *testing.T) {
		id := e.constraint(map[string]any{"name": "site-a", "action_pattern": "*", "capacity": 1, "application_id": e.siteA})
		e.admin("POST", base+"/concurrency-constraints", map[string]any{"name": "site-a", "action_pattern": "*", "capacity": 1}, 409, nil)
		var v struct {
			Capacity int `json:"capacity"`
			Scope    string
		}
		e.admin("PATCH", base+"/concurrency-constraints/"+id, map[string]any{"capacity": 3}, 200, &v)
		if v.Capacity != 3 {
			t.Fatalf("capacity after patch = %d", v.Capacity)
		}
		var list struct {
			Constraints []map[string]any `json:"concurrency_constraints"`
		}
		e.admin("GET", base+"/concurrency-constraints", nil, 200, &list)
		if len(list.Constraints) != 1 {
			t.Fatalf("list = %+v", list)
		}
		// Site B is not limited by site A's constraint.
		if _, a := e.lease("acquire", e.secretB, map[string]any{"action": "x.y"}); !a.Acquired || len(a.ReasonCodes) != 1 || a.ReasonCodes[0] != "no-matching-constraint" {
			t.Fatalf("site B: %+v", a)
		}
		e.admin("DELETE", base+"/concurrency-constraints/"+id, nil, 204, nil)
		e.admin("GET", base+"/concurrency-constraints/"+id, nil, 404, nil)
	})
	t.Run("a dependency shows its breaker's live state", func(t *testing.T) {
		var d struct {
			DependencyID string `json:"dependency_id"`
			MinimumCalls int    `json:"minimum_calls"`
		}
		e.admin("POST", base+"/dependencies", map[string]any{"name": "ledger", "window_size": 20}, 201, &d)
		if d.MinimumCalls != 20 {
			t.Fatalf("minimum_calls defaults to the window: %d", d.MinimumCalls)
		}
		a := e.admit(map[string]any{"dependency": "ledger"})
		e.feedback(a.AdmissionToken, "failure")
		var v struct {
			Live struct {
				State    string `json:"state"`
				Calls    int    `json:"calls"`
				Failures int    `json:"failures"`
			} `json:"live"`
		}
		e.admin("GET", base+"/dependencies/"+d.DependencyID, nil, 200, &v)
		if v.Live.State != "closed" || v.Live.Calls != 1 || v.Live.Failures != 1 {
			t.Fatalf("live = %+v", v.Live)
		}
		e.admin("DELETE", base+"/dependencies/"+d.DependencyID, nil, 204, nil)
	})
}

func TestMobileAdmissionsCheckTheAppIdentity(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.admin("POST", "/workspaces/"+e.ws+"/dependencies", map[string]any{"name": "sync-api"}, 201, nil)
	id := map[string]any{"platform": "android", "app_id": "com.example.other", "dependency": "sync-api"}
	var a admitAnswer
	if st := e.do("POST", "/v1/mobile/dependency-resilience/admit", e.mobile, id, &a); st != 403 || a.Error != "invalid-app-identity" {
		t.Fatalf("wrong app_id = %d %q", st, a.Error)
	}
	id["app_id"] = "com.example.app"
	if st := e.do("POST", "/v1/mobile/dependency-resilience/admit", e.mobile, id, &a); st != 200 || !a.Admitted {
		t.Fatalf("mobile admit = %d %+v", st, a)
	}
	fb := map[string]any{"platform": "android", "app_id": "com.example.app", "admission_token": a.AdmissionToken, "outcome": "success"}
	var site admitAnswer
	if st := e.do("POST", "/v1/dependency-resilience/feedback", e.secret, map[string]any{"admission_token": a.AdmissionToken, "outcome": "success"}, &site); st != 403 {
		t.Fatalf("a site reporting the app's admission = %d, want 403", st)
	}
	var r admitAnswer
	if st := e.do("POST", "/v1/mobile/dependency-resilience/feedback", e.mobile, fb, &r); st != 200 || !r.Counted || r.State != "closed" {
		t.Fatalf("mobile feedback = %d %+v", st, r)
	}
}

func TestParallelAcquiresOverTwoConstraintsHoldAllOrNothing(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "narrow", "action_pattern": "export.*", "capacity": 2})
	e.constraint(map[string]any{"name": "wide", "action_pattern": "*", "capacity": 3})
	burst := func() []leaseAnswer {
		var mu sync.Mutex
		var got []leaseAnswer
		var wg sync.WaitGroup
		for i := 0; i < 30; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, a := e.lease("acquire", e.secret, map[string]any{"action": "export.report"})
				if st != 200 {
					t.Errorf("acquire = %d %+v", st, a)
					return
				}
				mu.Lock()
				got = append(got, a)
				mu.Unlock()
			}()
		}
		wg.Wait()
		var won []leaseAnswer
		for _, a := range got {
			if a.Acquired {
				if len(a.FencingTokens) != 2 {
					t.Fatalf("a granted lease holds %d slots, want both constraints': %+v", len(a.FencingTokens), a)
				}
				won = append(won, a)
			}
		}
		return won
	}
	won := burst()
	if len(won) != 2 {
		t.Fatalf("%d acquires won, want exactly 2 (the narrow constraint's capacity)", len(won))
	}
	// Refused acquires held nothing: once the winners release, the same
	// burst wins exactly as many again.
	for _, a := range won {
		if st, r := e.lease("release", e.secret, map[string]any{"action": "export.report", "lease_token": a.LeaseToken}); st != 200 {
			t.Fatalf("release = %d %+v", st, r)
		}
	}
	if again := burst(); len(again) != 2 {
		t.Fatalf("after releasing, %d acquires won, want 2: a refused acquire kept a slot", len(again))
	}
}

func TestOneIdentifierRuleAcrossRateLimitAndLeases(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "per-subject", "scope": "subject", "action_pattern": "export.*", "capacity": 1})
	e.admin("POST", "/workspaces/"+e.ws+"/rate-limit-policies", map[string]any{"name": "per-subject", "target": map[string]any{"type": "workspace"},
		"action_pattern": "export.*", "scope": "subject", "mode": "enforce",
		"bucket": map[string]any{"capacity": 100, "refill_amount": 100, "refill_interval_seconds": 60}}, 201, nil)
	for _, tt := range []struct {
		subject string
		ok      bool
	}{
		{"ana@example.com", true},
		{"Ünïcødé-用户-42", true},
		{"tab\tinside", false},
		{strings.Repeat("a", 257), false},
	} {
		var rl map[string]any
		rlStatus := e.do("POST", "/v1/rate-limit/check", e.secret, map[string]any{"action": "export.report", "subject_id": tt.subject}, &rl)
		st, a := e.lease("acquire", e.secret, map[string]any{"action": "export.report", "subject_id": tt.subject})
		if (rlStatus == 200) != tt.ok || (st == 200) != tt.ok {
			t.Errorf("subject %q: rate-limit check %d, lease acquire %d %+v; want both accepted=%v", tt.subject, rlStatus, st, a, tt.ok)
		}
	}
}

// mobileCallerChecks sends body to a mobile operation with the refusals
// every mobile operation shares: another app identity, a site secret in
// the body, no secret, a site secret as bearer.
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

func TestMobileLeaseRenewAnswers(t *testing.T) {
	e := mustStartTrafficNode(t)
	e.constraint(map[string]any{"name": "one", "action_pattern": "sync.*", "capacity": 1, "min_ttl_ms": 1000, "default_ttl_ms": 5000, "max_ttl_ms": 60000})
	body := map[string]any{"platform": "android", "app_id": "com.example.app", "action": "sync.run"}
	var a leaseAnswer
	if st := e.do("POST", "/v1/mobile/concurrency/acquire", e.mobile, body, &a); st != 200 || !a.Acquired || len(a.FencingTokens) != 1 {
		t.Fatalf("mobile acquire = %d %+v", st, a)
	}
	renew := map[string]any{"platform": "android", "app_id": "com.example.app", "action": "sync.run", "lease_token": a.LeaseToken, "ttl_ms": 30000}
	mobileCallerChecks(t, e.tn, "/v1/mobile/concurrency/renew", e.mobile, e.secret, renew)
	var rn struct {
		leaseAnswer
		ExpiresAt time.Time `json:"expires_at"`
	}
	before := time.Now()
	if st := e.do("POST", "/v1/mobile/concurrency/renew", e.mobile, renew, &rn); st != 200 {
		t.Fatalf("mobile renew = %d %+v", st, rn)
	}
	if !rn.Success || !rn.Acquired || rn.LeaseID != a.LeaseID || rn.TTLMs != 30000 || rn.LeaseToken == "" ||
		len(rn.FencingTokens) != 1 || rn.FencingTokens[0].FencingToken != a.FencingTokens[0].FencingToken ||
		rn.ExpiresAt.Before(before.Add(29*time.Second)) || rn.ExpiresAt.After(time.Now().Add(31*time.Second)) {
		t.Fatalf("mobile renew answer: %+v", rn)
	}
	// The lease still holds its slot: another acquire is refused.
	var b leaseAnswer
	if st := e.do("POST", "/v1/mobile/concurrency/acquire", e.mobile, body, &b); st != 200 || b.Acquired || b.Constraint != "one" {
		t.Fatalf("acquire while renewed = %d %+v", st, b)
	}
	// A renew for another action than the lease's is refused; the clamp
	// keeps a lifetime inside the constraint's bounds.
	other := map[string]any{"platform": "android", "app_id": "com.example.app", "action": "sync.other", "lease_token": rn.LeaseToken}
	if st := e.do("POST", "/v1/mobile/concurrency/renew", e.mobile, other, nil); st < 400 {
		t.Fatalf("renew with another action = %d", st)
	}
	renew["lease_token"], renew["ttl_ms"] = rn.LeaseToken, 3_600_000
	var clamped leaseAnswer
	if st := e.do("POST", "/v1/mobile/concurrency/renew", e.mobile, renew, &clamped); st != 200 || clamped.TTLMs != 60000 {
		t.Fatalf("renew beyond max_ttl_ms = %d %+v, want ttl 60000", st, clamped)
	}
	// Released, the lease cannot be renewed.
	var rel leaseAnswer
	rb := map[string]any{"platform": "android", "app_id": "com.example.app", "action": "sync.run", "lease_token": clamped.LeaseToken}
	if st := e.do("POST", "/v1/mobile/concurrency/release", e.mobile, rb, &rel); st != 200 || !rel.Released {
		t.Fatalf("release = %d %+v", st, rel)
	}
	renew["lease_token"] = clamped.LeaseToken
	if st := e.do("POST", "/v1/mobile/concurrency/renew", e.mobile, renew, nil); st != 409 {
		t.Fatalf("renew after release = %d, want 409", st)
	}
}
