package events

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/trustd/trustd/platform/catalog"
)

// memStore applies commands as Raft would on one node: encoded and
// decoded through the wire form, then applied in one transaction.
type memStore struct {
	mu     sync.Mutex
	cat    *catalog.Catalog
	index  uint64
	leader atomic.Bool
}

func (s *memStore) Catalog() *catalog.Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat
}
func (s *memStore) IsLeader() bool { return s.leader.Load() }
func (s *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	b, err := catalog.Encode(cmd)
	if err != nil {
		return nil, err
	}
	c, err := catalog.Decode(cmd.Kind(), b)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := catalog.Begin(s.cat)
	v, err := c.Apply(tx)
	if err != nil {
		return nil, err
	}
	s.index++
	s.cat = tx.Commit(s.index)
	return v, nil
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const testWS = "ws-1"

func mustNewOutbox(t *testing.T, mutate func(*Config)) (*Outbox, *memStore, *fakeClock) {
	t.Helper()
	st := &memStore{cat: catalog.Empty()}
	st.leader.Store(true)
	clk := &fakeClock{t: time.Now().UTC().Truncate(time.Second)}
	if _, err := st.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: testWS, Name: "w", CreatedAt: clk.Now()}}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Schedule: []time.Duration{time.Minute, time.Hour}, Jitter: 0.1, AllowLoopback: true, SealKey: "k",
		Timeout: 2 * time.Second, Now: clk.Now, DisableAfterFailures: 100}
	if mutate != nil {
		mutate(&cfg)
	}
	return New(cfg, st, nil, nil), st, clk
}

