package http

import (
	"github.com/trustd/trustd/traffic/lease"
)

// Concurrency leases (spec 4.10): transport only. Acquire, renew and
// release are traffic/lease's; this file declares the bodies, decodes,
// authenticates the site or mobile app, calls the module and encodes.

// LeaseAcquireRequest is the body of POST /concurrency/acquire.
type LeaseAcquireRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	lease.LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint; default: the shortest default among them (30000 when none matches)."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters. Retrying an acquire with the same key, application and context returns the same lease while it is held, instead of taking another slot."`
}

// MobileLeaseAcquireRequest is the body of POST /mobile/concurrency/acquire.
type MobileLeaseAcquireRequest struct {
	MobileIdentity
	lease.LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters; a retry with the same key returns the same lease."`
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
	lease.LeaseContext
	TTLMs int64 `json:"ttl_ms,omitempty" doc:"New lifetime from now, clamped into the constraints' bounds; default: their default."`
}

// MobileLeaseRenewRequest is the body of POST /mobile/concurrency/renew.
type MobileLeaseRenewRequest struct {
	MobileIdentity
	LeaseToken string `json:"lease_token" required:"true"`
	lease.LeaseContext
	TTLMs int64 `json:"ttl_ms,omitempty"`
}

// LeaseReleaseRequest is the body of POST /concurrency/release.
type LeaseReleaseRequest struct {
	Secret     string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	LeaseToken string `json:"lease_token" required:"true"`
	lease.LeaseContext
}

// MobileLeaseReleaseRequest is the body of POST /mobile/concurrency/release.
type MobileLeaseReleaseRequest struct {
	MobileIdentity
	LeaseToken string `json:"lease_token" required:"true"`
	lease.LeaseContext
}

var leaseErrors = []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
	ErrUnauthorized, ErrForbidden, ErrUnavailable}

func (s *Server) concurrencyRoutes() []Route {
	site := []Auth{AuthSiteSecret}
	mobile := []Auth{AuthMobile}
	mobileErrs := append([]ErrorCode{ErrInvalidAppIdentity}, leaseErrors...)
	tokenErrs := withModuleCodes(nil, lease.Errors)
	return []Route{
		{Method: "POST", Path: "/concurrency/acquire", ID: "acquireConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Take a slot in every matching concurrency constraint, or none; answers a signed, expiring lease.",
			Body:    &LeaseAcquireRequest{}, Result: &lease.LeaseResult{}, Errors: leaseErrors,
			Handle: asSite(func(c *Call, who trafficCaller, in *LeaseAcquireRequest) {
				s.acquireLease(c, who, &in.LeaseContext, in.TTLMs, in.IdempotencyKey)
			})},
		{Method: "POST", Path: "/concurrency/renew", ID: "renewConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Extend a held lease; answers the lease with its new expiry and token.",
			Body:    &LeaseRenewRequest{}, Result: &lease.LeaseResult{}, Errors: append(tokenErrs, leaseErrors...),
			Handle: asSite(func(c *Call, who trafficCaller, in *LeaseRenewRequest) {
				s.renewLease(c, who, in.LeaseToken, &in.LeaseContext, in.TTLMs)
			})},
		{Method: "POST", Path: "/concurrency/release", ID: "releaseConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Free a lease's slots now.",
			Body:    &LeaseReleaseRequest{}, Result: &lease.LeaseReleaseResult{}, Errors: append([]ErrorCode{ErrInvalidLease, ErrLeaseContextMismatch}, leaseErrors...),
			Handle: asSite(func(c *Call, who trafficCaller, in *LeaseReleaseRequest) {
				s.releaseLease(c, who, in.LeaseToken, &in.LeaseContext)
			})},
		{Method: "POST", Path: "/mobile/concurrency/acquire", ID: "acquireMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of acquire: mobile server secret plus registered platform and app_id.",
			Body:    &MobileLeaseAcquireRequest{}, Result: &lease.LeaseResult{}, Errors: mobileErrs,
			Handle: asMobile(func(c *Call, who trafficCaller, in *MobileLeaseAcquireRequest) {
				s.acquireLease(c, who, &in.LeaseContext, in.TTLMs, in.IdempotencyKey)
			})},
		{Method: "POST", Path: "/mobile/concurrency/renew", ID: "renewMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of renew.",
			Body:    &MobileLeaseRenewRequest{}, Result: &lease.LeaseResult{}, Errors: append(tokenErrs, mobileErrs...),
			Handle: asMobile(func(c *Call, who trafficCaller, in *MobileLeaseRenewRequest) {
				s.renewLease(c, who, in.LeaseToken, &in.LeaseContext, in.TTLMs)
			})},
		{Method: "POST", Path: "/mobile/concurrency/release", ID: "releaseMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of release.",
			Body:    &MobileLeaseReleaseRequest{}, Result: &lease.LeaseReleaseResult{}, Errors: append([]ErrorCode{ErrInvalidLease, ErrLeaseContextMismatch}, mobileErrs...),
			Handle: asMobile(func(c *Call, who trafficCaller, in *MobileLeaseReleaseRequest) {
				s.releaseLease(c, who, in.LeaseToken, &in.LeaseContext)
			})},
	}
}

// leaseCaller is the module's view of who called.
func leaseCaller(who trafficCaller) lease.Caller {
	return lease.Caller{Workspace: who.ws, AppID: who.appID}
}

func (s *Server) acquireLease(c *Call, who trafficCaller, lc *lease.LeaseContext, ttlMs int64, idemKey string) {
	res, err := s.mods.lease.Acquire(c.cat, leaseCaller(who), lc, ttlMs, idemKey)
	if err != nil {
		c.failErr(err)
		return
	}
	if res.RetryAfterSeconds > 0 {
		setRetryAfter(&c.Ctx.Response.Header, res.RetryAfterSeconds)
	}
	c.ok(res)
}

func (s *Server) renewLease(c *Call, who trafficCaller, tok string, lc *lease.LeaseContext, ttlMs int64) {
	res, err := s.mods.lease.Renew(c.cat, leaseCaller(who), tok, lc, ttlMs)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}

func (s *Server) releaseLease(c *Call, who trafficCaller, tok string, lc *lease.LeaseContext) {
	res, err := s.mods.lease.Release(c.cat, leaseCaller(who), tok, lc)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}
