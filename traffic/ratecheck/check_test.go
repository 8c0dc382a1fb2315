package ratecheck

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

const wsID = "11111111-1111-4111-8111-111111111111"

// failingAsker is an owner that never answers in time.
type failingAsker struct{}

func (failingAsker) Ask(string, actors.Op) error {
	return errors.Join(cluster.ErrUnavailable, actors.ErrTimeout)
}

func testPolicy(id, pattern, scope string, capacity int64) *catalog.RateLimitPolicy {
	return &catalog.RateLimitPolicy{ID: id, WorkspaceID: wsID, Name: "p " + id[:4], Target: catalog.PolicyTarget{Type: catalog.TargetWorkspace},
		ActionPattern: pattern, Method: "*", Scope: scope,
		Bucket:      catalog.PolicyBucket{Capacity: capacity, RefillAmount: 1, RefillIntervalSeconds: 3600},
		DefaultCost: 1, Mode: "enforce", DegradedBehaviour: "fail_open", EnforcePercentage: 100}
}

// testCatalog is a catalog of one workspace holding policies, at index.
func testCatalog(index uint64, policies ...*catalog.RateLimitPolicy) *catalog.Catalog {
	cat := catalog.Empty()
	cat.Index, cat.ConfigIndex = index, index
	ws := &catalog.Workspace{ID: wsID, Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}
	cat.Workspaces = map[string]*catalog.Workspace{ws.ID: ws}
	cat.RateLimitPolicies = map[string]*catalog.RateLimitPolicy{}
	for _, p := range policies {
		cat.RateLimitPolicies[p.ID] = p
	}
	return cat
}

// mustNewModule returns a module over real shard actors on one node.
func mustNewModule(t testing.TB) *Module {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	t.Cleanup(sys.Stop)
	return New(Config{Asker: cluster.SingleNode("n1", sys, time.Second)})
}

func caller(cat *catalog.Catalog) Caller {
	return Caller{Workspace: cat.Workspaces[wsID], AppID: "22222222-2222-4222-8222-222222222222"}
}

func mustCheck(t *testing.T, m *Module, cat *catalog.Catalog, req Request) (ratelimit.Decision, []string) {
	t.Helper()
	r, err := m.Check(context.Background(), cat, caller(cat), &req)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	defer m.Release(r)
	var reasons []string
	for _, o := range r.out {
		reasons = append(reasons, o.reasons[:o.nreasons]...)
	}
	return r.Decision(), reasons
}

func TestCheckRefusesBadInputWithItsCode(t *testing.T) {
	subject := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "login", "subject", 5)
	route := testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "page", "route", 5)
	custom := testPolicy("aaaaaaaa-0000-4000-8000-000000000003", "custom", "custom", 5)
	device := testPolicy("aaaaaaaa-0000-4000-8000-000000000004", "device", "device", 5)
	cat := testCatalog(1, subject, route, custom, device)
	m := mustNewModule(t)
	tests := []struct {
		name string
		req  Request
		want error
	}{
		{"a missing action is invalid", Request{}, ErrInvalidAction},
		{"an action with spaces is invalid", Request{Action: "a b"}, ErrInvalidAction},
		{"a method that is not a token is invalid", Request{Action: "x", Method: "GE T", HasMethod: true}, ErrInvalidMethod},
		{"an empty method is invalid", Request{Action: "x", HasMethod: true}, ErrInvalidMethod},
		{"cost zero is invalid", Request{Action: "x", HasCost: true}, ErrInvalidCost},
		{"cost above a billion is invalid", Request{Action: "x", Cost: MaxCost + 1, HasCost: true}, ErrInvalidCost},
		{"an assessment id that is not a UUID is invalid", Request{Action: "x", AssessmentID: "nope", HasAssessment: true}, ErrInvalidAssessment},
		{"a subject policy without subject_id refuses", Request{Action: "login"}, ErrInvalidSubject},
		{"a subject id with a control character refuses", Request{Action: "login", SubjectID: []byte("a\x01")}, ErrInvalidSubject},
		{"a route policy with a query string refuses", Request{Action: "page", Route: []byte("/a?b")}, ErrMissingRoute},
		{"a custom policy without scope_key refuses", Request{Action: "custom"}, ErrInvalidScopeKey},
		{"a device policy with an empty device refuses", Request{Action: "device", DeviceID: []byte{}}, ErrInvalidDevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := m.Check(context.Background(), cat, caller(cat), &tc.req)
			if !errors.Is(err, tc.want) || r != nil {
				t.Fatalf("got %v (%v), want %v", err, r, tc.want)
			}
		})
	}
	disabled := testCatalog(2, subject)
	disabled.Workspaces[wsID].Settings.RateLimitingEnabled = false
	if _, err := m.Check(context.Background(), disabled, caller(disabled), &Request{Action: "login", SubjectID: []byte("u")}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("a disabled workspace: %v", err)
	}
}

