package api_test

import (
	"context"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/platform/events"
)

type wsView struct {
	WorkspaceID string `json:"workspace_id"`
}

// hookReceiver is a webhook receiver on a fixed 127.0.0.1 port that can
// be down (nothing listening: connection refused) and brought up again.
type hookReceiver struct {
	t    *testing.T
	addr string
	mu   sync.Mutex
	srv  *nethttp.Server
	got  []hookDelivery
}

type hookDelivery struct {
	header nethttp.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{t: t, addr: ln.Addr().String()}
	ln.Close() // down until up()
	t.Cleanup(r.down)
	return r
}

func (r *hookReceiver) url() string { return "http://" + r.addr + "/hooks" }

func (r *hookReceiver) up() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("receiver up on %s: %v", r.addr, err)
	}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, q *nethttp.Request) {
		b, _ := io.ReadAll(q.Body)
		r.mu.Lock()
		r.got = append(r.got, hookDelivery{q.Header.Clone(), b})
		r.mu.Unlock()
		w.WriteHeader(204)
	})}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (r *hookReceiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (r *hookReceiver) deliveries() []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookDelivery(nil), r.got...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fastWebhooks(c *node.Config) {
	c.Webhooks = events.Config{AllowLoopback: true, Tick: 50 * time.Millisecond,
		Schedule: []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond,
			200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}}
}

