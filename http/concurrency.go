package http

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/ratelimit"
)

// Concurrency leases (spec 4.10): acquire takes one slot in every matching
// constraint or none, renew extends, release frees, and expiry frees by
// itself. Slots live in lease actors keyed by workspace + constraint +
// keyed hash of the scope value; the lease token carries what renew and
// release need to find them again, signed and bound to the caller's
// context.
//
// Acquire reserves constraint by constraint in ID order and releases what
// it reserved when one refuses, so a refused acquire holds nothing once it
// answers. While it runs, a concurrent acquire may see a slot that is
// given back a moment later: never over capacity, at worst a refusal that
// a retry would not get.

const (
	// maxLeaseConstraints bounds the constraints of a workspace, and so the
	// slots one lease token can carry.
	maxLeaseConstraints = 64
	// Lifetime of a lease when no constraint matches.
	unconstrainedTTLMs = int64(30_000)
	minLeaseTTLMs      = int64(100)
	maxLeaseTTLMs      = int64(24 * 3600 * 1000)
)

// LeaseAcquireRequest is the body of POST /concurrency/acquire.
type LeaseAcquireRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint; default: the shortest default among them (30000 when none matches)."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters. Retrying an acquire with the same key, application and context returns the same lease while it is held, instead of taking another slot."`
}

// MobileLeaseAcquireRequest is the body of POST /mobile/concurrency/acquire.
type MobileLeaseAcquireRequest struct {
	MobileIdentity
	LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters; a retry with the same key returns the same lease."`
}

// LeaseContext is the context a lease is bound to. Renew and release must
// send the same values.
type LeaseContext struct {
	Action    string `json:"action" required:"true" doc:"Protected action name, e.g. export.report; matched against each constraint's action pattern."`
	SubjectID string `json:"subject_id,omitempty" doc:"Required when a subject-scoped constraint matches. Stored only as a keyed hash."`
	DeviceID  string `json:"device_id,omitempty" doc:"Required when a device-scoped constraint matches. Stored only as a keyed hash."`
	ScopeKey  string `json:"scope_key,omitempty" doc:"Required when a custom-scoped constraint matches. Stored only as a keyed hash."`
}

// MobileIdentity is the registered identity a mobile call declares.
type MobileIdentity struct {
	Platform string `json:"platform" required:"true" enum:"android|ios" doc:"Must match the app's registration."`
	AppID    string `json:"app_id" required:"true" doc:"Package name or bundle id; must match the app's registration."`
}

// LeaseRenewRequest is the body of POST /concurrency/renew.
type LeaseRenewRequest struct {
	Secret     string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	LeaseToken string `json:"lease_token" required:"true" doc:"The lease_token of the acquire (or of the last renew)."`
	LeaseContext
	TTLMs int64 `json:"ttl_ms,omitempty" doc:"New lifetime from now, clamped into the constraints' bounds; default: their default."`
}

// MobileLeaseRenewRequest is the body of POST /mobile/concurrency/renew.
type MobileLeaseRenewRequest struct {
	MobileIdentity
	LeaseToken string `json:"lease_token" required:"true"`
	LeaseContext
	TTLMs int64 `json:"ttl_ms,omitempty"`
}

// LeaseReleaseRequest is the body of POST /concurrency/release.
type LeaseReleaseRequest struct {
	Secret     string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	LeaseToken string `json:"lease_token" required:"true"`
	LeaseContext
}

// MobileLeaseReleaseRequest is the body of POST /mobile/concurrency/release.
type MobileLeaseReleaseRequest struct {
	MobileIdentity
	LeaseToken string `json:"lease_token" required:"true"`
	LeaseContext
}

// LeaseFence is the slot a lease holds in one constraint.
type LeaseFence struct {
	Constraint   string `json:"constraint" required:"true" doc:"Constraint name."`
	ConstraintID string `json:"constraint_id" required:"true" format:"uuid"`
	FencingToken uint64 `json:"fencing_token" required:"true" doc:"Increases with every grant of this constraint's scope value and never repeats. Pass it to the protected resource, which refuses any token lower than the highest it has seen: a holder that paused past its expiry is then fenced off."`
}

