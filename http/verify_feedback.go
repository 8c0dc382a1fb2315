package http

import (
	"context"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/verify"
)

// Detection feedback's transport (spec 4.12; the rules are
// verify.Feedback): decode, authenticate the site or mobile secret, call,
// encode.

func (s *Server) feedbackRoutes() []Route {
	errs := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnauthorized, ErrUnknownAssessment, ErrConflict, ErrUnavailable}
	return []Route{
		{Method: "POST", Path: "/detection/feedback", ID: "detectionFeedback", Tag: "Detection feedback", Auth: []Auth{AuthSiteSecret},
			Summary: "Label a site assessment (legitimate, abuse, approved_automation, false_positive, false_negative) with bounded reason codes; exact retries within 5 minutes are de-duplicated.",
			Body:    &verify.FeedbackInput{}, Result: &verify.FeedbackView{}, Errors: errs, Handle: s.siteFeedback},
		{Method: "POST", Path: "/mobile/detection/feedback", ID: "mobileDetectionFeedback", Tag: "Detection feedback", Auth: []Auth{AuthMobile},
			Summary: "Label a mobile assessment; Authorization: Bearer <mobile secret> plus the registered platform and app_id (mismatch: 403 invalid-app-identity).",
			Body:    &verify.MobileFeedbackInput{}, Result: &verify.FeedbackView{}, Errors: append(errs, ErrInvalidAppIdentity), Handle: s.mobileFeedback},
	}
}

func (s *Server) siteFeedback(c *Call) {
	var in verify.FeedbackInput
	if !c.decode(&in) {
		return
	}
	site := c.siteFromSecret(in.Secret)
	if site == nil {
		return
	}
	s.labelAssessment(c, verify.Labeller{WorkspaceID: site.WorkspaceID, SiteID: site.ID},
		verify.FeedbackRequest{AssessmentID: in.AssessmentID, Label: in.Label, ReasonCodes: in.ReasonCodes})
}

func (s *Server) mobileFeedback(c *Call) {
	var in verify.MobileFeedbackInput
	if !c.decode(&in) {
		return
	}
	tok := c.bearer()
	app := (*catalog.MobileApp)(nil)
	if tok != "" && len(tok) <= 128 {
		app = c.cat.AppBySecret(tok)
	}
	if app == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd-mobile"`)
		c.fail(ErrUnauthorized, "a valid mobile server secret is required (Authorization: Bearer)")
		return
	}
	if !c.admitCredential(app.ID, app.WorkspaceID) {
		return
	}
	if in.Platform != app.Platform || in.AppID != app.AppID {
		c.fail(ErrInvalidAppIdentity, "platform and app_id do not match the mobile secret's registration")
		return
	}
	s.labelAssessment(c, verify.Labeller{WorkspaceID: app.WorkspaceID, MobileAppID: app.ID},
		verify.FeedbackRequest{AssessmentID: in.AssessmentID, Label: in.Label, ReasonCodes: in.ReasonCodes})
}

func (s *Server) labelAssessment(c *Call, l verify.Labeller, in verify.FeedbackRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	view, err := s.mods.verify.Feedback(ctx, l, in)
	if err != nil {
		c.failErr(err)
		return
	}
	if view.Deduplicated {
		c.Ctx.Response.Header.Set("X-Service-Deduplicated", "true")
	}
	c.ok(view)
}