func TestBucketsAreConsumedAndRefusalsRefunded(t *testing.T) {
	small := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "pay", "subject", 2)
	big := testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "*", "workspace", 100)
	cat := testCatalog(1, small, big)
	m := mustNewModule(t)
	req := Request{Action: "pay", SubjectID: []byte("user-1")}
	for i := range 2 {
		if d, _ := mustCheck(t, m, cat, req); d != ratelimit.Allow {
			t.Fatalf("check %d: %v", i, d)
		}
	}
	d, reasons := mustCheck(t, m, cat, req)
	if d != ratelimit.Reject || !slices.Contains(reasons, "token-bucket-exhausted") {
		t.Fatalf("third check: %v %v", d, reasons)
	}
	// The refused check gave back what it took of the workspace bucket.
	st, _ := m.PolicyStats(cat, big.ID)
	if st.Matched != 3 || st.Allowed != 3 {
		t.Fatalf("workspace policy stats: %+v", st)
	}
	other := Request{Action: "pay", SubjectID: []byte("user-2")}
	if d, _ := mustCheck(t, m, cat, other); d != ratelimit.Allow {
		t.Fatal("another subject shares the exhausted subject's bucket")
	}
	r, _ := m.Check(context.Background(), cat, caller(cat), &req)
	defer m.Release(r)
	if r.out[1].p.id != big.ID || !r.out[1].refunded || r.out[1].op.Remaining != 97 {
		t.Fatalf("the workspace reservation was not refunded: %+v", r.out[1].op)
	}
}

func TestObserveModeRecommendsButAllows(t *testing.T) {
	p := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "pay", "workspace", 1)
	p.Mode = "observe"
	cat := testCatalog(1, p)
	m := mustNewModule(t)
	mustCheck(t, m, cat, Request{Action: "pay"})
	d, reasons := mustCheck(t, m, cat, Request{Action: "pay"})
	if d != ratelimit.Allow || !slices.Contains(reasons, "observe-only") {
		t.Fatalf("%v %v", d, reasons)
	}
	if st, _ := m.PolicyStats(cat, p.ID); st.ObservedWouldThrottle != 1 || st.Throttled != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDegradedBehaviourWhenTheOwnerIsUnavailable(t *testing.T) {
	open := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "open", "workspace", 5)
	closed := testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "closed", "workspace", 5)
	closed.DegradedBehaviour = "fail_closed"
	closedThrottle := testPolicy("aaaaaaaa-0000-4000-8000-000000000003", "closed.throttle", "workspace", 5)
	closedThrottle.DegradedBehaviour, closedThrottle.Mode = "fail_closed", "throttle"
	cat := testCatalog(1, open, closed, closedThrottle)
	m := New(Config{Asker: failingAsker{}})
	tests := []struct {
		name, action string
		decision     ratelimit.Decision
		reason       string
	}{
		{"a fail-open policy allows and says so", "open", ratelimit.Allow, "degraded-fail-open"},
		{"a fail-closed enforce policy rejects and says so", "closed", ratelimit.Reject, "degraded-fail-closed"},
		{"a fail-closed throttle policy throttles", "closed.throttle", ratelimit.Throttle, "degraded-fail-closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := m.Check(context.Background(), cat, caller(cat), &Request{Action: tc.action})
			if err != nil {
				t.Fatal(err)
			}
			if r.Decision() != tc.decision || !slices.Contains(r.out[0].reasons[:r.out[0].nreasons], tc.reason) {
				t.Fatalf("%v %v", r.Decision(), r.out[0].reasons)
			}
			body := string(r.AppendJSON(nil))
			if !r.abandon || containsRemaining(body) {
				t.Fatalf("no bucket answered, so no remaining may be claimed and the result is not pooled: %s", body)
			}
		})
	}
	if st, _ := m.PolicyStats(cat, closed.ID); st.DegradedFailClosed != 1 {
		t.Fatal("the fail-closed answer was not counted")
	}
}

