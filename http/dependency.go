package http

import (
	"strings"
	"time"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/resilience"
)

// Dependency resilience (spec 4.10): admit asks the dependency's breaker
// actor whether a call may go ahead (circuit breaker, bulkhead, retry
// budget) and answers a signed, expiring admission token; feedback takes
// that token back exactly once, with the call's outcome, and drives the
// breaker. Single use is decided by a marker actor before the breaker sees
// the outcome, so a replayed feedback can neither count twice nor free a
// bulkhead slot it does not hold.

// admissionMarkerSkew is how long past its expiry an admission's single-use marker
// is kept, against clocks that disagree between nodes.
const admissionMarkerSkew = 30 * time.Second

// AdmitRequest is the body of POST /dependency-resilience/admit.
type AdmitRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	AdmitFields
}

// MobileAdmitRequest is the body of POST /mobile/dependency-resilience/admit.
type MobileAdmitRequest struct {
	MobileIdentity
	AdmitFields
}

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

// FeedbackRequest is the body of POST /dependency-resilience/feedback.
type FeedbackRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	FeedbackFields
}

// MobileFeedbackRequest is the body of POST /mobile/dependency-resilience/feedback.
type MobileFeedbackRequest struct {
	MobileIdentity
	FeedbackFields
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

var admitErrors = []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
	ErrUnauthorized, ErrForbidden, ErrUnavailable}

func (s *Server) dependencyRoutes() []Route {
	site := []Auth{AuthSiteSecret}
	mobile := []Auth{AuthMobile}
	admitErrs := append([]ErrorCode{ErrUnknownDependency}, admitErrors...)
	fbErrs := append([]ErrorCode{ErrInvalidAdmission, ErrAdmissionExpired, ErrAdmissionUsed, ErrAdmissionContext, ErrUnknownDependency}, admitErrors...)
	return []Route{
		{Method: "POST", Path: "/dependency-resilience/admit", ID: "admitDependencyCall", Tag: "Traffic control", Auth: site,
			Summary: "Ask whether a call to a dependency may go ahead: circuit breaker, retry budget and bulkhead.",
			Body:    &AdmitRequest{}, Result: &AdmitResult{}, Errors: admitErrs,
			Handle: func(c *Call) {
				var in AdmitRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.siteCaller(in.Secret); ok {
					s.admit(c, who, &in.AdmitFields)
				}
			}},
		{Method: "POST", Path: "/dependency-resilience/feedback", ID: "dependencyCallFeedback", Tag: "Traffic control", Auth: site,
			Summary: "Report the outcome of an admitted call, once; it drives the circuit breaker and frees the bulkhead slot.",
			Body:    &FeedbackRequest{}, Result: &FeedbackResult{}, Errors: fbErrs,
			Handle: func(c *Call) {
				var in FeedbackRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.siteCaller(in.Secret); ok {
					s.feedback(c, who, &in.FeedbackFields)
				}
			}},
		{Method: "POST", Path: "/mobile/dependency-resilience/admit", ID: "admitMobileDependencyCall", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of admit.",
			Body:    &MobileAdmitRequest{}, Result: &AdmitResult{}, Errors: append([]ErrorCode{ErrInvalidAppIdentity}, admitErrs...),
			Handle: func(c *Call) {
				var in MobileAdmitRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.mobileCaller(in.Platform, in.AppID); ok {
					s.admit(c, who, &in.AdmitFields)
				}
			}},
		{Method: "POST", Path: "/mobile/dependency-resilience/feedback", ID: "mobileDependencyCallFeedback", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of feedback.",
			Body:    &MobileFeedbackRequest{}, Result: &FeedbackResult{}, Errors: append([]ErrorCode{ErrInvalidAppIdentity}, fbErrs...),
			Handle: func(c *Call) {
				var in MobileFeedbackRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.mobileCaller(in.Platform, in.AppID); ok {
					s.feedback(c, who, &in.FeedbackFields)
				}
			}},
	}
}