// LeaseResult is the answer of acquire and renew.
type LeaseResult struct {
	Success  bool `json:"success" required:"true" doc:"The request was processed; read acquired."`
	Acquired bool `json:"acquired" required:"true" doc:"true when the lease holds a slot in every matching constraint; false when one refused and the lease holds nothing."`
	// Present when acquired.
	LeaseID       string       `json:"lease_id,omitempty"`
	LeaseToken    string       `json:"lease_token,omitempty" doc:"Signed, expiring token bound to the workspace, application, action and scope values; send it to renew and release."`
	ExpiresAt     *time.Time   `json:"expires_at,omitempty" doc:"When the slots free themselves unless renewed."`
	TTLMs         int64        `json:"ttl_ms,omitempty" doc:"Lifetime granted, after clamping."`
	FencingTokens []LeaseFence `json:"fencing_tokens" required:"true" doc:"One per constraint the lease holds a slot of."`
	// IdempotentReplay reports an acquire answered from the lease an
	// earlier acquire with the same idempotency_key took.
	IdempotentReplay       bool     `json:"idempotent_replay,omitempty" doc:"The same idempotency_key already held this lease; nothing new was taken."`
	MatchedConstraintCount int      `json:"matched_constraint_count" required:"true"`
	ReasonCodes            []string `json:"reason_codes" required:"true" doc:"capacity-exhausted when refused, no-matching-constraint when nothing limits the action."`
	// Present when refused.
	Constraint        string `json:"constraint,omitempty" doc:"Name of the constraint that refused."`
	RetryAfterMs      int64  `json:"retry_after_ms,omitempty" doc:"When refused: time until the earliest holder of the refusing constraint expires (a release may free a slot sooner)."`
	RetryAfterSeconds int64  `json:"retry_after_seconds,omitempty"`
}

// LeaseReleaseResult is the answer of release.
type LeaseReleaseResult struct {
	Success  bool   `json:"success" required:"true"`
	LeaseID  string `json:"lease_id" required:"true"`
	Released bool   `json:"released" required:"true" doc:"true when the lease still held slots and they are now free; false when it had already expired or been released (releasing twice is harmless)."`
}

var leaseErrors = []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
	ErrUnauthorized, ErrForbidden, ErrUnavailable}

