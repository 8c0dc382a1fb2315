package clustertest

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/events"
)

// TestWebhookLeaderKilledMidRetryNewLeaderDelivers: the receiver fails
// the first attempts, the Raft leader (the only node that delivers) is
// killed while the delivery waits for its retry, the receiver recovers,
// and the new leader delivers the same event from the replicated outbox,
// its attempt number going on, signed with the secret every node opens.
func TestWebhookLeaderKilledMidRetryNewLeaderDelivers(t *testing.T) {
	c := StartWith(t, 3, func(cfg *node.Config) {
		cfg.Webhooks = events.Config{AllowLoopback: true, Tick: 50 * time.Millisecond,
			Schedule: []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond,
				300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}}
	})
	var healthy atomic.Bool
	var mu sync.Mutex
	type hit struct {
		attempt int
		ok      bool
		header  nethttp.Header
		body    []byte
	}
	var hits []hit
	rcv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		n, _ := strconv.Atoi(r.Header.Get(events.AttemptHeader))
		ok := healthy.Load()
		mu.Lock()
		hits = append(hits, hit{n, ok, r.Header.Clone(), b})
		mu.Unlock()
		if !ok {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(200)
	}))
	defer rcv.Close()

	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"hooks"}`), &ws, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	var ep struct {
		ID     string `json:"endpoint_id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(c.MustCreate(1, "/admin/v1/workspaces/"+ws.ID+"/webhooks", `{"url":"`+rcv.URL+`/hook"}`), &ep, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader()
	// Emitted through a follower: the command is forwarded to the leader.
	via := (leader + 1) % 3
	id, err := c.Nodes[via].Webhooks().Emit(context.Background(), ws.ID, events.TypeReviewRequired, "vs_cluster", 1, map[string]any{"status": "review"})
	if err != nil {
		t.Fatal(err)
	}
	delivery := func(i int) catalog.WebhookDelivery {
		ob := c.Nodes[i].Store().Catalog().WebhookOutboxes[ws.ID]
		if ob == nil || ob.Events[id] == nil || len(ob.Events[id].Deliveries) != 1 {
			return catalog.WebhookDelivery{}
		}
		return ob.Events[id].Deliveries[0]
	}
	Eventually(t, 10*time.Second, func() error {
		if d := delivery(via); d.Attempts < 2 || d.Status != catalog.DeliveryPending {
			return fmt.Errorf("delivery %+v: want 2 failed attempts recorded, still pending", d)
		}
		return nil
	})
	c.Kill(leader)
	failedBefore := delivery(via).Attempts
	healthy.Store(true)
	newLeader := c.WaitLeader()
	if newLeader == leader {
		t.Fatal("the killed node is still the leader")
	}
	Eventually(t, 15*time.Second, func() error {
		for _, i := range c.Live() {
			if d := delivery(i); d.Status != catalog.DeliveryDelivered {
				return fmt.Errorf("node-%d sees delivery %+v", i, d)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	var okHits []hit
	for _, h := range hits {
		if h.ok {
			okHits = append(okHits, h)
		}
	}
	if len(okHits) == 0 {
		t.Fatal("the receiver never answered 2xx")
	}
	h := okHits[0]
	if h.attempt <= failedBefore || h.header.Get("Webhook-Id") != id {
		t.Fatalf("delivered attempt %d (after %d failures), webhook-id %q", h.attempt, failedBefore, h.header.Get("Webhook-Id"))
	}
	if err := webhook.ValidatePayloadWithTolerance(h.body, h.header.Get(events.SignatureHeader), ep.Secret, 5*time.Minute); err != nil {
		t.Fatalf("the new leader's signature does not verify: %v", err)
	}
}