// dependencyConfig is the actor-side configuration of d.
func dependencyConfig(d *catalog.Dependency) actors.DependencyConfig {
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

// breakerKey is the router key of a dependency's breaker.
func breakerKey(workspaceID, dependencyID string) string {
	return "breaker/" + workspaceID + "/" + dependencyID
}

func (ac *AdmissionContext) validate() error {
	if ac.Action != "" && (len(ac.Action) > 128 || !validScopeValue(ac.Action)) {
		return invalid("action", "1 to 128 printable ASCII characters")
	}
	if ac.SubjectID != "" && !ident.Valid(ac.SubjectID) {
		return invalid("subject_id", ident.Rule)
	}
	return nil
}

func (ac *AdmissionContext) hash(ws *catalog.Workspace, appID, dependencyID string) [16]byte {
	return contextHash(ws, "admission", appID, dependencyID, strings.ToLower(ac.Action), ac.SubjectID)
}

func (s *Server) admit(c *Call, who trafficCaller, in *AdmitFields) {
	retry := in.Attempt > 1
	switch {
	case in.Attempt < 0 || in.Attempt > 100:
		c.failErr(invalid("attempt", "must be 1 to 100"))
		return
	case in.Retry != nil && in.Attempt != 0 && *in.Retry != retry:
		c.failErr(invalid("retry", "disagrees with attempt"))
		return
	case in.Retry != nil:
		retry = *in.Retry
	}
	if err := in.validate(); err != nil {
		c.failErr(err)
		return
	}
	if in.Dependency == "" {
		c.failErr(invalid("dependency", "required"))
		return
	}
	d := c.cat.DependencyByName(who.ws.ID, in.Dependency)
	if d == nil {
		c.fail(ErrUnknownDependency, "no dependency named "+in.Dependency+" in this workspace")
		return
	}
	key := c.cat.SigningKey(catalog.KeyLive)
	if key == nil {
		c.fail(ErrUnavailable, "no signing key is available yet")
		return
	}
	now := c.Now()
	claims := admissionClaims{admissionID: randomTokenID(), workspaceID: who.ws.ID, appID: who.appID, dependencyID: d.ID,
		context: in.hash(who.ws, who.appID, d.ID), expiresMs: now.Add(time.Duration(d.AdmissionTTLMs) * time.Millisecond).UnixMilli()}
	op := &actors.BreakerAdmit{Key: breakerKey(who.ws.ID, d.ID), AdmissionID: claims.admissionID, Retry: retry,
		Config: dependencyConfig(d), Expires: claims.expiresMs * int64(time.Millisecond)}
	if err := s.router.Ask(op.Key, op); err != nil {
		c.failErr(err)
		return
	}
	res := &AdmitResult{Success: true, Admitted: op.Admitted, Reason: op.Reason.String(), Dependency: d.Name,
		State: op.State.String(), Probe: op.Probe, InFlight: op.InFlight, MaxConcurrent: d.MaxConcurrent,
		RetriesAvailable: op.RetriesAvailable}
	if op.Admitted {
		exp := time.UnixMilli(claims.expiresMs).UTC()
		res.AdmissionID, res.AdmissionToken, res.ExpiresAt = claims.admissionID, claims.seal(key), &exp
	} else if op.RetryAfter > 0 {
		res.RetryAfterMs = (op.RetryAfter + int64(time.Millisecond) - 1) / int64(time.Millisecond)
		res.RetryAfterSeconds = (res.RetryAfterMs + 999) / 1000
		setRetryAfter(&c.Ctx.Response.Header, res.RetryAfterSeconds)
	}
	c.ok(res)
}

func (s *Server) feedback(c *Call, who trafficCaller, in *FeedbackFields) {
	var success bool
	switch in.Outcome {
	case "success":
		success = true
	case "failure", "timeout":
	default:
		c.failErr(invalid("outcome", "must be success, failure or timeout"))
		return
	}
	if in.LatencyMs != nil && (*in.LatencyMs < 0 || *in.LatencyMs > 86_400_000) {
		c.failErr(invalid("latency_ms", "must be 0 to 86400000"))
		return
	}
	if in.AdmissionToken == "" {
		c.failErr(invalid("admission_token", "required"))
		return
	}
	if err := in.validate(); err != nil {
		c.failErr(err)
		return
	}
	a, ok := openAdmission(c.cat, in.AdmissionToken)
	if !ok {
		c.fail(ErrInvalidAdmission, "the admission token is not valid")
		return
	}
	if a.workspaceID != who.ws.ID || a.appID != who.appID || !equal16(a.context, in.hash(who.ws, who.appID, a.dependencyID)) {
		c.fail(ErrAdmissionContext, "the admission was issued for another application or context")
		return
	}
	d := c.cat.Dependencies[a.dependencyID]
	if d == nil || d.WorkspaceID != who.ws.ID {
		c.fail(ErrUnknownDependency, "the admitted dependency no longer exists")
		return
	}
	if in.Dependency != "" && in.Dependency != d.Name {
		c.fail(ErrAdmissionContext, "the admission was issued for dependency "+d.Name)
		return
	}
	now := c.Now()
	if a.expiresMs <= now.UnixMilli() {
		c.fail(ErrAdmissionExpired, "the admission expired; its outcome is no longer accepted")
		return
	}
	mark := &actors.Consume{ID: "adm/" + a.admissionID, Expires: time.UnixMilli(a.expiresMs).Add(admissionMarkerSkew).UnixNano()}
	if err := s.router.Ask(mark.ID, mark); err != nil {
		c.failErr(err)
		return
	}
	if !mark.First {
		c.fail(ErrAdmissionUsed, "feedback for this admission was already received")
		return
	}
	if success && d.SlowCallMs > 0 && in.LatencyMs != nil && *in.LatencyMs > d.SlowCallMs {
		success = false
	}
	op := &actors.BreakerFeedback{Key: breakerKey(who.ws.ID, d.ID), AdmissionID: a.admissionID, Success: success, Config: dependencyConfig(d)}
	if err := s.router.Ask(op.Key, op); err != nil {
		// The marker is spent and the outcome lost: the admission's slot
		// frees at expiry. Losing one outcome is safer than counting twice.
		c.failErr(err)
		return
	}
	countedAs := "failure"
	if success {
		countedAs = "success"
	}
	c.ok(&FeedbackResult{Success: true, AdmissionID: a.admissionID, Dependency: d.Name, CountedAs: countedAs,
		Counted: op.Counted, State: op.State.String()})
}
