package api

import (
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/admission"
)

// Dependency resilience (spec 4.10): transport only; admit and feedback
// are traffic/admission's.

// AdmitRequest is the body of POST /dependency-resilience/admit.
type AdmitRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	admission.AdmitFields
}

// MobileAdmitRequest is the body of POST /mobile/dependency-resilience/admit.
type MobileAdmitRequest struct {
	kernel.AppIdentity
	admission.AdmitFields
}

// FeedbackRequest is the body of POST /dependency-resilience/feedback.
type FeedbackRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	admission.FeedbackFields
}

// MobileFeedbackRequest is the body of POST /mobile/dependency-resilience/feedback.
type MobileFeedbackRequest struct {
	kernel.AppIdentity
	admission.FeedbackFields
}

func (r *AdmitRequest) SiteSecret() string          { return r.Secret }
func (r *FeedbackRequest) SiteSecret() string       { return r.Secret }
func (r *MobileAdmitRequest) SiteSecret() string    { return "" }
func (r *MobileFeedbackRequest) SiteSecret() string { return "" }

func (r *MobileAdmitRequest) Site() *AdmitRequest { return &AdmitRequest{AdmitFields: r.AdmitFields} }
func (r *MobileFeedbackRequest) Site() *FeedbackRequest {
	return &FeedbackRequest{FeedbackFields: r.FeedbackFields}
}

var admitErrors = []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType,
	kernel.ErrBodyTooLarge, kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrUnavailable}

// admissionAPI is the admissions' transport over the module node/ built.
type admissionAPI struct{ m *admission.Module }

func (a admissionAPI) routes() []kernel.Route {
	site := []kernel.Auth{kernel.AuthSiteSecret}
	mobile := []kernel.Auth{kernel.AuthMobile}
	code := kernel.ModuleCode
	admitErrs := append([]kernel.ErrorCode{code(admission.ErrUnknownDependency)}, admitErrors...)
	fbErrs := append([]kernel.ErrorCode{code(admission.ErrInvalid), code(admission.ErrExpired), code(admission.ErrUsed),
		code(admission.ErrContext), code(admission.ErrUnknownDependency)}, admitErrors...)
	return []kernel.Route{
		{Method: "POST", Path: "/dependency-resilience/admit", ID: "admitDependencyCall", Tag: "Traffic control", Auth: site,
			Summary: "Ask whether a call to a dependency may go ahead: circuit breaker, retry budget and bulkhead.",
			Body:    &AdmitRequest{}, Result: &admission.AdmitResult{}, Errors: admitErrs,
			Handle: kernel.AsSiteCaller(a.admit)},
		{Method: "POST", Path: "/dependency-resilience/feedback", ID: "dependencyCallFeedback", Tag: "Traffic control", Auth: site,
			Summary: "Report the outcome of an admitted call, once; it drives the circuit breaker and frees the bulkhead slot.",
			Body:    &FeedbackRequest{}, Result: &admission.FeedbackResult{}, Errors: fbErrs,
			Handle: kernel.AsSiteCaller(a.feedback)},
		{Method: "POST", Path: "/mobile/dependency-resilience/admit", ID: "admitMobileDependencyCall", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of admit.",
			Body:    &MobileAdmitRequest{}, Result: &admission.AdmitResult{}, Errors: append([]kernel.ErrorCode{kernel.ErrInvalidAppIdentity}, admitErrs...),
			Handle: kernel.AsMobileCaller[AdmitRequest, MobileAdmitRequest](a.admit)},
		{Method: "POST", Path: "/mobile/dependency-resilience/feedback", ID: "mobileDependencyCallFeedback", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of feedback.",
			Body:    &MobileFeedbackRequest{}, Result: &admission.FeedbackResult{}, Errors: append([]kernel.ErrorCode{kernel.ErrInvalidAppIdentity}, fbErrs...),
			Handle: kernel.AsMobileCaller[FeedbackRequest, MobileFeedbackRequest](a.feedback)},
	}
}

func (a admissionAPI) admit(c *kernel.Call, who kernel.Caller, in *AdmitRequest) {
	res, err := a.m.Admit(c.Catalog(), leaseCaller(who), &in.AdmitFields)
	if err != nil {
		c.FailErr(err)
		return
	}
	if res.RetryAfterSeconds > 0 {
		c.SetRetryAfter(res.RetryAfterSeconds)
	}
	c.OK(res)
}

func (a admissionAPI) feedback(c *kernel.Call, who kernel.Caller, in *FeedbackRequest) {
	res, err := a.m.Feedback(c.Catalog(), leaseCaller(who), &in.FeedbackFields)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(res)
}
