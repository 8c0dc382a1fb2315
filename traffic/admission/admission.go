// Package admission protects a customer's dependencies (spec 4.10
// dependency resilience): Admit asks the dependency's breaker actor
// whether a call may go ahead (circuit breaker, bulkhead, retry budget)
// and issues a signed, expiring admission token; Feedback takes that token
// back exactly once with the call's outcome and drives the breaker. Single
// use is decided by a marker actor before the breaker sees the outcome, so
// a replayed feedback can neither count twice nor free a bulkhead slot it
// does not hold. It never sees HTTP.
package admission

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/resilience"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/traffic/lease"
)

// markerSkew is how long past its expiry an admission's single-use marker
// is kept, against clocks that disagree between nodes.
const markerSkew = 30 * time.Second

// Errors of admit and feedback.
var (
	ErrUnknownDependency = errcode.New("unknown-dependency", errcode.Invalid, "No dependency of this name is configured in the workspace.")
	ErrInvalid           = errcode.New("invalid-admission", errcode.Invalid, "The admission token is malformed, forged or signed by an unknown key.")
	ErrExpired           = errcode.New("admission-expired", errcode.Conflict, "The admission token expired before its feedback; its bulkhead slot and probe were already given back.")
	ErrUsed              = errcode.New("admission-used", errcode.Conflict, "Feedback for this admission was already received; an admission reports once.")
	ErrContext           = errcode.New("admission-context-mismatch", errcode.Forbidden, "The admission was issued to another workspace, application or action.")
	errNoSigningKey      = errcode.ErrUnavailable.Detail("no signing key is available yet")
)

// Errors lists the codes of this package for the contract.
var Errors = []*errcode.Code{ErrUnknownDependency, ErrInvalid, ErrExpired, ErrUsed, ErrContext}

// Caller is the workspace and application whose credential authenticated
// the call.
type Caller = lease.Caller

// AdmitFields are the admission request proper.
type AdmitFields struct {
	Dependency string `json:"dependency" required:"true" doc:"Name of a dependency configured in the workspace."`
	Attempt    int    `json:"attempt,omitempty" doc:"1 for a first attempt, 2 or more for a retry (at most 100). Default 1, or from retry."`
	Retry      *bool  `json:"retry,omitempty" doc:"true for a retry; an alternative to attempt (both must then agree)."`
	AdmissionContext
}

// AdmissionContext are optional values an admission is bound to; feedback
// must send the same ones.
type AdmissionContext struct {
	Action    string `json:"action,omitempty" doc:"Optional protected action the call serves."`
	SubjectID string `json:"subject_id,omitempty" doc:"Optional subject the call serves; stored only as a keyed hash."`
}

// AdmitResult is the answer of admit.
type AdmitResult struct {
	Success    bool   `json:"success" required:"true" doc:"The request was processed; read admitted."`
	Admitted   bool   `json:"admitted" required:"true" doc:"Make the call only when true, then send its feedback."`
	Reason     string `json:"reason,omitempty" enum:"circuit-open|retry-budget-exhausted|bulkhead-full" doc:"Why the call was refused."`
	Dependency string `json:"dependency" required:"true"`
	State      string `json:"state" required:"true" enum:"closed|open|half-open" doc:"The circuit breaker's state after this decision (spec 3.4)."`
	Probe      bool   `json:"probe,omitempty" doc:"The call is a half-open probe: its outcome decides whether the circuit closes."`
	// Present when admitted.
	AdmissionID    string     `json:"admission_id,omitempty"`
	AdmissionToken string     `json:"admission_token,omitempty" doc:"Signed, expiring, single-use token bound to the workspace, application, dependency and context; send it with the outcome to feedback."`
	ExpiresAt      *time.Time `json:"expires_at,omitempty" doc:"Feedback is accepted until then; after it the admission's bulkhead slot and probe are given back without an outcome."`
	// Present when refused.
	RetryAfterMs      int64 `json:"retry_after_ms,omitempty" doc:"Suggested wait: the rest of the open period, a retry-budget slot, or the earliest admission expiry of a full bulkhead."`
	RetryAfterSeconds int64 `json:"retry_after_seconds,omitempty"`
	InFlight          int   `json:"in_flight" required:"true" doc:"Admitted calls holding a bulkhead slot."`
	MaxConcurrent     int   `json:"max_concurrent" required:"true" doc:"Bulkhead limit; 0 when there is none."`
	RetriesAvailable  int64 `json:"retries_available" required:"true" doc:"Retries the retry budget would admit now."`
}

