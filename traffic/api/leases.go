package api

import (
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/lease"
)

// Concurrency leases (spec 4.10): transport only. Acquire, renew and
// release are traffic/lease's; this file declares the bodies, decodes,
// authenticates the site or mobile app (kernel.AsSiteCaller,
// kernel.AsMobileCaller), calls the module and encodes.

// LeaseAcquireRequest is the body of POST /concurrency/acquire.
type LeaseAcquireRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	lease.LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint; default: the shortest default among them (30000 when none matches)."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters. Retrying an acquire with the same key, application and context returns the same lease while it is held, instead of taking another slot."`
}

// MobileLeaseAcquireRequest is the body of POST /mobile/concurrency/acquire.
type MobileLeaseAcquireRequest struct {
	kernel.AppIdentity
	lease.LeaseContext
	TTLMs          int64  `json:"ttl_ms,omitempty" doc:"Requested lease lifetime in milliseconds, clamped into the lifetime bounds of every matching constraint."`
	IdempotencyKey string `json:"idempotency_key,omitempty" doc:"1 to 128 printable characters; a retry with the same key returns the same lease."`
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
	kernel.AppIdentity
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
	kernel.AppIdentity
	LeaseToken string `json:"lease_token" required:"true"`
	lease.LeaseContext
}

var leaseErrors = []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType,
	kernel.ErrBodyTooLarge, kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrUnavailable}

// The bodies' site secret and, for the mobile forms, the declared identity
// and the site form the operation runs on (kernel.SiteSecretBody,
// kernel.MobileBody).
func (r *LeaseAcquireRequest) SiteSecret() string       { return r.Secret }
func (r *LeaseRenewRequest) SiteSecret() string         { return r.Secret }
func (r *LeaseReleaseRequest) SiteSecret() string       { return r.Secret }
func (r *MobileLeaseAcquireRequest) SiteSecret() string { return "" }
func (r *MobileLeaseRenewRequest) SiteSecret() string   { return "" }
func (r *MobileLeaseReleaseRequest) SiteSecret() string { return "" }

func (r *MobileLeaseAcquireRequest) Site() *LeaseAcquireRequest {
	return &LeaseAcquireRequest{LeaseContext: r.LeaseContext, TTLMs: r.TTLMs, IdempotencyKey: r.IdempotencyKey}
}

func (r *MobileLeaseRenewRequest) Site() *LeaseRenewRequest {
	return &LeaseRenewRequest{LeaseToken: r.LeaseToken, LeaseContext: r.LeaseContext, TTLMs: r.TTLMs}
}

func (r *MobileLeaseReleaseRequest) Site() *LeaseReleaseRequest {
	return &LeaseReleaseRequest{LeaseToken: r.LeaseToken, LeaseContext: r.LeaseContext}
}

// leaseAPI is the leases' transport over the module node/ built.
type leaseAPI struct{ m *lease.Module }

func (a leaseAPI) routes() []kernel.Route {
	site := []kernel.Auth{kernel.AuthSiteSecret}
	mobile := []kernel.Auth{kernel.AuthMobile}
	mobileErrs := append([]kernel.ErrorCode{kernel.ErrInvalidAppIdentity}, leaseErrors...)
	tokenErrs := kernel.WithModuleCodes(nil, lease.Errors)
	releaseErrs := []kernel.ErrorCode{kernel.ModuleCode(lease.ErrInvalid), kernel.ModuleCode(lease.ErrContextMismatch)}
	return []kernel.Route{
		{Method: "POST", Path: "/concurrency/acquire", ID: "acquireConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Take a slot in every matching concurrency constraint, or none; answers a signed, expiring lease.",
			Body:    &LeaseAcquireRequest{}, Result: &lease.LeaseResult{}, Errors: leaseErrors,
			Handle: kernel.AsSiteCaller(a.acquire)},
		{Method: "POST", Path: "/concurrency/renew", ID: "renewConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Extend a held lease; answers the lease with its new expiry and token.",
			Body:    &LeaseRenewRequest{}, Result: &lease.LeaseResult{}, Errors: append(tokenErrs, leaseErrors...),
			Handle: kernel.AsSiteCaller(a.renew)},
		{Method: "POST", Path: "/concurrency/release", ID: "releaseConcurrencyLease", Tag: "Traffic control", Auth: site,
			Summary: "Free a lease's slots now.",
			Body:    &LeaseReleaseRequest{}, Result: &lease.LeaseReleaseResult{}, Errors: append(releaseErrs, leaseErrors...),
			Handle: kernel.AsSiteCaller(a.release)},
		{Method: "POST", Path: "/mobile/concurrency/acquire", ID: "acquireMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of acquire: mobile server secret plus registered platform and app_id.",
			Body:    &MobileLeaseAcquireRequest{}, Result: &lease.LeaseResult{}, Errors: mobileErrs,
			Handle: kernel.AsMobileCaller[LeaseAcquireRequest, MobileLeaseAcquireRequest](a.acquire)},
		{Method: "POST", Path: "/mobile/concurrency/renew", ID: "renewMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of renew.",
			Body:    &MobileLeaseRenewRequest{}, Result: &lease.LeaseResult{}, Errors: append(tokenErrs, mobileErrs...),
			Handle: kernel.AsMobileCaller[LeaseRenewRequest, MobileLeaseRenewRequest](a.renew)},
		{Method: "POST", Path: "/mobile/concurrency/release", ID: "releaseMobileConcurrencyLease", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of release.",
			Body:    &MobileLeaseReleaseRequest{}, Result: &lease.LeaseReleaseResult{}, Errors: append(releaseErrs, mobileErrs...),
			Handle: kernel.AsMobileCaller[LeaseReleaseRequest, MobileLeaseReleaseRequest](a.release)},
	}
}

// leaseCaller is the module's view of who called.
func leaseCaller(who kernel.Caller) lease.Caller {
	return lease.Caller{Workspace: who.Workspace, AppID: who.AppID}
}

func (a leaseAPI) acquire(c *kernel.Call, who kernel.Caller, in *LeaseAcquireRequest) {
	res, err := a.m.Acquire(c.Catalog(), leaseCaller(who), &in.LeaseContext, in.TTLMs, in.IdempotencyKey)
	if err != nil {
		c.FailErr(err)
		return
	}
	if res.RetryAfterSeconds > 0 {
		c.SetRetryAfter(res.RetryAfterSeconds)
	}
	c.OK(res)
}

func (a leaseAPI) renew(c *kernel.Call, who kernel.Caller, in *LeaseRenewRequest) {
	res, err := a.m.Renew(c.Catalog(), leaseCaller(who), in.LeaseToken, &in.LeaseContext, in.TTLMs)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(res)
}

func (a leaseAPI) release(c *kernel.Call, who kernel.Caller, in *LeaseReleaseRequest) {
	res, err := a.m.Release(c.Catalog(), leaseCaller(who), in.LeaseToken, &in.LeaseContext)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(res)
}