func containsRemaining(body string) bool {
	for i := 0; i+len(`"remaining"`) <= len(body); i++ {
		if body[i:i+len(`"remaining"`)] == `"remaining"` {
			return true
		}
	}
	return false
}

func TestMatchersAreBuiltOncePerCatalogVersion(t *testing.T) {
	a := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "a", "workspace", 5)
	m := mustNewModule(t)
	cat := testCatalog(1, a)
	first := m.matchers(cat)
	if m.matchers(cat) != first {
		t.Fatal("the same catalog version compiled twice")
	}
	next := m.matchers(testCatalog(2, a, testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "b", "workspace", 5)))
	if next == first || len(next.byWS[wsID].policies) != 2 {
		t.Fatal("a new catalog version was not recompiled")
	}
	m.matchers(cat) // an older catalog may compile for itself…
	if m.cur.Load() != next {
		t.Fatal("…but never replaces the newer set")
	}
}

func BenchmarkCheckThreePolicies(b *testing.B) {
	var ps []*catalog.RateLimitPolicy
	for i, scope := range []string{"subject", "workspace", "device"} {
		p := testPolicy("bbbbbbbb-0000-4000-8000-00000000000"+string(rune('1'+i)), []string{"payment.*", "*", "payment.card"}[i], scope, 1<<40)
		p.Bucket.RefillAmount, p.Bucket.RefillIntervalSeconds = 1<<40, 1
		ps = append(ps, p)
	}
	cat := testCatalog(1, ps...)
	m := mustNewModule(b)
	req := Request{Action: "payment.card", SubjectID: []byte("user-42"), DeviceID: []byte("dev-7")}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		r, err := m.Check(context.Background(), cat, caller(cat), &req)
		if err != nil {
			b.Fatal(err)
		}
		buf = r.AppendJSON(buf[:0])
		m.Release(r)
	}
}

// BucketKey is the first matched policy's live bucket key, the one its
// reservation took from: a routing client is sent to its partition.
func TestBucketKeyIsTheFirstPolicysBucket(t *testing.T) {
	p := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "pay", "subject", 10)
	cat := testCatalog(1, p)
	m := mustNewModule(t)
	r, err := m.Check(context.Background(), cat, caller(cat), &Request{Action: "pay", SubjectID: []byte("user-1")})
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.HashScope(cat.Workspaces[wsID].ScopeKey, "subject\x00user-1")
	want := string(r.out[0].p.bucketKey(nil, false, &h))
	if got := r.BucketKey(); got != want || got != r.out[0].op.Key {
		t.Fatalf("BucketKey = %q, want %q", got, want)
	}
	m.Release(r)
	r, err = m.Check(context.Background(), cat, caller(cat), &Request{Action: "search"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(r)
	if got := r.BucketKey(); got != "" {
		t.Fatalf("no policy matched, BucketKey = %q", got)
	}
}
