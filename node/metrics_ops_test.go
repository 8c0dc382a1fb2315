package node

import (
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

func TestWebhookBacklogCountsPendingDeliveriesAndTheOldestWaitingEvent(t *testing.T) {
	now := time.Now()
	ev := func(age time.Duration, statuses ...string) *catalog.WebhookEvent {
		e := &catalog.WebhookEvent{CreatedAt: now.Add(-age)}
		for _, s := range statuses {
			e.Deliveries = append(e.Deliveries, catalog.WebhookDelivery{Status: s})
		}
		return e
	}
	cat := catalog.Empty()
	cat.WebhookOutboxes = map[string]*catalog.WebhookOutbox{
		"ws1": {Events: map[string]*catalog.WebhookEvent{
			"a": ev(time.Hour, catalog.DeliveryPending, "delivered"),
			"b": ev(3*time.Hour, "delivered"), // finished: its age does not count
		}},
		"ws2": {Events: map[string]*catalog.WebhookEvent{"c": ev(2*time.Hour, catalog.DeliveryPending, catalog.DeliveryPending)}},
	}
	pending, oldest := webhookBacklog(cat, now)
	if pending != 3 || oldest != 2*time.Hour {
		t.Fatalf("pending %d, oldest %v; want 3 and 2h", pending, oldest)
	}
	if p, o := webhookBacklog(catalog.Empty(), now); p != 0 || o != 0 {
		t.Fatalf("empty outbox: %d %v", p, o)
	}
}