func (s *Server) concurrencyRoutes() []Route {
	site := []Auth{AuthSiteSecret}
	mobile := []Auth{AuthMobile}
	mobileErrs := append([]ErrorCode{ErrInvalidAppIdentity}, leaseErrors...)
	tokenErrs := []ErrorCode{ErrInvalidLease, ErrLeaseExpired, ErrLeaseContextMismatch}
	return []Route{
		{Method: "POST", Path: "/concurrency/acquire", ID: "acquireConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Take a slot in every matching concurrency constraint, or none; answers a signed, expiring lease.",
			Body:    &LeaseAcquireRequest{}, Result: &LeaseResult{}, Errors: leaseErrors,
			Handle: func(c *Call) {
				var in LeaseAcquireRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.siteCaller(in.Secret); ok {
					s.acquireLease(c, who, &in.LeaseContext, in.TTLMs, in.IdempotencyKey)
				}
			}},
		{Method: "POST", Path: "/concurrency/renew", ID: "renewConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Extend a held lease; answers the lease with its new expiry and token.",
			Body:    &LeaseRenewRequest{}, Result: &LeaseResult{}, Errors: append(tokenErrs, leaseErrors...),
			Handle: func(c *Call) {
				var in LeaseRenewRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.siteCaller(in.Secret); ok {
					s.renewLease(c, who, in.LeaseToken, &in.LeaseContext, in.TTLMs)
				}
			}},
		{Method: "POST", Path: "/concurrency/release", ID: "releaseConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Free a lease's slots now.",
			Body:    &LeaseReleaseRequest{}, Result: &LeaseReleaseResult{}, Errors: append([]ErrorCode{ErrInvalidLease, ErrLeaseContextMismatch}, leaseErrors...),
			Handle: func(c *Call) {
				var in LeaseReleaseRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.siteCaller(in.Secret); ok {
					s.releaseLease(c, who, in.LeaseToken, &in.LeaseContext)
				}
			}},
		{Method: "POST", Path: "/mobile/concurrency/acquire", ID: "acquireMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of acquire: mobile server secret plus registered platform and app_id.",
			Body:    &MobileLeaseAcquireRequest{}, Result: &LeaseResult{}, Errors: mobileErrs,
			Handle: func(c *Call) {
				var in MobileLeaseAcquireRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.mobileCaller(in.Platform, in.AppID); ok {
					s.acquireLease(c, who, &in.LeaseContext, in.TTLMs, in.IdempotencyKey)
				}
			}},
		{Method: "POST", Path: "/mobile/concurrency/renew", ID: "renewMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of renew.",
			Body:    &MobileLeaseRenewRequest{}, Result: &LeaseResult{}, Errors: append(tokenErrs, mobileErrs...),
			Handle: func(c *Call) {
				var in MobileLeaseRenewRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.mobileCaller(in.Platform, in.AppID); ok {
					s.renewLease(c, who, in.LeaseToken, &in.LeaseContext, in.TTLMs)
				}
			}},
		{Method: "POST", Path: "/mobile/concurrency/release", ID: "releaseMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of release.",
			Body:    &MobileLeaseReleaseRequest{}, Result: &LeaseReleaseResult{}, Errors: append([]ErrorCode{ErrInvalidLease, ErrLeaseContextMismatch}, mobileErrs...),
			Handle: func(c *Call) {
				var in MobileLeaseReleaseRequest
				if !c.decode(&in) {
					return
				}
				if who, ok := c.mobileCaller(in.Platform, in.AppID); ok {
					s.releaseLease(c, who, in.LeaseToken, &in.LeaseContext)
				}
			}},
	}
}

// validate checks the context fields and returns the lower-cased action.
func (lc *LeaseContext) validate() (string, error) {
	if !ratelimit.ValidAction(lc.Action) {
		return "", invalid("action", "required: 1 to 128 letters, digits, '_', '.', ':' or '-', with non-empty dot-separated segments")
	}
	for _, f := range []struct{ name, v string }{{"subject_id", lc.SubjectID}, {"device_id", lc.DeviceID}, {"scope_key", lc.ScopeKey}} {
		if f.v != "" && !ident.Valid(f.v) {
			return "", invalid(f.name, ident.Rule)
		}
	}
	return strings.ToLower(lc.Action), nil
}

func (lc *LeaseContext) hash(ws *catalog.Workspace, appID, action string) [16]byte {
	return contextHash(ws, "lease", appID, action, lc.SubjectID, lc.DeviceID, lc.ScopeKey)
}

// matchedConstraint is a constraint an acquire must win, with its key.
type matchedConstraint struct {
	k         *catalog.ConcurrencyConstraint
	scopeHash [16]byte
}

// leaseKey is the router key of one constraint's slots for one scope value.
func leaseKey(workspaceID, constraintID string, scopeHash [16]byte) string {
	var b strings.Builder
	b.Grow(6 + len(workspaceID) + 1 + len(constraintID) + 1 + 32)
	b.WriteString("lease/")
	b.WriteString(workspaceID)
	b.WriteByte('/')
	b.WriteString(constraintID)
	b.WriteByte('/')
	var h [32]byte
	hex.Encode(h[:], scopeHash[:])
	b.Write(h[:])
	return b.String()
}

