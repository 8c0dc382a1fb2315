package catalog

import (
	"errors"
	"testing"
	"time"
)

// applyWire applies cmds as Raft does: each through its wire form.
func applyWire(t *testing.T, c *Catalog, cmds ...Command) (*Catalog, any, error) {
	t.Helper()
	tx := Begin(c)
	var last any
	for _, cmd := range cmds {
		b, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(cmd.Kind(), b)
		if err != nil {
			t.Fatalf("%s does not round-trip the wire: %v", cmd.Kind(), err)
		}
		if last, err = d.Apply(tx); err != nil {
			return c, nil, err
		}
	}
	return tx.Commit(c.Index + 1), last, nil
}

func TestWebhookCommands(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sec := []WebhookSecret{{Sealed: []byte("sealed")}}
	c, _, err := applyWire(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&CreateWebhookEndpoint{Endpoint: WebhookEndpoint{ID: "e1", WorkspaceID: "w1", URL: "https://a.example", Status: WebhookEnabled, Secrets: sec}},
		&CreateWebhookEndpoint{Endpoint: WebhookEndpoint{ID: "e2", WorkspaceID: "w1", URL: "https://b.example", Status: WebhookEnabled, Secrets: sec, EventTypes: []string{"t.other"}}},
		&CreateWebhookEndpoint{Endpoint: WebhookEndpoint{ID: "e3", WorkspaceID: "w2", URL: "https://c.example", Status: WebhookEnabled, Secrets: sec}},
		&EmitWebhookEvent{Event: WebhookEvent{ID: "ev1", WorkspaceID: "w1", Type: "t.one", Subject: "s", Sequence: 1, Body: []byte(`{}`), CreatedAt: t0}},
	)
	if err != nil {
		t.Fatal(err)
	}
	ev := c.WebhookOutboxes["w1"].Events["ev1"]
	if len(ev.Deliveries) != 1 || ev.Deliveries[0].EndpointID != "e1" || ev.Deliveries[0].Status != DeliveryPending || !ev.Deliveries[0].NextAt.Equal(t0) {
		t.Fatalf("fan-out: %+v", ev.Deliveries)
	}
	if c.WebhookOutboxes["w2"] != nil {
		t.Fatal("another workspace got an outbox")
	}

	t.Run("a recorded attempt leaves the previous catalog version untouched", func(t *testing.T) {
		c2, _, err := applyWire(t, c, &RecordWebhookAttempts{Results: []WebhookResult{{WorkspaceID: "w1", EventID: "ev1", EndpointID: "e1",
			Attempt: 1, At: t0, HTTPStatus: 500, Error: "HTTP 500", NextAt: t0.Add(time.Minute)}}, DisableAfterFailures: 10})
		if err != nil {
			t.Fatal(err)
		}
		if d := c2.WebhookOutboxes["w1"].Events["ev1"].Deliveries[0]; d.Attempts != 1 || !d.NextAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("new version: %+v", d)
		}
		if d := c.WebhookOutboxes["w1"].Events["ev1"].Deliveries[0]; d.Attempts != 0 || len(c.WebhookOutboxes["w1"].Log["e1"]) != 0 {
			t.Fatalf("the old version changed: %+v", d)
		}
		if c2.WebhookEndpoints["e1"].ConsecutiveFailures != 1 || c.WebhookEndpoints["e1"].ConsecutiveFailures != 0 {
			t.Fatal("endpoint health not copied on write")
		}
		// The same attempt recorded again (a second leader) changes nothing.
		c3, _, _ := applyWire(t, c2, &RecordWebhookAttempts{Results: []WebhookResult{{WorkspaceID: "w1", EventID: "ev1", EndpointID: "e1",
			Attempt: 1, At: t0.Add(time.Second), Delivered: true}}})
		if d := c3.WebhookOutboxes["w1"].Events["ev1"].Deliveries[0]; d.Status != DeliveryPending || d.Attempts != 1 {
			t.Fatalf("a stale attempt result was applied: %+v", d)
		}
	})

	t.Run("redelivery of a delivered event schedules it again", func(t *testing.T) {
		c2, _, err := applyWire(t, c,
			&RecordWebhookAttempts{Results: []WebhookResult{{WorkspaceID: "w1", EventID: "ev1", EndpointID: "e1", Attempt: 1, At: t0, HTTPStatus: 200, Delivered: true}}},
			&RedeliverWebhookEvent{WorkspaceID: "w1", EventID: "ev1", At: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		d := c2.WebhookOutboxes["w1"].Events["ev1"].Deliveries[0]
		if d.Status != DeliveryPending || d.Attempts != 1 || d.ScheduleFrom != 1 || !d.NextAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("redelivered: %+v", d)
		}
		if _, _, err := applyWire(t, c, &RedeliverWebhookEvent{WorkspaceID: "w2", EventID: "ev1", At: t0}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("redelivery across workspaces: %v", err)
		}
	})

	t.Run("disabling by an admin fails the pending deliveries", func(t *testing.T) {
		off := false
		c2, _, err := applyWire(t, c, &UpdateWebhookEndpoint{WorkspaceID: "w1", ID: "e1", Enabled: &off, At: t0})
		if err != nil {
			t.Fatal(err)
		}
		if d := c2.WebhookOutboxes["w1"].Events["ev1"].Deliveries[0]; d.Status != DeliveryFailed {
			t.Fatalf("pending delivery of a disabled endpoint: %+v", d)
		}
		if _, _, err := applyWire(t, c2, &EmitWebhookEvent{Event: WebhookEvent{ID: "t", WorkspaceID: "w1", Type: "webhook.test", Body: []byte(`{}`), CreatedAt: t0}, OnlyEndpoint: "e1"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a test event to a disabled endpoint: %v", err)
		}
	})

	t.Run("rotation keeps the previous secret until its overlap ends", func(t *testing.T) {
		c2, _, err := applyWire(t, c, &RotateWebhookSecret{WorkspaceID: "w1", ID: "e1", Secret: WebhookSecret{Sealed: []byte("new")}, PrevUntil: t0.Add(time.Hour), At: t0})
		if err != nil {
			t.Fatal(err)
		}
		if s := c2.WebhookEndpoints["e1"].Secrets; len(s) != 2 || string(s[0].Sealed) != "new" || !s[1].NotAfter.Equal(t0.Add(time.Hour)) {
			t.Fatalf("secrets %+v", s)
		}
		c3, _, _ := applyWire(t, c2, &RotateWebhookSecret{WorkspaceID: "w1", ID: "e1", Secret: WebhookSecret{Sealed: []byte("newer")}, At: t0.Add(2 * time.Hour)})
		if s := c3.WebhookEndpoints["e1"].Secrets; len(s) != 1 || string(s[0].Sealed) != "newer" {
			t.Fatalf("after the overlap and a rotation without one: %+v", s)
		}
	})

	t.Run("an endpoint of another workspace cannot be touched", func(t *testing.T) {
		for _, cmd := range []Command{
			&DeleteWebhookEndpoint{WorkspaceID: "w2", ID: "e1"},
			&UpdateWebhookEndpoint{WorkspaceID: "w2", ID: "e1", At: t0},
			&RotateWebhookSecret{WorkspaceID: "w2", ID: "e1", Secret: WebhookSecret{Sealed: []byte("x")}, At: t0},
			&EmitWebhookEvent{Event: WebhookEvent{ID: "t2", WorkspaceID: "w2", Type: "webhook.test", Body: []byte(`{}`), CreatedAt: t0}, OnlyEndpoint: "e1"},
		} {
			if _, _, err := applyWire(t, c, cmd); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s across workspaces: %v", cmd.Kind(), err)
			}
		}
	})

	t.Run("the snapshot round-trips the outbox", func(t *testing.T) {
		b, err := c.MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if e := r.WebhookOutboxes["w1"].Events["ev1"]; e == nil || string(e.Body) != "{}" || len(e.Deliveries) != 1 || string(r.WebhookEndpoints["e1"].Secrets[0].Sealed) != "sealed" {
			t.Fatalf("restored %+v", e)
		}
	})

	t.Run("deleting the workspace deletes its endpoints and outbox", func(t *testing.T) {
		c2, _, err := applyWire(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if c2.WebhookEndpoints["e1"] != nil || c2.WebhookOutboxes["w1"] != nil || c2.WebhookEndpoints["e3"] == nil {
			t.Fatal("webhook records survived their workspace, or another workspace's were removed")
		}
	})

	t.Run("deleting an endpoint removes its deliveries and log", func(t *testing.T) {
		c2, _, err := applyWire(t, c, &DeleteWebhookEndpoint{WorkspaceID: "w1", ID: "e1"})
		if err != nil {
			t.Fatal(err)
		}
		if e := c2.WebhookOutboxes["w1"].Events["ev1"]; len(e.Deliveries) != 0 || !e.Finished() {
			t.Fatalf("deliveries of a deleted endpoint remain: %+v", e.Deliveries)
		}
	})

	t.Run("the endpoint cap", func(t *testing.T) {
		tx := Begin(c)
		for i := 2; i < MaxWebhookEndpointsPerWorkspace; i++ {
			e := WebhookEndpoint{ID: "x" + string(rune('a'+i)), WorkspaceID: "w1", Status: WebhookEnabled, Secrets: sec}
			if _, err := (&CreateWebhookEndpoint{Endpoint: e}).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		_, err := (&CreateWebhookEndpoint{Endpoint: WebhookEndpoint{ID: "over", WorkspaceID: "w1", Secrets: sec}}).Apply(tx)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("endpoint over the cap: %v", err)
		}
	})
}
