package events

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// Event types (spec 6) and the admin's test event.
const (
	TypeVerified          = "identity.verification.verified"
	TypeRejected          = "identity.verification.rejected"
	TypeReviewRequired    = "identity.verification.review_required"
	TypeReviewResolved    = "identity.verification.review_resolved"
	TypeRecaptureRequired = "identity.verification.recapture_required"
	TypeCancelled         = "identity.verification.cancelled"
	// TypeRedacted: a session's captured-data traces were erased on
	// request (identity/session Redact).
	TypeRedacted = "identity.verification.redacted"
	TypeTest     = "webhook.test"
)

// Types lists the event types an endpoint may filter on.
var Types = []string{TypeVerified, TypeRejected, TypeReviewRequired, TypeReviewResolved, TypeRecaptureRequired, TypeCancelled, TypeRedacted, TypeTest}

// Domain errors of the package.
var (
	ErrInvalidEndpoint  = errcode.New("webhook-endpoint-invalid", errcode.Invalid, "A webhook endpoint field is out of its documented range.")
	ErrURLRefused       = errcode.New("webhook-url-refused", errcode.Invalid, "The webhook URL is not allowed: https only (http only to loopback in development), no user info or fragment, and never a private, link-local or reserved address unless the operator allows it.")
	ErrEndpointNotFound = errcode.New("webhook-endpoint-not-found", errcode.NotFound, "The workspace has no webhook endpoint with this id.")
	ErrEventNotFound    = errcode.New("webhook-event-not-found", errcode.NotFound, "The workspace's outbox holds no event with this id (never emitted, or pruned after retention).")
	ErrEndpointDisabled = errcode.New("webhook-endpoint-disabled", errcode.Conflict, "The webhook endpoint is disabled; enable it (PATCH enabled=true) first.")
	ErrEndpointLimit    = errcode.New("webhook-endpoint-limit", errcode.Conflict, "The workspace has the most webhook endpoints allowed.")
	ErrOutboxFull       = errcode.New("webhook-outbox-full", errcode.Conflict, "The workspace's outbox holds the most undelivered events allowed; the event was not stored.")
	ErrInvalidEvent     = errcode.New("webhook-event-invalid", errcode.Invalid, "An emitted event has an unknown type, a malformed subject or a body over the size limit.")
)

// Codes lists the package's domain errors, for the contract.
func Codes() []*errcode.Code {
	return []*errcode.Code{ErrInvalidEndpoint, ErrURLRefused, ErrEndpointNotFound, ErrEventNotFound, ErrEndpointDisabled,
		ErrEndpointLimit, ErrOutboxFull, ErrInvalidEvent}
}

// Store is the replicated state the outbox reads and changes.
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
	IsLeader() bool
}