// matchConstraints lists the constraints an acquire of action by who must
// win, each with the keyed hash of its scope value.
func matchConstraints(cat *catalog.Catalog, who trafficCaller, action string, lc *LeaseContext) ([]matchedConstraint, error) {
	var out []matchedConstraint
	for _, k := range cat.ConstraintsOf(who.ws.ID) {
		if k.ApplicationID != "" && k.ApplicationID != who.appID {
			continue
		}
		if !ratelimit.MatchAction(k.ActionPattern, action) {
			continue
		}
		var value, field string
		switch k.Scope {
		case catalog.ScopeWorkspace:
		case catalog.ScopeApplication:
			value = who.appID
		case catalog.ScopeSubject:
			value, field = lc.SubjectID, "subject_id"
		case catalog.ScopeDevice:
			value, field = lc.DeviceID, "device_id"
		case catalog.ScopeCustom:
			value, field = lc.ScopeKey, "scope_key"
		}
		if field != "" && value == "" {
			return nil, invalid(field, "required by concurrency constraint "+k.Name)
		}
		sum := ratelimit.HashScope(who.ws.ScopeKey, k.Scope+"\x00"+value)
		var h [16]byte
		copy(h[:], sum[:])
		out = append(out, matchedConstraint{k: k, scopeHash: h})
	}
	return out, nil
}

// leaseTTL clamps a requested lifetime into the bounds every constraint
// allows; when the bounds do not overlap the shortest maximum wins.
func leaseTTL(requested int64, ks []*catalog.ConcurrencyConstraint) int64 {
	if len(ks) == 0 {
		if requested == 0 {
			return unconstrainedTTLMs
		}
		return min(max(requested, minLeaseTTLMs), maxLeaseTTLMs)
	}
	lo, hi, def := int64(0), int64(1<<62), int64(1<<62)
	for _, k := range ks {
		lo, hi, def = max(lo, k.MinTTLMs), min(hi, k.MaxTTLMs), min(def, k.DefaultTTLMs)
	}
	ttl := requested
	if ttl == 0 {
		ttl = def
	}
	return min(max(ttl, lo), hi)
}

func validTTL(ttl int64) error {
	if ttl != 0 && (ttl < minLeaseTTLMs || ttl > maxLeaseTTLMs) {
		return invalid("ttl_ms", "must be "+strconv.FormatInt(minLeaseTTLMs, 10)+" to "+strconv.FormatInt(maxLeaseTTLMs, 10))
	}
	return nil
}