// receiver is a 127.0.0.1 endpoint answering with the status its
// function returns for each attempt (1-based), recording what it got.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []nethttp.Header
	bodies [][]byte
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, q *nethttp.Request) {
		b := make([]byte, q.ContentLength)
		_, _ = q.Body.Read(b)
		r.mu.Lock()
		r.got = append(r.got, q.Header.Clone())
		r.bodies = append(r.bodies, b)
		n := len(r.got)
		r.mu.Unlock()
		if st := status(n); st == 302 {
			nethttp.Redirect(w, q, "http://127.0.0.1:1/elsewhere", 302)
		} else {
			w.WriteHeader(st)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }

// step runs one dispatch round and waits for its attempts.
func step(o *Outbox) {
	o.dispatch(context.Background(), o.client())
	o.disp.wg.Wait()
}

func mustEndpoint(t *testing.T, o *Outbox, url string, types ...string) (*catalog.WebhookEndpoint, string) {
	t.Helper()
	sp := EndpointSpec{URL: &url}
	if types != nil {
		sp.EventTypes = &types
	}
	e, secret, err := o.CreateEndpoint(context.Background(), testWS, sp)
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	return e, secret
}

func delivery(t *testing.T, o *Outbox, eventID, endpointID string) catalog.WebhookDelivery {
	t.Helper()
	ev, err := o.Event(testWS, eventID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ev.Deliveries {
		if d.EndpointID == endpointID {
			return d
		}
	}
	t.Fatalf("event %s has no delivery to %s", eventID, endpointID)
	return catalog.WebhookDelivery{}
}

func TestDeliverySignedRetriedAndLogged(t *testing.T) {
	o, _, clk := mustNewOutbox(t, nil)
	rcv := newReceiver(t, func(n int) int {
		if n <= 2 {
			return 500
		}
		return 204
	})
	ep, secret := mustEndpoint(t, o, rcv.srv.URL+"/hook")
	id, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_1", 3, map[string]any{"status": "verified"})
	if err != nil {
		t.Fatal(err)
	}
	step(o)
	d := delivery(t, o, id, ep.ID)
	if rcv.count() != 1 || d.Status != catalog.DeliveryPending || d.Attempts != 1 || d.LastStatus != 500 {
		t.Fatalf("after a 500: %d requests, delivery %+v", rcv.count(), d)
	}
	if wait := d.NextAt.Sub(d.LastAt); wait < 54*time.Second || wait > 66*time.Second {
		t.Fatalf("first retry after %v, want 1m ± 10%%", wait)
	}
	step(o) // not due yet
	if rcv.count() != 1 {
		t.Fatal("a delivery was retried before its time")
	}
	clk.Add(2 * time.Minute)
	step(o)
	clk.Add(2 * time.Hour)
	step(o)
	d = delivery(t, o, id, ep.ID)
	if rcv.count() != 3 || d.Status != catalog.DeliveryDelivered || d.Attempts != 3 {
		t.Fatalf("after two failures and a success: %d requests, delivery %+v", rcv.count(), d)
	}
	for i, h := range rcv.got {
		if h.Get(AttemptHeader) != strconv.Itoa(i+1) || h.Get(StdIDHeader) != id || h.Get(EventTypeHeader) != TypeVerified {
			t.Errorf("attempt %d headers: %v", i+1, h)
		}
	}
	last := rcv.got[2]
	if err := webhook.ValidatePayloadWithTolerance(rcv.bodies[2], last.Get(SignatureHeader), secret, 24*time.Hour); err != nil {
		t.Fatalf("stripe-go rejects the delivered signature: %v", err)
	}
	log, _ := o.Log(testWS, ep.ID)
	if len(log) != 3 || log[0].Outcome != "delivered" || log[1].Outcome != "retrying" || log[2].HTTPStatus != 500 {
		t.Fatalf("delivery log (newest first) = %+v", log)
	}
	// A manual redelivery sends the same event again, attempt 4.
	if _, err := o.Redeliver(context.Background(), testWS, id, ""); err != nil {
		t.Fatal(err)
	}
	step(o)
	if rcv.count() != 4 || rcv.got[3].Get(AttemptHeader) != "4" || string(rcv.bodies[3]) != string(rcv.bodies[0]) {
		t.Fatalf("redelivery: %d requests, attempt header %q", rcv.count(), rcv.got[3].Get(AttemptHeader))
	}
}

func TestScheduleExhaustedFailsAndRedirectsAreNotFollowed(t *testing.T) {
	o, _, clk := mustNewOutbox(t, nil)
	rcv := newReceiver(t, func(int) int { return 302 })
	ep, _ := mustEndpoint(t, o, rcv.srv.URL)
	id, _ := o.Emit(context.Background(), testWS, TypeRejected, "vs_2", 1, map[string]any{})
	for range 5 {
		step(o)
		clk.Add(3 * time.Hour)
	}
	d := delivery(t, o, id, ep.ID)
	if rcv.count() != 3 || d.Status != catalog.DeliveryFailed || d.Attempts != 3 {
		t.Fatalf("schedule of 2 waits: want 3 attempts then failed; got %d requests, %+v", rcv.count(), d)
	}
	if d.LastError != "redirect not followed (HTTP 302)" {
		t.Fatalf("last error %q", d.LastError)
	}
}

func TestEndpointDisabledAfterSustainedFailure(t *testing.T) {
	o, _, clk := mustNewOutbox(t, func(c *Config) {
		c.DisableAfterFailures, c.DisableAfter = 3, 90*time.Second
		c.Schedule = []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute, time.Minute}
	})
	rcv := newReceiver(t, func(int) int { return 503 })
	ep, _ := mustEndpoint(t, o, rcv.srv.URL)
	id, _ := o.Emit(context.Background(), testWS, TypeCancelled, "vs_3", 1, map[string]any{})
	for range 3 {
		step(o)
		clk.Add(2 * time.Minute)
	}
	// Three failures, but not yet 90s apart from the first: still enabled?
	cur, _ := o.Endpoint(testWS, ep.ID)
	if cur.ConsecutiveFailures != 3 {
		t.Fatalf("failures = %d", cur.ConsecutiveFailures)
	}
	if cur.Status != catalog.WebhookDisabled {
		t.Fatalf("3 failures over 4 minutes must disable (threshold 3 over 90s); status %s", cur.Status)
	}
	if d := delivery(t, o, id, ep.ID); d.Status != catalog.DeliveryFailed {
		t.Fatalf("pending delivery of a disabled endpoint: %+v", d)
	}
	if log, _ := o.Log(testWS, ep.ID); len(log) != 3 || log[0].Outcome != "failed" || log[1].Outcome != "retrying" {
		t.Fatalf("the attempt that disabled the endpoint must be logged as failed: %+v", log)
	}
	al := o.Alerts(testWS)
	if len(al) != 1 || al[0].EndpointID != ep.ID || al[0].Kind != "endpoint_disabled" {
		t.Fatalf("alerts %+v", al)
	}
	if _, err := o.Emit(context.Background(), testWS, TypeCancelled, "vs_3", 2, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	step(o)
	if rcv.count() != 3 {
		t.Fatal("a disabled endpoint was delivered to")
	}
	if _, err := o.SendTest(context.Background(), testWS, ep.ID); !errors.Is(err, ErrEndpointDisabled) {
		t.Fatalf("test event to a disabled endpoint: %v", err)
	}
	on := true
	if e, err := o.UpdateEndpoint(context.Background(), testWS, ep.ID, EndpointSpec{Enabled: &on}); err != nil || e.ConsecutiveFailures != 0 || e.Status != catalog.WebhookEnabled {
		t.Fatalf("re-enable: %+v %v", e, err)
	}
}

func TestDisablingNeedsTheFailuresToSpanTheDuration(t *testing.T) {
	o, _, clk := mustNewOutbox(t, func(c *Config) {
		c.DisableAfterFailures, c.DisableAfter = 2, time.Hour
		c.Schedule = []time.Duration{time.Minute, time.Minute, time.Minute}
	})
	rcv := newReceiver(t, func(int) int { return 500 })
	ep, _ := mustEndpoint(t, o, rcv.srv.URL)
	_, _ = o.Emit(context.Background(), testWS, TypeCancelled, "vs_4", 1, map[string]any{})
	for range 3 {
		step(o)
		clk.Add(2 * time.Minute)
	}
	if cur, _ := o.Endpoint(testWS, ep.ID); cur.Status != catalog.WebhookEnabled || cur.ConsecutiveFailures != 3 {
		t.Fatalf("3 failures within 6 minutes must not disable (needs 1h): %+v", cur)
	}
}

func TestEmitIsIdempotentAndFiltered(t *testing.T) {
	o, st, _ := mustNewOutbox(t, nil)
	all, _ := mustEndpoint(t, o, "http://127.0.0.1:9/all")
	only, _ := mustEndpoint(t, o, "http://127.0.0.1:9/rejected", TypeRejected)
	id1, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_5", 1, map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_5", 1, map[string]any{"a": 2})
	if err != nil || id1 != id2 {
		t.Fatalf("re-emit: %s %s %v", id1, id2, err)
	}
	ob := st.Catalog().WebhookOutboxes[testWS]
	if len(ob.Events) != 1 {
		t.Fatalf("%d events after an emit retried", len(ob.Events))
	}
	ev := ob.Events[id1]
	if len(ev.Deliveries) != 1 || ev.Deliveries[0].EndpointID != all.ID {
		t.Fatalf("the filtered endpoint %s got a delivery: %+v", only.ID, ev.Deliveries)
	}
	for _, bad := range []struct {
		typ, subject string
		data         any
	}{
		{"identity.verification.unknown", "vs", map[string]any{}},
		{TypeTest, "vs", map[string]any{}},
		{TypeVerified, "", map[string]any{}},
		{TypeVerified, "user@example.com", map[string]any{}},
		{TypeVerified, "vs", []int{1}},
		{TypeVerified, "vs", map[string]string{"big": string(make([]byte, 9000))}},
	} {
		if _, err := o.Emit(context.Background(), testWS, bad.typ, bad.subject, 1, bad.data); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("Emit(%q, %q) = %v, want %v", bad.typ, bad.subject, err, ErrInvalidEvent)
		}
	}
}

