package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/events"
)

// An identity session's event (identity.verification.cancelled, emitted
// by the session module on a follower) is being delivered by the Raft
// leader when the leader is killed: the receiver (127.0.0.1, verifying
// both signatures) has the request but its answer never reaches a node
// that can record it. The new leader delivers the event again from the
// replicated outbox with the same event id; the receiver, deduplicating on
// webhook-id, acts on it exactly once. Delivery is at least once, with a
// stable id: this is the contract receivers are told to rely on.
func TestIdentityWebhookRedeliveredAfterLeaderKill(t *testing.T) {
	c := StartWith(t, 3, func(cfg *node.Config) {
		cfg.Webhooks = events.Config{AllowLoopback: true, Tick: 50 * time.Millisecond,
			Schedule: []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}}
	})

	var secret string
	var mu sync.Mutex
	arrivals := map[string]int{}     // webhook-id → requests that verified
	processed := map[string][]byte{} // webhook-id → the body acted on
	acted := map[string]int{}        // webhook-id → times the receiver acted
	bad := 0
	firstHeld := make(chan string, 1)
	release := make(chan struct{})
	var holdOnce sync.Once
	rcv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		mu.Lock()
		sec := secret
		mu.Unlock()
		std, err := standardwebhooks.NewWebhook(sec)
		if err == nil {
			err = std.Verify(body, r.Header)
		}
		if err == nil {
			err = webhook.ValidatePayloadWithTolerance(body, r.Header.Get(events.SignatureHeader), sec, 5*time.Minute)
		}
		if err == nil {
			err = events.Verify(body, r.Header.Get(events.SignatureHeader), sec, time.Now(), 5*time.Minute)
		}
		id := r.Header.Get("webhook-id")
		mu.Lock()
		if err != nil || id == "" {
			bad++
			mu.Unlock()
			w.WriteHeader(400)
			return
		}
		arrivals[id]++
		mu.Unlock()
		if bytes.Contains(body, []byte(`"identity.verification.cancelled"`)) {
			held := false
			holdOnce.Do(func() { held = true })
			if held {
				// The first delivery of the identity event: hold it until
				// the leader that sent it is dead, then answer 2xx to no one.
				firstHeld <- id
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
		}
		mu.Lock()
		if _, seen := processed[id]; !seen {
			processed[id] = body // act on it; a repeat is acknowledged and ignored
			acted[id]++
		}
		mu.Unlock()
		w.WriteHeader(200)
	}))
	defer rcv.Close()
	defer close(release)

	var ws struct {
		ID string `json:"workspace_id"`
	}
	mustJSON(t, c.MustCreate(0, "/admin/v1/workspaces", `{"name":"idhooks"}`), &ws)
	var cred struct {
		Credential string `json:"credential"`
	}
	mustJSON(t, c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/credentials", `{"name":"idv","scopes":["identity.document.verify"]}`), &cred)
	var ep struct {
		Secret string `json:"secret"`
	}
	mustJSON(t, c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/webhooks", `{"url":"`+rcv.URL+`/hook"}`), &ep)
	mu.Lock()
	secret = ep.Secret
	mu.Unlock()

	leader := c.WaitLeader()
	via := (leader + 1) % 3
	// The session lives on a follower's API: create and cancel it there.
	var sess struct {
		ID    string `json:"session_id"`
		Token string `json:"session_token"`
	}
	Eventually(t, 10*time.Second, func() error {
		st, b, err := c.DoAs(via, "POST", "/v1/identity/verification/session", cred.Credential, []byte(`{"subject_id":"user-7","action":"open_account",
			"assurance_level":"document_only","country":"UTO","document_type":"passport","consent_accepted":true,"consent_reference":"c-1"}`))
		if err != nil || st != 201 {
			return fmt.Errorf("create session: %d %s %v", st, b, err)
		}
		return json.Unmarshal(b, &sess, json.RejectUnknownMembers(false))
	})
	st, b, err := doWithHeader(c.Nodes[via].APIURL()+"/v1/identity/verification/"+sess.ID+"/cancel", cred.Credential,
		"X-Service-Identity-Session-Token", sess.Token)
	if err != nil || st != 200 || !bytes.Contains(b, []byte(`"status":"cancelled"`)) {
		t.Fatalf("cancel: %d %s %v", st, b, err)
	}

	var id string
	select {
	case id = <-firstHeld:
	case <-time.After(20 * time.Second):
		t.Fatal("the identity event never reached the receiver")
	}
	// The leader is sending it now (the receiver holds the request); kill it.
	if now := c.Leader(); now != leader {
		t.Logf("leadership moved from node-%d to node-%d before the kill", leader, now)
		leader = now
	}
	c.Kill(leader)
	newLeader := c.WaitLeader()
	if newLeader == leader {
		t.Fatal("the killed node is still the leader")
	}
	delivered := func(i int) error {
		ob := c.Nodes[i].Store().Catalog().WebhookOutboxes[ws.ID]
		if ob == nil || ob.Events[id] == nil || len(ob.Events[id].Deliveries) != 1 {
			return fmt.Errorf("node-%d: event %s not in the outbox", i, id)
		}
		if d := ob.Events[id].Deliveries[0]; d.Status != catalog.DeliveryDelivered {
			return fmt.Errorf("node-%d: delivery %+v", i, d)
		}
		return nil
	}
	Eventually(t, 20*time.Second, func() error {
		for _, i := range c.Live() {
			if err := delivered(i); err != nil {
				return err
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if bad != 0 {
		t.Fatalf("%d deliveries failed signature verification", bad)
	}
	if arrivals[id] < 2 {
		t.Fatalf("event %s arrived %d times: the killed leader's attempt was not redelivered", id, arrivals[id])
	}
	var ev struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Subject  string `json:"subject"`
		Sequence uint64 `json:"sequence"`
	}
	mustJSON(t, processed[id], &ev)
	if ev.ID != id || ev.Type != "identity.verification.cancelled" || ev.Subject != sess.ID || ev.Sequence == 0 {
		t.Fatalf("processed event %+v (id %s, session %s)", ev, id, sess.ID)
	}
	if bytes.Contains(processed[id], []byte("user-7")) {
		t.Fatalf("the event carries the subject id: %s", processed[id])
	}
	if acted[id] != 1 {
		t.Fatalf("the receiver acted %d times on %s", acted[id], id)
	}
	t.Logf("event %s: %d verified arrivals, acted on once; new leader node-%d", id, arrivals[id], newLeader)
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func doWithHeader(url, bearer, k, v string) (int, []byte, error) {
	req, err := nethttp.NewRequestWithContext(context.Background(), "POST", url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set(k, v)
	resp, err := (&nethttp.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
