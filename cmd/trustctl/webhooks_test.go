package main

import (
	"bytes"
	"context"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/events"
)

func TestTrustctlWebhooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true,
		Webhooks: events.Config{AllowLoopback: true, Tick: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	got := make(chan string, 4)
	rcv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		got <- r.Header.Get(events.EventTypeHeader)
	}))
	defer rcv.Close()
	ctl := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		all := append([]string{"--addr", n.APIURL(), "--admin-token", n.AdminToken()}, args...)
		if err := run(all, &out); err != nil {
			t.Fatalf("trustctl %v: %v", args, err)
		}
		return out.String()
	}
	ctl("workspaces", "create", "--name", "acme")
	var ws string
	for id := range n.Store().Catalog().Workspaces {
		ws = id
	}
	out := ctl("webhooks", "create", "--workspace", ws, "--url", rcv.URL+"/hook", "--event-types", "identity.verification.verified,webhook.test")
	if !strings.Contains(out, "whsec_") || !strings.Contains(out, "identity.verification.verified,webhook.test") {
		t.Fatalf("webhooks create:\n%s", out)
	}
	var ep string
	for id := range n.Store().Catalog().WebhookEndpoints {
		ep = id
	}
	if out := ctl("webhooks", "list", "--workspace", ws); strings.Contains(out, "whsec_") || !strings.Contains(out, ep) {
		t.Fatalf("webhooks list:\n%s", out)
	}
	if out := ctl("webhooks", "test", ep, "--workspace", ws); !strings.Contains(out, "evt_") {
		t.Fatalf("webhooks test:\n%s", out)
	}
	select {
	case typ := <-got:
		if typ != events.TypeTest {
			t.Fatalf("received %q", typ)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the test event was not delivered")
	}
	var out2 string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out2 = ctl("webhooks", "deliveries", ep, "--workspace", ws); strings.Contains(out2, "delivered") {
			break
		}
	}
	if !strings.Contains(out2, "delivered") {
		t.Fatalf("webhooks deliveries:\n%s", out2)
	}
	if out := ctl("webhooks", "rotate-secret", ep, "--workspace", ws, "--overlap-seconds", "60"); !strings.Contains(out, "whsec_") {
		t.Fatalf("rotate-secret:\n%s", out)
	}
	if out := ctl("webhook-events", "list", "--workspace", ws); !strings.Contains(out, "webhook.test") {
		t.Fatalf("webhook-events list:\n%s", out)
	}
	if out := ctl("webhooks", "alerts", "--workspace", ws); !strings.Contains(out, "ENDPOINT_ID") && strings.TrimSpace(out) != "" {
		t.Fatalf("alerts:\n%s", out)
	}
	if out := ctl("webhooks", "update", ep, "--workspace", ws, "--enabled", "false"); !strings.Contains(out, "disabled") {
		t.Fatalf("update:\n%s", out)
	}
	if out := ctl("webhooks", "delete", ep, "--workspace", ws); !strings.Contains(out, "ok") {
		t.Fatalf("delete:\n%s", out)
	}
}