type webhookView struct {
	EndpointID          string `json:"endpoint_id"`
	Status              string `json:"status"`
	Secret              string `json:"secret"`
	SecretsValid        int    `json:"secrets_valid"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
}

type webhookEventView struct {
	EventID    string `json:"event_id"`
	Deliveries []struct {
		EndpointID string `json:"endpoint_id"`
		Status     string `json:"status"`
		Attempts   int    `json:"attempts"`
	} `json:"deliveries"`
}

// verifyDelivery checks one received delivery with both stock libraries.
func verifyDelivery(t *testing.T, d hookDelivery, secret string) {
	t.Helper()
	if err := webhook.ValidatePayloadWithTolerance(d.body, d.header.Get(events.SignatureHeader), secret, 5*time.Minute); err != nil {
		t.Errorf("stripe-go rejects the delivery: %v", err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Errorf("standard webhooks rejects the delivery: %v", err)
	}
}

func TestWebhookDeliveredThroughANodeAfterReceiverOutageAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true}
	fastWebhooks(&cfg)
	tn := nodetest.StartConfig(t, cfg)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "hooks"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID
	rcv := newHookReceiver(t)

	var ep webhookView
	tn.MustCreate(base+"/webhooks", map[string]any{"url": rcv.url(), "event_types": []string{events.TypeVerified, events.TypeTest}}, &ep)
	if ep.Secret == "" || ep.Status != "enabled" || ep.SecretsValid != 1 {
		t.Fatalf("create: %+v", ep)
	}
	var got webhookView
	if r := tn.Admin("GET", base+"/webhooks/"+ep.EndpointID, nil); r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	} else if r.Decode(t, &got); got.Secret != "" {
		t.Fatal("the secret was shown again after creation")
	}

	// Refused URLs and fields: production rules still apply on this node.
	for _, bad := range []map[string]any{
		{"url": "https://10.0.0.1/hook"},
		{"url": "http://example.com/hook"},
		{"url": "https://169.254.169.254/"},
		{"url": rcv.url(), "event_types": []string{"nope"}},
	} {
		if r := tn.Admin("POST", base+"/webhooks", bad); r.Status != 400 {
			t.Errorf("create %v: %d %s", bad, r.Status, r.Body)
		}
	}

	// The receiver is down: attempts fail (connection refused) and retry.
	id, err := tn.N.Webhooks().Emit(context.Background(), ws.WorkspaceID, events.TypeVerified, "vs_outage", 1, map[string]any{"status": "verified"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.N.Webhooks().Emit(context.Background(), ws.WorkspaceID, events.TypeRejected, "vs_outage", 2, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two failed attempts in the delivery log", 10*time.Second, func() bool {
		var l struct {
			Attempts []struct {
				Outcome string `json:"outcome"`
				Error   string `json:"error"`
			} `json:"attempts"`
		}
		tn.Admin("GET", base+"/webhooks/"+ep.EndpointID+"/deliveries", nil).Decode(t, &l)
		return len(l.Attempts) >= 2 && l.Attempts[0].Outcome == "retrying" && l.Attempts[0].Error != ""
	})

	// The node restarts while the delivery is pending; the outbox survives.
	tn.Stop()
	rcv.up()
	tn = nodetest.StartConfig(t, cfg)
	waitFor(t, "the event delivered after the outage and the restart", 10*time.Second, func() bool { return len(rcv.deliveries()) >= 1 })
	d := rcv.deliveries()[0]
	verifyDelivery(t, d, ep.Secret)
	if d.header.Get("Webhook-Id") != id || d.header.Get(events.EventTypeHeader) != events.TypeVerified {
		t.Fatalf("delivery headers %v", d.header)
	}
	if n, _ := strconv.Atoi(d.header.Get(events.AttemptHeader)); n < 3 {
		t.Fatalf("attempt header %q after two failures", d.header.Get(events.AttemptHeader))
	}
	var ev webhookEventView
	waitFor(t, "the delivery recorded", 5*time.Second, func() bool {
		tn.Admin("GET", base+"/webhook-events/"+id, nil).Decode(t, &ev)
		return len(ev.Deliveries) == 1 && ev.Deliveries[0].Status == "delivered"
	})

	// Manual redelivery sends the same event again.
	if r := tn.Admin("POST", base+"/webhook-events/"+id+"/redeliver", map[string]any{}); r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the redelivery", 10*time.Second, func() bool { return len(rcv.deliveries()) >= 2 })
	again := rcv.deliveries()[1]
	if again.header.Get("Webhook-Id") != id || string(again.body) != string(d.body) {
		t.Fatal("the redelivery is not the same event")
	}
	verifyDelivery(t, again, ep.Secret)

	// Rotation: both secrets verify during the overlap; a test event.
	var rot webhookView
	if r := tn.Admin("POST", base+"/webhooks/"+ep.EndpointID+"/rotate-secret", map[string]any{"overlap_seconds": 3600}); r.Status != 200 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &rot)
	}
	if rot.Secret == "" || rot.Secret == ep.Secret || rot.SecretsValid != 2 {
		t.Fatalf("rotate: %+v", rot)
	}
	var test struct {
		EventID string `json:"event_id"`
	}
	if r := tn.Admin("POST", base+"/webhooks/"+ep.EndpointID+"/test", nil); r.Status != 202 {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &test)
	}
	waitFor(t, "the test event", 10*time.Second, func() bool { return len(rcv.deliveries()) >= 3 })
	te := rcv.deliveries()[2]
	if te.header.Get("Webhook-Id") != test.EventID || te.header.Get(events.EventTypeHeader) != events.TypeTest {
		t.Fatalf("test delivery headers %v", te.header)
	}
	verifyDelivery(t, te, ep.Secret)
	verifyDelivery(t, te, rot.Secret)

	// The rejected event was filtered out; the list shows all three events.
	var list struct {
		Events []webhookEventView `json:"events"`
	}
	tn.Admin("GET", base+"/webhook-events", nil).Decode(t, &list)
	if len(list.Events) != 3 {
		t.Fatalf("outbox lists %d events, want 3", len(list.Events))
	}
	for _, e := range list.Events {
		if e.EventID != id && e.EventID != test.EventID && len(e.Deliveries) != 0 {
			t.Fatalf("the filtered-out event has deliveries: %+v", e)
		}
	}
	var one struct {
		Events []webhookEventView `json:"events"`
	}
	tn.Admin("GET", base+"/webhook-events?limit=1", nil).Decode(t, &one)
	if len(one.Events) != 1 || one.Events[0].EventID != test.EventID {
		t.Fatalf("limit=1 lists %+v, want the newest (the test event)", one.Events)
	}
	if r := tn.Admin("GET", base+"/webhook-events?limit=0", nil); r.Status != 400 {
		t.Fatalf("limit=0: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("POST", base+"/webhook-events/evt_nope/redeliver", map[string]any{}); r.Status != 404 || r.ErrorCode(t) != "webhook-event-not-found" {
		t.Fatalf("redeliver an unknown event: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("DELETE", base+"/webhooks/"+ep.EndpointID, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("GET", base+"/webhooks/"+ep.EndpointID, nil); r.Status != 404 || r.ErrorCode(t) != "webhook-endpoint-not-found" {
		t.Fatalf("get after delete: %d %s", r.Status, r.Body)
	}
}

func TestWebhookEndpointDisabledAfterSustainedFailure(t *testing.T) {
	tn := nodetest.Start(t, fastWebhooks, func(c *node.Config) {
		c.Webhooks.DisableAfterFailures, c.Webhooks.DisableAfter = 3, time.Millisecond
	})
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "failing"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID
	rcv := newHookReceiver(t) // never up
	var ep webhookView
	tn.MustCreate(base+"/webhooks", map[string]any{"url": rcv.url()}, &ep)
	if _, err := tn.N.Webhooks().Emit(context.Background(), ws.WorkspaceID, events.TypeCancelled, "vs_dead", 1, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the endpoint disabled", 10*time.Second, func() bool {
		var v webhookView
		tn.Admin("GET", base+"/webhooks/"+ep.EndpointID, nil).Decode(t, &v)
		return v.Status == "disabled"
	})
	var al struct {
		Alerts []struct {
			EndpointID string `json:"endpoint_id"`
			Kind       string `json:"kind"`
		} `json:"alerts"`
	}
	tn.Admin("GET", base+"/webhook-alerts", nil).Decode(t, &al)
	if len(al.Alerts) != 1 || al.Alerts[0].Kind != "endpoint_disabled" {
		t.Fatalf("alerts %+v", al)
	}
	if r := tn.Admin("POST", base+"/webhooks/"+ep.EndpointID+"/test", nil); r.Status != 409 || r.ErrorCode(t) != "webhook-endpoint-disabled" {
		t.Fatalf("test to a disabled endpoint: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("PATCH", base+"/webhooks/"+ep.EndpointID, map[string]any{"enabled": true}); r.Status != 200 {
		t.Fatalf("re-enable: %d %s", r.Status, r.Body)
	}
}