func (s *Server) acquireLease(c *Call, who trafficCaller, lc *LeaseContext, ttlMs int64, idemKey string) {
	action, err := lc.validate()
	if err == nil {
		err = validTTL(ttlMs)
	}
	if err == nil && idemKey != "" && (len(idemKey) > 128 || !validScopeValue(idemKey)) {
		err = invalid("idempotency_key", "1 to 128 printable ASCII characters")
	}
	if err != nil {
		c.failErr(err)
		return
	}
	key := c.cat.SigningKey(catalog.KeyLive)
	if key == nil {
		c.fail(ErrUnavailable, "no signing key is available yet")
		return
	}
	matched, err := matchConstraints(c.cat, who, action, lc)
	if err != nil {
		c.failErr(err)
		return
	}
	ks := make([]*catalog.ConcurrencyConstraint, len(matched))
	for i, m := range matched {
		ks[i] = m.k
	}
	ttl := leaseTTL(ttlMs, ks)
	now := c.Now()
	ctxHash := lc.hash(who.ws, who.appID, action)
	leaseID := randomTokenID()
	if idemKey != "" {
		// The same key, application and context name the same lease, so a
		// retry finds its slots already held instead of taking more.
		sum := contextHash(who.ws, "lease-idempotency", who.appID, idemKey, string(ctxHash[:]))
		leaseID = b64.EncodeToString(sum[:])
	}
	claims := leaseClaims{leaseID: leaseID, workspaceID: who.ws.ID, appID: who.appID, context: ctxHash,
		expiresMs: now.Add(time.Duration(ttl) * time.Millisecond).UnixMilli()}
	res := &LeaseResult{Success: true, MatchedConstraintCount: len(matched), FencingTokens: []LeaseFence{}}
	replay := len(matched) > 0
	// Slots are taken one constraint at a time in one global order (by
	// state key), so two acquires over the same constraints never hold one
	// each and refuse each other; on any refusal every slot this acquire
	// holds is given back before answering (all or nothing), including
	// slots an idempotent retry found already held.
	slices.SortFunc(matched, func(a, b matchedConstraint) int {
		return strings.Compare(leaseKey(who.ws.ID, a.k.ID, a.scopeHash), leaseKey(who.ws.ID, b.k.ID, b.scopeHash))
	})
	var taken []*actors.LeaseReserve
	for _, m := range matched {
		op := &actors.LeaseReserve{Key: leaseKey(who.ws.ID, m.k.ID, m.scopeHash), LeaseID: leaseID,
			Capacity: m.k.Capacity, Expires: claims.expiresMs * int64(time.Millisecond)}
		if err := s.router.Ask(op.Key, op); err != nil {
			s.undoReservations(taken)
			c.failErr(err)
			return
		}
		if !op.Granted {
			s.undoReservations(taken)
			res.ReasonCodes = []string{"capacity-exhausted"}
			res.Constraint = m.k.Name
			if op.RetryAfter > 0 {
				res.RetryAfterMs = (op.RetryAfter + int64(time.Millisecond) - 1) / int64(time.Millisecond)
				res.RetryAfterSeconds = (res.RetryAfterMs + 999) / 1000
				setRetryAfter(&c.Ctx.Response.Header, res.RetryAfterSeconds)
			}
			c.ok(res)
			return
		}
		taken = append(taken, op)
		if !op.Existing {
			replay = false
		} else {
			// A retry keeps the lease it already holds, expiry included.
			claims.expiresMs = min(claims.expiresMs, op.HeldUntil/int64(time.Millisecond))
		}
		claims.slots = append(claims.slots, leaseSlot{constraintID: m.k.ID, scopeHash: m.scopeHash, fence: op.Fence})
		res.FencingTokens = append(res.FencingTokens, LeaseFence{Constraint: m.k.Name, ConstraintID: m.k.ID, FencingToken: op.Fence})
	}
	if len(matched) == 0 {
		res.ReasonCodes = []string{"no-matching-constraint"}
	} else {
		res.ReasonCodes = []string{}
	}
	s.answerLease(c, key, &claims, res, now)
	res.IdempotentReplay = replay
	c.ok(res)
}

// answerLease fills the granted fields of res from claims.
func (s *Server) answerLease(c *Call, key *catalog.SigningKey, claims *leaseClaims, res *LeaseResult, now time.Time) {
	exp := time.UnixMilli(claims.expiresMs).UTC()
	res.Acquired = true
	res.LeaseID = claims.leaseID
	res.LeaseToken = claims.seal(key)
	res.ExpiresAt = &exp
	res.TTLMs = max(claims.expiresMs-now.UnixMilli(), 0)
}

// undoReservations gives back the slots a refused acquire took. A failure
// here leaves the slot to expire with its lease.
func (s *Server) undoReservations(taken []*actors.LeaseReserve) {
	for _, r := range taken {
		op := &actors.LeaseRelease{Key: r.Key, LeaseID: r.LeaseID, Fence: r.Fence}
		if err := s.router.Ask(op.Key, op); err != nil {
			s.log.Warn("lease: could not give back a reserved slot; it frees at expiry", "err", err)
		}
	}
}

