package catalog

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Signed webhooks (spec 6): endpoints are configuration (a table like
// agents); the outbox is one value per workspace, so a command that
// touches one workspace's events copies that workspace's events map, not
// every tenant's. The platform/events/ package decides what goes in; these
// commands only apply it deterministically and enforce the caps.

// Caps and retention of webhook records, per workspace.
const (
	// MaxWebhookEndpointsPerWorkspace bounds a workspace's endpoints.
	MaxWebhookEndpointsPerWorkspace = 16
	// MaxWebhookSecrets bounds an endpoint's secrets: the current one and
	// those still inside a rotation's overlap.
	MaxWebhookSecrets = 3
	// MaxWebhookEventsPerWorkspace bounds a workspace's outbox. At the
	// cap, the oldest finished event is evicted before retention ends; a
	// workspace whose outbox holds that many unfinished events is refused.
	MaxWebhookEventsPerWorkspace = 1000
	// MaxWebhookEventBytes bounds one event's body.
	MaxWebhookEventBytes = 8 << 10
	// MaxWebhookLogPerEndpoint bounds an endpoint's delivery log.
	MaxWebhookLogPerEndpoint = 100
	// MaxWebhookAlerts bounds a workspace's alert list.
	MaxWebhookAlerts = 50
	// WebhookEventRetention keeps a finished event (every delivery
	// delivered or given up) for reading and manual redelivery.
	WebhookEventRetention = 7 * 24 * time.Hour
)

// Webhook endpoint and delivery states.
const (
	WebhookEnabled  = "enabled"
	WebhookDisabled = "disabled"

	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// WebhookSecret is one signing secret of an endpoint, sealed by the
// handler before replication (see platform/events/secret.go): the plain secret
// never enters the Raft log or a snapshot.
type WebhookSecret struct {
	Sealed []byte `json:"sealed"`
	// NotAfter ends a rotated-out secret's overlap; zero for the current one.
	NotAfter time.Time `json:"not_after,omitzero"`
}

// WebhookEndpoint is a receiver of a workspace's events.
type WebhookEndpoint struct {
	ID          string          `json:"endpoint_id"`
	WorkspaceID string          `json:"workspace_id"`
	URL         string          `json:"url"`
	Description string          `json:"description"`
	EventTypes  []string        `json:"event_types"` // empty: every type
	Status      string          `json:"status"`
	Secrets     []WebhookSecret `json:"secrets"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	// Health: consecutive failed attempts since the last success, and
	// when the streak began. Disabled* say why it was switched off.
	ConsecutiveFailures int       `json:"consecutive_failures"`
	FailingSince        time.Time `json:"failing_since,omitzero"`
	LastSuccessAt       time.Time `json:"last_success_at,omitzero"`
	DisabledReason      string    `json:"disabled_reason,omitempty"`
	DisabledAt          time.Time `json:"disabled_at,omitzero"`
}

// Wants reports whether the endpoint receives events of type t.
func (e *WebhookEndpoint) Wants(t string) bool {
	return len(e.EventTypes) == 0 || slices.Contains(e.EventTypes, t)
}

// WebhookDelivery is the state of one event towards one endpoint.
type WebhookDelivery struct {
	EndpointID  string    `json:"endpoint_id"`
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts"`
	NextAt      time.Time `json:"next_at,omitzero"`
	LastAt      time.Time `json:"last_at,omitzero"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	// ScheduleFrom is Attempts when the current retry schedule began (0,
	// or the count at the last manual redelivery, which starts a new one).
	ScheduleFrom int `json:"schedule_from,omitempty"`
}

// WebhookEvent is one event in a workspace's outbox, with the exact body
// that is signed and sent on every attempt.
type WebhookEvent struct {
	ID          string            `json:"event_id"`
	WorkspaceID string            `json:"workspace_id"`
	Type        string            `json:"type"`
	Subject     string            `json:"subject"`
	Sequence    uint64            `json:"sequence"`
	Body        []byte            `json:"body"`
	CreatedAt   time.Time         `json:"created_at"`
	Deliveries  []WebhookDelivery `json:"deliveries"`
}

// Finished reports whether no delivery of the event is pending.
func (e *WebhookEvent) Finished() bool {
	for _, d := range e.Deliveries {
		if d.Status == DeliveryPending {
			return false
		}
	}
	return true
}

// WebhookAttempt is one entry of an endpoint's delivery log.
type WebhookAttempt struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	// Outcome is delivered, retrying (another attempt is scheduled) or
	// failed (the schedule is exhausted or the endpoint was disabled).
	Outcome string `json:"outcome"`
}

// WebhookAlert records an endpoint disabled after sustained failure.
type WebhookAlert struct {
	EndpointID string    `json:"endpoint_id"`
	Kind       string    `json:"kind"`
	Message    string    `json:"message"`
	At         time.Time `json:"at"`
}

// WebhookOutbox is one workspace's events, delivery log and alerts.
type WebhookOutbox struct {
	Events map[string]*WebhookEvent    `json:"events"`
	Log    map[string][]WebhookAttempt `json:"log"`
	Alerts []WebhookAlert              `json:"alerts"`
}

// outbox returns workspace's outbox, copied once per transaction for
// writing: the outbox struct and its maps are cloned; events are shared
// until writeEvent copies one.
func (tx *Tx) outbox(workspaceID string) *WebhookOutbox {
	obs := Writable(tx, "webhook_outboxes", &tx.next.WebhookOutboxes)
	key := "webhook_outbox/" + workspaceID
	cur := obs[workspaceID]
	if tx.cloned[key] && cur != nil {
		return cur
	}
	ob := &WebhookOutbox{Events: map[string]*WebhookEvent{}, Log: map[string][]WebhookAttempt{}}
	if cur != nil {
		ob.Events = maps.Clone(cur.Events)
		ob.Log = maps.Clone(cur.Log)
		ob.Alerts = slices.Clone(cur.Alerts)
		if ob.Events == nil {
			ob.Events = map[string]*WebhookEvent{}
		}
		if ob.Log == nil {
			ob.Log = map[string][]WebhookAttempt{}
		}
	}
	obs[workspaceID] = ob
	tx.cloned[key] = true
	return ob
}

// writeEvent replaces ob's event id with a copy that may be changed.
func writeEvent(ob *WebhookOutbox, id string) *WebhookEvent {
	cur := ob.Events[id]
	e := *cur
	e.Deliveries = slices.Clone(cur.Deliveries)
	ob.Events[id] = &e
	return &e
}

func (ob *WebhookOutbox) appendLog(endpointID string, a WebhookAttempt) {
	l := append(slices.Clone(ob.Log[endpointID]), a)
	if len(l) > MaxWebhookLogPerEndpoint {
		l = l[len(l)-MaxWebhookLogPerEndpoint:]
	}
	ob.Log[endpointID] = l
}

func (ob *WebhookOutbox) alert(a WebhookAlert) {
	ob.Alerts = append(ob.Alerts, a)
	if len(ob.Alerts) > MaxWebhookAlerts {
		ob.Alerts = ob.Alerts[len(ob.Alerts)-MaxWebhookAlerts:]
	}
}

func (tx *Tx) webhookEndpoint(workspaceID, id string) (*WebhookEndpoint, error) {
	e := tx.next.WebhookEndpoints[id]
	if e == nil || e.WorkspaceID != workspaceID {
		return nil, fmt.Errorf("%w: webhook endpoint %s", ErrNotFound, id)
	}
	return e, nil
}

func (tx *Tx) putEndpoint(e *WebhookEndpoint) {
	Writable(tx, "webhook_endpoints", &tx.next.WebhookEndpoints)[e.ID] = e
}

// CreateWebhookEndpoint adds an endpoint, within the workspace's cap.
type CreateWebhookEndpoint struct {
	Endpoint WebhookEndpoint `json:"endpoint"`
}

func (*CreateWebhookEndpoint) Kind() string { return "webhook_endpoint.create" }
func (c *CreateWebhookEndpoint) Apply(tx *Tx) (any, error) {
	e := c.Endpoint
	if _, ok := tx.next.Workspaces[e.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, e.WorkspaceID)
	}
	if _, ok := tx.next.WebhookEndpoints[e.ID]; ok {
		return nil, fmt.Errorf("%w: webhook endpoint %s exists", ErrConflict, e.ID)
	}
	if len(e.Secrets) == 0 || len(e.Secrets) > MaxWebhookSecrets {
		return nil, fmt.Errorf("%w: an endpoint has 1 to %d secrets", ErrConflict, MaxWebhookSecrets)
	}
	n := 0
	for _, o := range tx.next.WebhookEndpoints {
		if o.WorkspaceID == e.WorkspaceID {
			n++
		}
	}
	if n >= MaxWebhookEndpointsPerWorkspace {
		return nil, fmt.Errorf("%w: the workspace has %d webhook endpoints, the most allowed", ErrConflict, n)
	}
	tx.putEndpoint(&e)
	return &e, nil
}

// UpdateWebhookEndpoint changes the fields that are set. Enabling a
// disabled endpoint clears its failure streak; disabling one fails its
// pending deliveries (they can be redelivered by hand once it is enabled).
type UpdateWebhookEndpoint struct {
	WorkspaceID string    `json:"workspace_id"`
	ID          string    `json:"endpoint_id"`
	URL         *string   `json:"url,omitzero"`
	Description *string   `json:"description,omitzero"`
	EventTypes  *[]string `json:"event_types,omitzero"`
	Enabled     *bool     `json:"enabled,omitzero"`
	At          time.Time `json:"at"`
}

func (*UpdateWebhookEndpoint) Kind() string { return "webhook_endpoint.update" }
func (c *UpdateWebhookEndpoint) Apply(tx *Tx) (any, error) {
	cur, err := tx.webhookEndpoint(c.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	e := *cur
	if c.URL != nil {
		e.URL = *c.URL
	}
	if c.Description != nil {
		e.Description = *c.Description
	}
	if c.EventTypes != nil {
		e.EventTypes = slices.Clone(*c.EventTypes)
	}
	if c.Enabled != nil {
		switch {
		case *c.Enabled && e.Status != WebhookEnabled:
			e.Status, e.DisabledReason, e.DisabledAt = WebhookEnabled, "", time.Time{}
			e.ConsecutiveFailures, e.FailingSince = 0, time.Time{}
		case !*c.Enabled && e.Status != WebhookDisabled:
			e.Status, e.DisabledReason, e.DisabledAt = WebhookDisabled, "disabled by an admin", c.At
			failPending(tx, e.WorkspaceID, e.ID, "endpoint disabled")
		}
	}
	e.UpdatedAt = c.At
	tx.putEndpoint(&e)
	return &e, nil
}

// failPending ends the pending deliveries of an endpoint.
func failPending(tx *Tx, workspaceID, endpointID, reason string) {
	if tx.next.WebhookOutboxes[workspaceID] == nil {
		return
	}
	ob := tx.outbox(workspaceID)
	for id, ev := range ob.Events {
		for i, d := range ev.Deliveries {
			if d.EndpointID == endpointID && d.Status == DeliveryPending {
				w := writeEvent(ob, id)
				w.Deliveries[i].Status, w.Deliveries[i].LastError, w.Deliveries[i].NextAt = DeliveryFailed, reason, time.Time{}
				ev = w
			}
		}
	}
}

// RotateWebhookSecret installs a new current secret; the previous current
// one is kept until NotAfter (zero drops it at once), expired ones drop.
type RotateWebhookSecret struct {
	WorkspaceID string        `json:"workspace_id"`
	ID          string        `json:"endpoint_id"`
	Secret      WebhookSecret `json:"secret"`
	PrevUntil   time.Time     `json:"prev_until,omitzero"`
	At          time.Time     `json:"at"`
}

func (*RotateWebhookSecret) Kind() string { return "webhook_endpoint.rotate_secret" }
func (c *RotateWebhookSecret) Apply(tx *Tx) (any, error) {
	cur, err := tx.webhookEndpoint(c.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	e := *cur
	secrets := []WebhookSecret{c.Secret}
	for _, s := range cur.Secrets {
		if s.NotAfter.IsZero() {
			if c.PrevUntil.After(c.At) {
				secrets = append(secrets, WebhookSecret{Sealed: s.Sealed, NotAfter: c.PrevUntil})
			}
		} else if s.NotAfter.After(c.At) {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) > MaxWebhookSecrets {
		secrets = secrets[:MaxWebhookSecrets]
	}
	e.Secrets, e.UpdatedAt = secrets, c.At
	tx.putEndpoint(&e)
	return &e, nil
}

// DeleteWebhookEndpoint removes an endpoint, its pending deliveries and
// its log.
type DeleteWebhookEndpoint struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"endpoint_id"`
}

func (*DeleteWebhookEndpoint) Kind() string { return "webhook_endpoint.delete" }
func (c *DeleteWebhookEndpoint) Apply(tx *Tx) (any, error) {
	if _, err := tx.webhookEndpoint(c.WorkspaceID, c.ID); err != nil {
		return nil, err
	}
	delete(Writable(tx, "webhook_endpoints", &tx.next.WebhookEndpoints), c.ID)
	if tx.next.WebhookOutboxes[c.WorkspaceID] != nil {
		ob := tx.outbox(c.WorkspaceID)
		delete(ob.Log, c.ID)
		for id, ev := range ob.Events {
			if slices.ContainsFunc(ev.Deliveries, func(d WebhookDelivery) bool { return d.EndpointID == c.ID }) {
				w := writeEvent(ob, id)
				w.Deliveries = slices.DeleteFunc(w.Deliveries, func(d WebhookDelivery) bool { return d.EndpointID == c.ID })
			}
		}
	}
	return nil, nil
}

// ErrWebhookOutboxFull is returned by EmitWebhookEvent when the
// workspace's outbox holds MaxWebhookEventsPerWorkspace unfinished events.
var ErrWebhookOutboxFull = fmt.Errorf("%w: the workspace's webhook outbox is full of undelivered events", ErrConflict)

// EmitWebhookEvent stores an event and one pending delivery, due at At,
// per enabled endpoint that wants its type (or only to OnlyEndpoint, for a
// test event). An event id already stored is not stored again: emitting
// is idempotent by event id, and the first body wins.
type EmitWebhookEvent struct {
	Event        WebhookEvent `json:"event"`
	OnlyEndpoint string       `json:"only_endpoint,omitempty"`
}

// EmitResult says whether the command stored the event.
type EmitResult struct {
	Event   *WebhookEvent
	Created bool
}

func (*EmitWebhookEvent) Kind() string { return "webhook_event.emit" }
func (c *EmitWebhookEvent) Apply(tx *Tx) (any, error) {
	ev := c.Event
	if _, ok := tx.next.Workspaces[ev.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, ev.WorkspaceID)
	}
	if len(ev.Body) > MaxWebhookEventBytes {
		return nil, fmt.Errorf("%w: an event body is at most %d bytes", ErrConflict, MaxWebhookEventBytes)
	}
	if cur := tx.next.WebhookOutboxes[ev.WorkspaceID]; cur != nil {
		if old := cur.Events[ev.ID]; old != nil {
			return &EmitResult{Event: old}, nil
		}
	}
	ev.Deliveries = nil
	if c.OnlyEndpoint != "" {
		e, err := tx.webhookEndpoint(ev.WorkspaceID, c.OnlyEndpoint)
		if err != nil {
			return nil, err
		}
		if e.Status != WebhookEnabled {
			return nil, fmt.Errorf("%w: the endpoint is disabled; enable it first", ErrConflict)
		}
		ev.Deliveries = append(ev.Deliveries, WebhookDelivery{EndpointID: e.ID, Status: DeliveryPending, NextAt: ev.CreatedAt})
	} else {
		for _, id := range slices.Sorted(maps.Keys(tx.next.WebhookEndpoints)) {
			e := tx.next.WebhookEndpoints[id]
			if e.WorkspaceID == ev.WorkspaceID && e.Status == WebhookEnabled && e.Wants(ev.Type) {
				ev.Deliveries = append(ev.Deliveries, WebhookDelivery{EndpointID: e.ID, Status: DeliveryPending, NextAt: ev.CreatedAt})
			}
		}
	}
	ob := tx.outbox(ev.WorkspaceID)
	pruneOutbox(ob, ev.CreatedAt)
	if len(ob.Events) >= MaxWebhookEventsPerWorkspace {
		// Evict the oldest finished event, retention notwithstanding.
		var oldest *WebhookEvent
		for _, o := range ob.Events {
			if o.Finished() && (oldest == nil || o.CreatedAt.Before(oldest.CreatedAt) || o.CreatedAt.Equal(oldest.CreatedAt) && o.ID < oldest.ID) {
				oldest = o
			}
		}
		if oldest == nil {
			return nil, ErrWebhookOutboxFull
		}
		delete(ob.Events, oldest.ID)
	}
	ob.Events[ev.ID] = &ev
	return &EmitResult{Event: &ev, Created: true}, nil
}

// pruneOutbox drops finished events older than the retention.
func pruneOutbox(ob *WebhookOutbox, now time.Time) int {
	cutoff := now.Add(-WebhookEventRetention)
	n := 0
	for id, e := range ob.Events {
		if e.Finished() && e.CreatedAt.Before(cutoff) {
			delete(ob.Events, id)
			n++
		}
	}
	return n
}

// PruneWebhookOutboxes drops finished events past retention in every
// workspace; the delivering leader issues it now and then, so retention
// holds in a workspace that emits nothing new.
type PruneWebhookOutboxes struct {
	At time.Time `json:"at"`
}

func (*PruneWebhookOutboxes) Kind() string { return "webhook_outbox.prune" }
func (c *PruneWebhookOutboxes) Apply(tx *Tx) (any, error) {
	cutoff := c.At.Add(-WebhookEventRetention)
	n := 0
	for _, ws := range slices.Sorted(maps.Keys(tx.next.WebhookOutboxes)) {
		stale := false
		for _, e := range tx.next.WebhookOutboxes[ws].Events {
			if e.Finished() && e.CreatedAt.Before(cutoff) {
				stale = true
				break
			}
		}
		if stale {
			n += pruneOutbox(tx.outbox(ws), c.At)
		}
	}
	return n, nil
}

// WebhookResult is the result of one delivery attempt, as the leader saw it.
type WebhookResult struct {
	WorkspaceID string    `json:"workspace_id"`
	EventID     string    `json:"event_id"`
	EndpointID  string    `json:"endpoint_id"`
	Attempt     int       `json:"attempt"` // the number sent in the attempt header
	At          time.Time `json:"at"`
	DurationMS  int64     `json:"duration_ms"`
	HTTPStatus  int       `json:"http_status,omitempty"`
	Error       string    `json:"error,omitempty"`
	Delivered   bool      `json:"delivered"`
	// NextAt schedules the next attempt after a failure (the leader adds
	// the jitter); zero means the schedule is exhausted.
	NextAt time.Time `json:"next_at,omitzero"`
}

// RecordWebhookAttempts applies attempt results: delivery state, the
// endpoint's log and health, and disabling after sustained failure (at
// least DisableAfterFailures consecutive failures spanning at least
// DisableAfterMS milliseconds). A result for a delivery that has moved on (another
// leader recorded that attempt, the event or endpoint is gone) changes
// nothing.
type RecordWebhookAttempts struct {
	Results              []WebhookResult `json:"results"`
	DisableAfterFailures int             `json:"disable_after_failures"`
	DisableAfterMS       int64           `json:"disable_after_ms"`
}

// RecordResult names the endpoints this command disabled.
type RecordResult struct {
	Disabled []*WebhookEndpoint
}

func (*RecordWebhookAttempts) Kind() string { return "webhook_attempts.record" }
func (c *RecordWebhookAttempts) Apply(tx *Tx) (any, error) {
	out := &RecordResult{}
	for _, r := range c.Results {
		cur := tx.next.WebhookOutboxes[r.WorkspaceID]
		if cur == nil || cur.Events[r.EventID] == nil {
			continue
		}
		i := slices.IndexFunc(cur.Events[r.EventID].Deliveries, func(d WebhookDelivery) bool { return d.EndpointID == r.EndpointID })
		if i < 0 {
			continue
		}
		if d := cur.Events[r.EventID].Deliveries[i]; d.Status != DeliveryPending || d.Attempts+1 != r.Attempt {
			continue
		}
		ep, err := tx.webhookEndpoint(r.WorkspaceID, r.EndpointID)
		if err != nil {
			continue
		}
		ob := tx.outbox(r.WorkspaceID)
		ev := writeEvent(ob, r.EventID)
		d := &ev.Deliveries[i]
		d.Attempts, d.LastAt, d.LastStatus, d.LastError = r.Attempt, r.At, r.HTTPStatus, r.Error
		e := *ep
		outcome := ""
		switch {
		case r.Delivered:
			d.Status, d.DeliveredAt, d.NextAt, outcome = DeliveryDelivered, r.At, time.Time{}, "delivered"
			e.ConsecutiveFailures, e.FailingSince, e.LastSuccessAt = 0, time.Time{}, r.At
		default:
			if r.NextAt.IsZero() {
				d.Status, d.NextAt, outcome = DeliveryFailed, time.Time{}, "failed"
			} else {
				d.NextAt, outcome = r.NextAt, "retrying"
			}
			if e.ConsecutiveFailures == 0 {
				e.FailingSince = r.At
			}
			e.ConsecutiveFailures++
		}
		disable := !r.Delivered && e.Status == WebhookEnabled && c.DisableAfterFailures > 0 &&
			e.ConsecutiveFailures >= c.DisableAfterFailures && r.At.Sub(e.FailingSince) >= time.Duration(c.DisableAfterMS)*time.Millisecond
		if disable {
			outcome = "failed"
		}
		ob.appendLog(r.EndpointID, WebhookAttempt{EventID: r.EventID, EventType: ev.Type, Attempt: r.Attempt, At: r.At,
			HTTPStatus: r.HTTPStatus, Error: r.Error, DurationMS: r.DurationMS, Outcome: outcome})
		if disable {
			e.Status, e.DisabledAt = WebhookDisabled, r.At
			e.DisabledReason = fmt.Sprintf("%d consecutive failed deliveries since %s", e.ConsecutiveFailures, e.FailingSince.UTC().Format(time.RFC3339))
			ob.alert(WebhookAlert{EndpointID: e.ID, Kind: "endpoint_disabled", Message: e.DisabledReason, At: r.At})
			tx.putEndpoint(&e)
			failPending(tx, e.WorkspaceID, e.ID, "endpoint disabled after sustained failure")
			out.Disabled = append(out.Disabled, &e)
			continue
		}
		tx.putEndpoint(&e)
	}
	return out, nil
}

// RedeliverWebhookEvent schedules an event again, now, to one endpoint
// (EndpointID) or to every enabled endpoint it was meant for. The attempt
// count goes on from where it was, so the attempt header keeps
// increasing, and a new retry schedule starts (ScheduleFrom).
type RedeliverWebhookEvent struct {
	WorkspaceID string    `json:"workspace_id"`
	EventID     string    `json:"event_id"`
	EndpointID  string    `json:"endpoint_id,omitempty"`
	At          time.Time `json:"at"`
}

func (*RedeliverWebhookEvent) Kind() string { return "webhook_event.redeliver" }
func (c *RedeliverWebhookEvent) Apply(tx *Tx) (any, error) {
	cur := tx.next.WebhookOutboxes[c.WorkspaceID]
	if cur == nil || cur.Events[c.EventID] == nil {
		return nil, fmt.Errorf("%w: webhook event %s", ErrNotFound, c.EventID)
	}
	targets := []string{}
	if c.EndpointID != "" {
		e, err := tx.webhookEndpoint(c.WorkspaceID, c.EndpointID)
		if err != nil {
			return nil, err
		}
		if e.Status != WebhookEnabled {
			return nil, fmt.Errorf("%w: the endpoint is disabled; enable it first", ErrConflict)
		}
		targets = append(targets, e.ID)
	} else {
		for _, d := range cur.Events[c.EventID].Deliveries {
			if e := tx.next.WebhookEndpoints[d.EndpointID]; e != nil && e.Status == WebhookEnabled {
				targets = append(targets, d.EndpointID)
			}
		}
		if len(targets) == 0 {
			return nil, fmt.Errorf("%w: the event has no enabled endpoint to redeliver to", ErrConflict)
		}
	}
	ob := tx.outbox(c.WorkspaceID)
	ev := writeEvent(ob, c.EventID)
	for _, id := range targets {
		i := slices.IndexFunc(ev.Deliveries, func(d WebhookDelivery) bool { return d.EndpointID == id })
		if i < 0 {
			ev.Deliveries = append(ev.Deliveries, WebhookDelivery{EndpointID: id})
			i = len(ev.Deliveries) - 1
		}
		d := &ev.Deliveries[i]
		d.Status, d.NextAt, d.DeliveredAt, d.ScheduleFrom = DeliveryPending, c.At, time.Time{}, d.Attempts
	}
	return ev, nil
}

func deleteWebhooksOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "webhook_endpoints", &tx.next.WebhookEndpoints, workspaceID, func(e *WebhookEndpoint) string { return e.WorkspaceID })
	if _, ok := tx.next.WebhookOutboxes[workspaceID]; ok {
		delete(Writable(tx, "webhook_outboxes", &tx.next.WebhookOutboxes), workspaceID)
	}
}