// Config tunes delivery. Every node of a cluster should run with the same
// values: whichever is leader schedules the retries.
type Config struct {
	// Schedule is the wait after each failed attempt; after the last one
	// the delivery has failed. Default: 1m, 5m, 30m, 2h, 6h, 12h, 24h
	// (8 attempts over about 45 hours).
	Schedule []time.Duration
	// Jitter spreads each wait by up to ± this fraction (default 0.2).
	Jitter float64
	// Timeout bounds one attempt, connect to last response byte (default
	// 10s); ConnectTimeout the TCP and TLS handshakes (default 5s).
	Timeout, ConnectTimeout time.Duration
	// Tick is how often the leader looks for due deliveries (default 1s).
	Tick time.Duration
	// Concurrency bounds attempts in flight on the leader (default 8),
	// PerWorkspace those of one workspace (default half of Concurrency, so
	// one tenant's backlog cannot take every slot) and PerEndpoint those to
	// one endpoint (default 2).
	Concurrency, PerWorkspace, PerEndpoint int
	// An endpoint is disabled after DisableAfterFailures consecutive
	// failed attempts spanning at least DisableAfter (default 15 and 72h).
	DisableAfterFailures int
	DisableAfter         time.Duration
	// AllowLoopback lets endpoints be loopback addresses, over http too
	// (--dev, tests). AllowPrivate lets them be private, link-local or
	// reserved addresses (operator flag).
	AllowLoopback, AllowPrivate bool
	// SealKey derives the key that seals endpoint secrets (the cluster key).
	SealKey string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if len(c.Schedule) == 0 {
		c.Schedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	}
	if c.Jitter < 0 || c.Jitter > 0.5 {
		c.Jitter = 0.5
	}
	if c.Jitter == 0 {
		c.Jitter = 0.2
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.Tick <= 0 {
		c.Tick = time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.PerWorkspace <= 0 {
		c.PerWorkspace = max(1, c.Concurrency/2)
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = 2
	}
	if c.DisableAfterFailures <= 0 {
		c.DisableAfterFailures = 15
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = 72 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Outbox is the webhooks module: endpoints, emission and delivery.
type Outbox struct {
	cfg    Config
	store  Store
	sealer *Sealer
	policy targetPolicy
	log    *slog.Logger
	m      *metrics
	wake   chan struct{}
	disp   dispatchState
}

type dispatchState struct {
	mu       sync.Mutex
	inflight map[string]bool // event id + "/" + endpoint id
	perEP    map[string]int
	perWS    map[string]int
	total    int
	wg       sync.WaitGroup
}

// New builds the module over store. reg may be nil.
func New(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) *Outbox {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{cfg: cfg, store: store, sealer: NewSealer(cfg.SealKey), log: log, m: newMetrics(reg),
		policy: targetPolicy{allowLoopback: cfg.AllowLoopback, allowPrivate: cfg.AllowPrivate},
		wake:   make(chan struct{}, 1),
		disp:   dispatchState{inflight: map[string]bool{}, perEP: map[string]int{}, perWS: map[string]int{}}}
}

func (o *Outbox) now() time.Time { return o.cfg.Now().UTC() }

// apply replicates cmd, mapping the catalog's errors to the package's.
func (o *Outbox) apply(ctx context.Context, cmd catalog.Command) (any, error) {
	v, err := o.store.Apply(ctx, cmd)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, catalog.ErrWebhookOutboxFull):
		return nil, ErrOutboxFull.With("the workspace's outbox holds %d undelivered events", catalog.MaxWebhookEventsPerWorkspace)
	}
	return nil, err
}

// Body is the JSON body of every delivery. Receivers deduplicate by id
// (also sent as webhook-id) and order a subject's updates by sequence.
type Body struct {
	ID          string         `json:"id"`
	Type        string         `json:"type"`
	Created     int64          `json:"created"`
	WorkspaceID string         `json:"workspace_id"`
	Subject     string         `json:"subject"`
	Sequence    uint64         `json:"sequence"`
	Data        jsontext.Value `json:"data"`
}

// EventID is the id of the event a subject's sequence number names:
// emitting the same (workspace, type, subject, sequence) twice yields one
// event, so an emitter may retry Emit after a timeout without duplicates.
func EventID(workspaceID, eventType, subject string, sequence uint64) string {
	h := sha256.Sum256([]byte("trustd webhook event v1\x00" + workspaceID + "\x00" + eventType + "\x00" + subject + "\x00" + strconv.FormatUint(sequence, 10)))
	return "evt_" + hex.EncodeToString(h[:16])
}

func validSubject(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Emit stores an event in workspaceID's outbox for every enabled endpoint
// that wants its type, and returns its id. subjectRef names what the event
// is about: a service-generated reference such as a verification session
// id (1 to 128 of A-Z a-z 0-9 - _ . :), never a raw end-user identifier,
// since it is sent to receivers and kept in the outbox. sequence orders a
// subject's events; data (a JSON object, at most about 7 KiB encoded) is
// the event's payload. When Emit returns nil the event is committed in
// Raft and will be delivered at least once to each such endpoint; on an
// error it may or may not be stored, and calling Emit again with the same
// arguments is safe (same id, stored once).
func (o *Outbox) Emit(ctx context.Context, workspaceID, eventType, subjectRef string, sequence uint64, data any) (string, error) {
	if !slices.Contains(Types, eventType) || eventType == TypeTest {
		return "", ErrInvalidEvent.With("unknown event type %q", eventType)
	}
	ev, err := o.build(workspaceID, EventID(workspaceID, eventType, subjectRef, sequence), eventType, subjectRef, sequence, data)
	if err != nil {
		return "", err
	}
	return o.emit(ctx, ev, "")
}

// SendTest emits a webhook.test event to one endpoint and returns its id.
func (o *Outbox) SendTest(ctx context.Context, workspaceID, endpointID string) (string, error) {
	ep, err := o.Endpoint(workspaceID, endpointID)
	if err != nil {
		return "", err
	}
	if ep.Status != catalog.WebhookEnabled {
		return "", ErrEndpointDisabled
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	id := "evt_" + hex.EncodeToString(r[:])
	ev, err := o.build(workspaceID, id, TypeTest, endpointID, 0, map[string]any{"message": "a test event sent from the admin API", "endpoint_id": endpointID})
	if err != nil {
		return "", err
	}
	return o.emit(ctx, ev, endpointID)
}

func (o *Outbox) build(workspaceID, id, eventType, subject string, sequence uint64, data any) (catalog.WebhookEvent, error) {
	if !validSubject(subject) {
		return catalog.WebhookEvent{}, ErrInvalidEvent.With("subject must be 1 to 128 of A-Z a-z 0-9 - _ . :")
	}
	raw, err := json.Marshal(data)
	if err != nil || len(raw) == 0 || raw[0] != '{' {
		return catalog.WebhookEvent{}, ErrInvalidEvent.With("data must encode as a JSON object")
	}
	now := o.now()
	body, err := json.Marshal(Body{ID: id, Type: eventType, Created: now.Unix(), WorkspaceID: workspaceID, Subject: subject, Sequence: sequence, Data: raw})
	if err != nil {
		return catalog.WebhookEvent{}, ErrInvalidEvent.With("encode: %v", err)
	}
	if len(body) > catalog.MaxWebhookEventBytes {
		return catalog.WebhookEvent{}, ErrInvalidEvent.With("the event body is %d bytes, over the %d limit", len(body), catalog.MaxWebhookEventBytes)
	}
	return catalog.WebhookEvent{ID: id, WorkspaceID: workspaceID, Type: eventType, Subject: subject, Sequence: sequence,
		Body: body, CreatedAt: now}, nil
}

func (o *Outbox) emit(ctx context.Context, ev catalog.WebhookEvent, only string) (string, error) {
	v, err := o.apply(ctx, &catalog.EmitWebhookEvent{Event: ev, OnlyEndpoint: only})
	if err != nil {
		return "", err
	}
	if r := v.(*catalog.EmitResult); r.Created {
		o.m.emitted.Inc()
	}
	o.Wake()
	return ev.ID, nil
}

// Wake makes the dispatcher look for due deliveries now (when leader).
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Event returns an event of the workspace's outbox.
func (o *Outbox) Event(workspaceID, id string) (*catalog.WebhookEvent, error) {
	if ob := o.store.Catalog().WebhookOutboxes[workspaceID]; ob != nil && ob.Events[id] != nil {
		return ob.Events[id], nil
	}
	return nil, ErrEventNotFound
}

// Events lists the workspace's events, newest first, at most limit.
func (o *Outbox) Events(workspaceID string, limit int) []*catalog.WebhookEvent {
	var out []*catalog.WebhookEvent
	if ob := o.store.Catalog().WebhookOutboxes[workspaceID]; ob != nil {
		for _, e := range ob.Events {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *catalog.WebhookEvent) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Redeliver schedules an event again now, to one endpoint or (endpointID
// empty) to every enabled endpoint it was for, with a new retry schedule.
func (o *Outbox) Redeliver(ctx context.Context, workspaceID, eventID, endpointID string) (*catalog.WebhookEvent, error) {
	if _, err := o.Event(workspaceID, eventID); err != nil {
		return nil, err
	}
	if endpointID != "" {
		ep, err := o.Endpoint(workspaceID, endpointID)
		if err != nil {
			return nil, err
		}
		if ep.Status != catalog.WebhookEnabled {
			return nil, ErrEndpointDisabled
		}
	}
	v, err := o.apply(ctx, &catalog.RedeliverWebhookEvent{WorkspaceID: workspaceID, EventID: eventID, EndpointID: endpointID, At: o.now()})
	if err != nil {
		return nil, err
	}
	o.Wake()
	return v.(*catalog.WebhookEvent), nil
}

// Log returns an endpoint's delivery log, newest first.
func (o *Outbox) Log(workspaceID, endpointID string) ([]catalog.WebhookAttempt, error) {
	if _, err := o.Endpoint(workspaceID, endpointID); err != nil {
		return nil, err
	}
	var l []catalog.WebhookAttempt
	if ob := o.store.Catalog().WebhookOutboxes[workspaceID]; ob != nil {
		l = slices.Clone(ob.Log[endpointID])
	}
	slices.Reverse(l)
	return l, nil
}

// Alerts returns the workspace's alerts, newest first.
func (o *Outbox) Alerts(workspaceID string) []catalog.WebhookAlert {
	var l []catalog.WebhookAlert
	if ob := o.store.Catalog().WebhookOutboxes[workspaceID]; ob != nil {
		l = slices.Clone(ob.Alerts)
	}
	slices.Reverse(l)
	return l
}