// FeedbackFields are the feedback proper.
type FeedbackFields struct {
	AdmissionToken string `json:"admission_token" required:"true" doc:"The admission_token of the admit; accepted once."`
	Outcome        string `json:"outcome" required:"true" enum:"success|failure|timeout" doc:"What the call did; timeout counts as a failure."`
	LatencyMs      *int64 `json:"latency_ms,omitempty" doc:"Duration of the call; a success slower than the dependency's slow_call_ms counts as a failure."`
	Dependency     string `json:"dependency,omitempty" doc:"When sent, must name the admitted dependency."`
	AdmissionContext
}

// FeedbackResult is the answer of feedback.
type FeedbackResult struct {
	Success     bool   `json:"success" required:"true"`
	AdmissionID string `json:"admission_id" required:"true"`
	Dependency  string `json:"dependency" required:"true"`
	CountedAs   string `json:"counted_as" required:"true" enum:"success|failure" doc:"How the outcome was classified."`
	Counted     bool   `json:"counted" required:"true" doc:"false when the breaker ignored the outcome: it is open, or half-open and this call was not one of its current probes."`
	State       string `json:"state" required:"true" enum:"closed|open|half-open" doc:"The circuit breaker's state after the feedback."`
}

// Module admits calls and takes their feedback. It is safe for concurrent
// use.
type Module struct {
	ask  actors.Asker
	now  func() time.Time
	keys token.Keyring
}

// New returns a module.
func New(ask actors.Asker, now func() time.Time) *Module { return &Module{ask: ask, now: now} }

// Config is the actor-side configuration of d.
func Config(d *catalog.Dependency) actors.DependencyConfig {
	return actors.DependencyConfig{
		Breaker: resilience.BreakerConfig{
			WindowSize: d.WindowSize, MinimumCalls: d.MinimumCalls, FailureRateThreshold: d.FailureRateThreshold,
			ConsecutiveFailures: d.ConsecutiveFailures, OpenDurationNs: d.OpenDurationMs * int64(time.Millisecond),
			HalfOpenProbes: d.HalfOpenProbes,
		},
		Budget: resilience.RetryBudgetConfig{TTLNs: d.RetryTTLMs * int64(time.Millisecond),
			MinPerSecond: d.RetryMinPerSecond, Ratio: d.RetryRatio},
		MaxConcurrent: d.MaxConcurrent,
	}
}

