package http

import "github.com/trustd/trustd/risk/apiprotection"

// API Protection (spec 2.4, 2.5, 4.5): transport only. Scoring, velocity,
// idempotency and feedback are risk/apiprotection's.

// APIAssessInput is the body of POST /api-protection/assess (spec 4.5).
type APIAssessInput struct {
	Secret string `json:"secret,omitempty" doc:"Site secret, when no scoped credential is sent as Authorization: Bearer."`
	apiprotection.AssessRequest
}

// APIFeedbackInput is the body of POST /api-protection/feedback.
type APIFeedbackInput struct {
	Secret string `json:"secret,omitempty"`
	apiprotection.FeedbackRequest
}

func (s *Server) apiProtectionAssess(c *Call) {
	var in APIAssessInput
	if !c.decode(&in) {
		return
	}
	ws, appID, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	res, err := s.mods.ap.Assess(c.cat, apiprotection.Caller{Workspace: ws, AppID: appID}, &in.AssessRequest)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}

func (s *Server) apiProtectionFeedback(c *Call) {
	var in APIFeedbackInput
	if !c.decode(&in) {
		return
	}
	ws, appID, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	res, err := s.mods.ap.Feedback(apiprotection.Caller{Workspace: ws, AppID: appID}, &in.FeedbackRequest)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}