// openLeaseFor verifies a lease token and its binding to the caller and
// context. It answers the error itself when it returns nil.
func openLeaseFor(c *Call, who trafficCaller, tok string, lc *LeaseContext) *leaseClaims {
	if tok == "" {
		c.failErr(invalid("lease_token", "required"))
		return nil
	}
	action, err := lc.validate()
	if err != nil {
		c.failErr(err)
		return nil
	}
	l, ok := openLease(c.cat, tok)
	if !ok {
		c.fail(ErrInvalidLease, "the lease token is not valid")
		return nil
	}
	want := lc.hash(who.ws, who.appID, action)
	if l.workspaceID != who.ws.ID || l.appID != who.appID || !equal16(l.context, want) {
		c.fail(ErrLeaseContextMismatch, "the lease was issued for another application, action or scope value")
		return nil
	}
	return l
}

func equal16(a, b [16]byte) bool {
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

func (s *Server) renewLease(c *Call, who trafficCaller, tok string, lc *LeaseContext, ttlMs int64) {
	if err := validTTL(ttlMs); err != nil {
		c.failErr(err)
		return
	}
	l := openLeaseFor(c, who, tok, lc)
	if l == nil {
		return
	}
	now := c.Now()
	if l.expiresMs <= now.UnixMilli() {
		c.fail(ErrLeaseExpired, "the lease expired; acquire a new one")
		return
	}
	key := c.cat.SigningKey(catalog.KeyLive)
	if key == nil {
		c.fail(ErrUnavailable, "no signing key is available yet")
		return
	}
	var ks []*catalog.ConcurrencyConstraint
	for _, sl := range l.slots {
		if k := c.cat.ConcurrencyConstraints[sl.constraintID]; k != nil {
			ks = append(ks, k)
		}
	}
	ttl := leaseTTL(ttlMs, ks)
	next := *l
	next.expiresMs = now.Add(time.Duration(ttl) * time.Millisecond).UnixMilli()
	res := &LeaseResult{Success: true, MatchedConstraintCount: len(l.slots), FencingTokens: make([]LeaseFence, 0, len(l.slots)), ReasonCodes: []string{}}
	for i, sl := range l.slots {
		op := &actors.LeaseRenew{Key: leaseKey(l.workspaceID, sl.constraintID, sl.scopeHash), LeaseID: l.leaseID,
			Fence: sl.fence, Expires: next.expiresMs * int64(time.Millisecond)}
		if err := s.router.Ask(op.Key, op); err != nil {
			c.failErr(err)
			return
		}
		if !op.Held {
			// The lease lost one slot: it no longer holds the set the
			// caller was promised, so the rest goes back too.
			s.releaseSlots(l, i)
			c.fail(ErrLeaseExpired, "the lease no longer holds its slots (expired or released); acquire a new one")
			return
		}
		name := sl.constraintID
		if k := c.cat.ConcurrencyConstraints[sl.constraintID]; k != nil {
			name = k.Name
		}
		res.FencingTokens = append(res.FencingTokens, LeaseFence{Constraint: name, ConstraintID: sl.constraintID, FencingToken: sl.fence})
	}
	s.answerLease(c, key, &next, res, now)
	c.ok(res)
}

// releaseSlots frees every slot of l except the one at skip (-1: none),
// and reports whether any was still held.
func (s *Server) releaseSlots(l *leaseClaims, skip int) (bool, error) {
	released := false
	var firstErr error
	for i, sl := range l.slots {
		if i == skip {
			continue
		}
		op := &actors.LeaseRelease{Key: leaseKey(l.workspaceID, sl.constraintID, sl.scopeHash), LeaseID: l.leaseID, Fence: sl.fence}
		if err := s.router.Ask(op.Key, op); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		released = released || op.Released
	}
	return released, firstErr
}

func (s *Server) releaseLease(c *Call, who trafficCaller, tok string, lc *LeaseContext) {
	l := openLeaseFor(c, who, tok, lc)
	if l == nil {
		return
	}
	released, err := s.releaseSlots(l, -1)
	if err != nil {
		// Slots that could not be reached free at expiry; the caller may
		// retry the release, which is harmless.
		c.failErr(err)
		return
	}
	c.ok(&LeaseReleaseResult{Success: true, LeaseID: l.leaseID, Released: released})
}