func TestCaps(t *testing.T) {
	o, st, _ := mustNewOutbox(t, nil)
	for i := range catalog.MaxWebhookEndpointsPerWorkspace {
		mustEndpoint(t, o, fmt.Sprintf("http://127.0.0.1:9/%d", i))
	}
	u := "http://127.0.0.1:9/one-too-many"
	if _, _, err := o.CreateEndpoint(context.Background(), testWS, EndpointSpec{URL: &u}); !errors.Is(err, ErrEndpointLimit) {
		t.Fatalf("endpoint over the cap: %v", err)
	}
	// The outbox: pending events fill it; the next is refused, not lost silently.
	for i := range catalog.MaxWebhookEventsPerWorkspace {
		if _, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_cap", uint64(i), map[string]any{}); err != nil {
			t.Fatalf("emit %d: %v", i, err)
		}
	}
	if _, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_cap", 99999, map[string]any{}); !errors.Is(err, ErrOutboxFull) {
		t.Fatalf("emit over the cap: %v", err)
	}
	// Once events are finished, the oldest finished one makes room.
	for _, e := range o.Endpoints(testWS) {
		if err := o.DeleteEndpoint(context.Background(), testWS, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Emit(context.Background(), testWS, TypeVerified, "vs_cap", 99999, map[string]any{}); err != nil {
		t.Fatalf("emit once events are finished: %v", err)
	}
	if n := len(st.Catalog().WebhookOutboxes[testWS].Events); n != catalog.MaxWebhookEventsPerWorkspace {
		t.Fatalf("outbox holds %d events, want the cap %d", n, catalog.MaxWebhookEventsPerWorkspace)
	}
}

func TestRetentionPrunesFinishedEvents(t *testing.T) {
	o, st, clk := mustNewOutbox(t, nil)
	_, _ = o.Emit(context.Background(), testWS, TypeVerified, "vs_r", 1, map[string]any{})
	clk.Add(catalog.WebhookEventRetention + time.Minute)
	if _, err := st.Apply(context.Background(), &catalog.PruneWebhookOutboxes{At: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := len(st.Catalog().WebhookOutboxes[testWS].Events); n != 0 {
		t.Fatalf("%d events past retention remain", n)
	}
}

func TestRotationSignsWithBothSecretsDuringOverlap(t *testing.T) {
	o, _, clk := mustNewOutbox(t, nil)
	rcv := newReceiver(t, func(int) int { return 200 })
	ep, old := mustEndpoint(t, o, rcv.srv.URL)
	_, cur, err := o.RotateSecret(context.Background(), testWS, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = o.SendTest(context.Background(), testWS, ep.ID)
	step(o)
	clk.Add(2 * time.Hour)
	_, _ = o.SendTest(context.Background(), testWS, ep.ID)
	step(o)
	if rcv.count() != 2 {
		t.Fatalf("%d deliveries", rcv.count())
	}
	tol := 3 * time.Hour
	for _, s := range []string{old, cur} {
		if err := webhook.ValidatePayloadWithTolerance(rcv.bodies[0], rcv.got[0].Get(SignatureHeader), s, tol); err != nil {
			t.Errorf("during the overlap a secret does not verify: %v", err)
		}
	}
	if err := webhook.ValidatePayloadWithTolerance(rcv.bodies[1], rcv.got[1].Get(SignatureHeader), old, tol); err == nil {
		t.Error("after the overlap the old secret still verifies")
	}
	if err := webhook.ValidatePayloadWithTolerance(rcv.bodies[1], rcv.got[1].Get(SignatureHeader), cur, tol); err != nil {
		t.Errorf("after the overlap the new secret does not verify: %v", err)
	}
}

func TestTargetPolicy(t *testing.T) {
	strict := targetPolicy{}
	dev := targetPolicy{allowLoopback: true}
	ops := targetPolicy{allowPrivate: true}
	tests := []struct {
		name string
		p    targetPolicy
		url  string
		ok   bool
	}{
		{"a public https URL is allowed", strict, "https://hooks.example.com/trustd", true},
		{"plain http to a public host is refused", strict, "http://hooks.example.com/", false},
		{"http to loopback is refused in production", strict, "http://127.0.0.1:8080/", false},
		{"http to loopback is allowed in development", dev, "http://127.0.0.1:8080/", true},
		{"http to localhost is allowed in development", dev, "http://localhost:8080/", true},
		{"http to a private address is refused even in development", dev, "http://10.0.0.1/", false},
		{"https to a private address is refused", strict, "https://10.1.2.3/", false},
		{"https to a private address is allowed by the operator flag", ops, "https://10.1.2.3/", true},
		{"the cloud metadata address is refused", strict, "https://169.254.169.254/latest/meta-data", false},
		{"an IPv4-mapped private address is refused", strict, "https://[::ffff:192.168.1.1]/", false},
		{"an IPv6 unique-local address is refused", strict, "https://[fd00::1]/", false},
		{"shared address space is refused", strict, "https://100.64.0.1/", false},
		{"the unspecified address is never allowed", ops, "https://0.0.0.0/", false},
		{"user info is refused", strict, "https://user:pw@hooks.example.com/", false},
		{"a fragment is refused", strict, "https://hooks.example.com/#x", false},
		{"another scheme is refused", strict, "ftp://hooks.example.com/", false},
		{"a relative URL is refused", strict, "/hooks", false},
		{"a malformed host is refused", strict, "https://exa_mple.com/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.checkURL(tt.url); (err == nil) != tt.ok {
				t.Fatalf("checkURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
	t.Run("the dialler refuses a name that resolves to a refused address", func(t *testing.T) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(nethttp.ResponseWriter, *nethttp.Request) {}))
		defer srv.Close()
		port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
		_, err := strict.dialer(time.Second)(context.Background(), "tcp", "localhost:"+strconv.Itoa(int(port)))
		if err == nil {
			t.Fatal("dialled loopback under the strict policy")
		}
		c, err := dev.dialer(time.Second)(context.Background(), "tcp", "localhost:"+strconv.Itoa(int(port)))
		if err != nil {
			t.Fatalf("development policy: %v", err)
		}
		c.Close()
	})
}

func TestHostileReceiversAreBounded(t *testing.T) {
	o, _, _ := mustNewOutbox(t, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	release := make(chan struct{})
	slow := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	huge := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.WriteHeader(200)
		chunk := make([]byte, 64<<10)
		for i := 0; i < 1024; i++ { // 64 MiB offered
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	se, _ := mustEndpoint(t, o, slow.URL)
	he, _ := mustEndpoint(t, o, huge.URL)
	id, _ := o.Emit(context.Background(), testWS, TypeVerified, "vs_hostile", 1, map[string]any{})
	start := time.Now()
	step(o)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("a round with hostile receivers took %v", el)
	}
	if d := delivery(t, o, id, se.ID); d.Status != catalog.DeliveryPending || d.Attempts != 1 || d.LastError == "" {
		t.Fatalf("slow receiver: %+v (want a timed-out attempt, retry scheduled)", d)
	}
	if d := delivery(t, o, id, he.ID); d.Status != catalog.DeliveryDelivered {
		t.Fatalf("huge 200 answer: %+v (the status counts; the body is read at most 64 KiB)", d)
	}
}

func TestOneWorkspaceCannotTakeEverySlot(t *testing.T) {
	o, st, _ := mustNewOutbox(t, func(c *Config) { c.Concurrency, c.PerEndpoint = 4, 4 })
	ctx := context.Background()
	if _, err := st.Apply(ctx, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws-2", Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var busy atomic.Int32
	blocking := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		busy.Add(1)
		<-release
	}))
	defer blocking.Close()
	other := make(chan struct{}, 1)
	quick := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { other <- struct{}{} }))
	defer quick.Close()
	mustEndpoint(t, o, blocking.URL)
	for i := range 10 {
		if _, err := o.Emit(ctx, testWS, TypeVerified, "vs_backlog", uint64(i), map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	u := quick.URL
	if _, _, err := o.CreateEndpoint(ctx, "ws-2", EndpointSpec{URL: &u}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Emit(ctx, "ws-2", TypeVerified, "vs_other", 1, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	o.dispatch(ctx, o.client())
	select {
	case <-other:
	case <-time.After(5 * time.Second):
		t.Fatal("the other workspace's event was not sent while the first workspace's backlog blocked")
	}
	o.disp.mu.Lock()
	a, b := o.disp.perWS[testWS], o.disp.total
	o.disp.mu.Unlock()
	close(release)
	o.disp.wg.Wait()
	if a != 2 || b > 3 {
		t.Fatalf("in flight: %d for the backlogged workspace (want PerWorkspace 2), %d in all", a, b)
	}
}
