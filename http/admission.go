package http

import "github.com/trustd/trustd/traffic/admission"

// Dependency resilience (spec 4.10): transport only; admit and feedback
// are traffic/admission's.

// AdmitRequest is the body of POST /dependency-resilience/admit.
type AdmitRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	admission.AdmitFields
}

// MobileAdmitRequest is the body of POST /mobile/dependency-resilience/admit.
type MobileAdmitRequest struct {
	MobileIdentity
	admission.AdmitFields
}

// FeedbackRequest is the body of POST /dependency-resilience/feedback.
type FeedbackRequest struct {
	Secret string `json:"secret,omitempty" doc:"The site's private secret, when it is not sent as Authorization: Bearer."`
	admission.FeedbackFields
}

// MobileFeedbackRequest is the body of POST /mobile/dependency-resilience/feedback.
type MobileFeedbackRequest struct {
	MobileIdentity
	admission.FeedbackFields
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
			Body:    &AdmitRequest{}, Result: &admission.AdmitResult{}, Errors: admitErrs,
			Handle: asSite(func(c *Call, who trafficCaller, in *AdmitRequest) { s.admit(c, who, &in.AdmitFields) })},
		{Method: "POST", Path: "/dependency-resilience/feedback", ID: "dependencyCallFeedback", Tag: "Traffic control", Auth: site,
			Summary: "Report the outcome of an admitted call, once; it drives the circuit breaker and frees the bulkhead slot.",
			Body:    &FeedbackRequest{}, Result: &admission.FeedbackResult{}, Errors: fbErrs,
			Handle: asSite(func(c *Call, who trafficCaller, in *FeedbackRequest) { s.feedback(c, who, &in.FeedbackFields) })},
		{Method: "POST", Path: "/mobile/dependency-resilience/admit", ID: "admitMobileDependencyCall", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of admit.",
			Body:    &MobileAdmitRequest{}, Result: &admission.AdmitResult{}, Errors: append([]ErrorCode{ErrInvalidAppIdentity}, admitErrs...),
			Handle: asMobile(func(c *Call, who trafficCaller, in *MobileAdmitRequest) { s.admit(c, who, &in.AdmitFields) })},
		{Method: "POST", Path: "/mobile/dependency-resilience/feedback", ID: "mobileDependencyCallFeedback", Tag: "Traffic control", Auth: mobile,
			Summary: "Mobile counterpart of feedback.",
			Body:    &MobileFeedbackRequest{}, Result: &admission.FeedbackResult{}, Errors: append([]ErrorCode{ErrInvalidAppIdentity}, fbErrs...),
			Handle: asMobile(func(c *Call, who trafficCaller, in *MobileFeedbackRequest) { s.feedback(c, who, &in.FeedbackFields) })},
	}
}

func (s *Server) admit(c *Call, who trafficCaller, in *admission.AdmitFields) {
	res, err := s.mods.admission.Admit(c.cat, leaseCaller(who), in)
	if err != nil {
		c.failErr(err)
		return
	}
	if res.RetryAfterSeconds > 0 {
		setRetryAfter(&c.Ctx.Response.Header, res.RetryAfterSeconds)
	}
	c.ok(res)
}

func (s *Server) feedback(c *Call, who trafficCaller, in *admission.FeedbackFields) {
	res, err := s.mods.admission.Feedback(c.cat, leaseCaller(who), in)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}