// validAction accepts 1 to 128 printable ASCII characters.
func validAction(v string) bool {
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

func (ac *AdmissionContext) validate() error {
	if ac.Action != "" && !validAction(ac.Action) {
		return errcode.Field("action", "1 to 128 printable ASCII characters")
	}
	if ac.SubjectID != "" && !ident.Valid(ac.SubjectID) {
		return errcode.Field("subject_id", ident.Rule)
	}
	return nil
}

func (ac *AdmissionContext) hash(ws *catalog.Workspace, appID, dependencyID string) [16]byte {
	return lease.ContextHash(ws, "admission", appID, dependencyID, strings.ToLower(ac.Action), ac.SubjectID)
}

// Admit decides whether a call to the dependency in may go ahead.
func (m *Module) Admit(cat *catalog.Catalog, who Caller, in *AdmitFields) (*AdmitResult, error) {
	retry := in.Attempt > 1
	switch {
	case in.Attempt < 0 || in.Attempt > 100:
		return nil, errcode.Field("attempt", "must be 1 to 100")
	case in.Retry != nil && in.Attempt != 0 && *in.Retry != retry:
		return nil, errcode.Field("retry", "disagrees with attempt")
	case in.Retry != nil:
		retry = *in.Retry
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	if in.Dependency == "" {
		return nil, errcode.Field("dependency", "required")
	}
	d := cat.DependencyByName(who.Workspace.ID, in.Dependency)
	if d == nil {
		return nil, ErrUnknownDependency.With("no dependency named %s in this workspace", in.Dependency)
	}
	sk := cat.SigningKey(catalog.KeyLive)
	if sk == nil {
		return nil, errNoSigningKey
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	claims := token.Admission{ID: base64.RawURLEncoding.EncodeToString(id[:]), WorkspaceID: who.Workspace.ID, AppID: who.AppID,
		DependencyID: d.ID, Context: in.hash(who.Workspace, who.AppID, d.ID),
		ExpiresMs: m.now().Add(time.Duration(d.AdmissionTTLMs) * time.Millisecond).UnixMilli()}
	op := &actors.BreakerAdmit{Key: actors.BreakerKey(who.Workspace.ID, d.ID), AdmissionID: claims.ID, Retry: retry,
		Config: Config(d), Expires: claims.ExpiresMs * int64(time.Millisecond)}
	if err := m.ask.Ask(op.Key, op); err != nil {
		return nil, err
	}
	res := &AdmitResult{Success: true, Admitted: op.Admitted, Reason: op.Reason.String(), Dependency: d.Name,
		State: op.State.String(), Probe: op.Probe, InFlight: op.InFlight, MaxConcurrent: d.MaxConcurrent,
		RetriesAvailable: op.RetriesAvailable}
	if op.Admitted {
		exp := time.UnixMilli(claims.ExpiresMs).UTC()
		res.AdmissionID, res.AdmissionToken, res.ExpiresAt = claims.ID, claims.Sign(m.keys.Key(sk.ID, sk.Secret)), &exp
	} else if op.RetryAfter > 0 {
		res.RetryAfterMs = (op.RetryAfter + int64(time.Millisecond) - 1) / int64(time.Millisecond)
		res.RetryAfterSeconds = (res.RetryAfterMs + 999) / 1000
	}
	return res, nil
}

// Feedback takes an admission back, once, with its call's outcome.
func (m *Module) Feedback(cat *catalog.Catalog, who Caller, in *FeedbackFields) (*FeedbackResult, error) {
	var success bool
	switch in.Outcome {
	case "success":
		success = true
	case "failure", "timeout":
	default:
		return nil, errcode.Field("outcome", "must be success, failure or timeout")
	}
	if in.LatencyMs != nil && (*in.LatencyMs < 0 || *in.LatencyMs > 86_400_000) {
		return nil, errcode.Field("latency_ms", "must be 0 to 86400000")
	}
	if in.AdmissionToken == "" {
		return nil, errcode.Field("admission_token", "required")
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	a, err := token.DecodeAdmission(in.AdmissionToken, func(id string) *token.Key {
		k := cat.KeyByID(catalog.KeyLive, id)
		if k == nil {
			return nil
		}
		return m.keys.Key(k.ID, k.Secret)
	})
	if err != nil {
		return nil, ErrInvalid
	}
	want := in.hash(who.Workspace, who.AppID, a.DependencyID)
	if a.WorkspaceID != who.Workspace.ID || a.AppID != who.AppID || a.Context != want {
		return nil, ErrContext.With("the admission was issued for another application or context")
	}
	d := cat.Dependencies[a.DependencyID]
	if d == nil || d.WorkspaceID != who.Workspace.ID {
		return nil, ErrUnknownDependency.With("the admitted dependency no longer exists")
	}
	if in.Dependency != "" && in.Dependency != d.Name {
		return nil, ErrContext.With("the admission was issued for dependency %s", d.Name)
	}
	if a.ExpiresMs <= m.now().UnixMilli() {
		return nil, ErrExpired.With("the admission expired; its outcome is no longer accepted")
	}
	mark := &actors.Consume{ID: actors.SpaceAdmission + a.ID, Expires: time.UnixMilli(a.ExpiresMs).Add(markerSkew).UnixNano()}
	if err := m.ask.Ask(mark.ID, mark); err != nil {
		return nil, err
	}
	if !mark.First {
		return nil, ErrUsed.With("feedback for this admission was already received")
	}
	if success && d.SlowCallMs > 0 && in.LatencyMs != nil && *in.LatencyMs > d.SlowCallMs {
		success = false
	}
	op := &actors.BreakerFeedback{Key: actors.BreakerKey(who.Workspace.ID, d.ID), AdmissionID: a.ID, Success: success, Config: Config(d)}
	if err := m.ask.Ask(op.Key, op); err != nil {
		// The marker is spent and the outcome lost: the admission's slot
		// frees at expiry. Losing one outcome is safer than counting twice.
		return nil, err
	}
	countedAs := "failure"
	if success {
		countedAs = "success"
	}
	return &FeedbackResult{Success: true, AdmissionID: a.ID, Dependency: d.Name, CountedAs: countedAs,
		Counted: op.Counted, State: op.State.String()}, nil
}
