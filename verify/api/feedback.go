package api

import (
	"context"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify"
)

// Detection feedback's transport (spec 4.12; the rules are
// verify.Feedback): decode, authenticate the site or mobile secret, call,
// encode.

func (a *verifyAPI) feedbackRoutes() []kernel.Route {
	errs := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrUnauthorized, errUnknownAssessment, kernel.ErrConflict, kernel.ErrUnavailable}
	return []kernel.Route{
		{Method: "POST", Path: "/detection/feedback", ID: "detectionFeedback", Tag: "Detection feedback", Auth: []kernel.Auth{kernel.AuthSiteSecret},
			Summary: "Label a site assessment (legitimate, abuse, approved_automation, false_positive, false_negative) with bounded reason codes; exact retries within 5 minutes are de-duplicated.",
			Body:    &verify.FeedbackInput{}, Result: &verify.FeedbackView{}, Errors: errs, Handle: a.siteFeedback},
		{Method: "POST", Path: "/mobile/detection/feedback", ID: "mobileDetectionFeedback", Tag: "Detection feedback", Auth: []kernel.Auth{kernel.AuthMobile},
			Summary: "Label a mobile assessment; Authorization: Bearer <mobile secret> plus the registered platform and app_id (mismatch: 403 invalid-app-identity).",
			Body:    &verify.MobileFeedbackInput{}, Result: &verify.FeedbackView{}, Errors: append(errs, kernel.ErrInvalidAppIdentity), Handle: a.mobileFeedback},
	}
}

func (a *verifyAPI) siteFeedback(c *kernel.Call) {
	var in verify.FeedbackInput
	if !c.Decode(&in) {
		return
	}
	site := siteFromSecret(c, in.Secret)
	if site == nil {
		return
	}
	a.labelAssessment(c, verify.Labeller{WorkspaceID: site.WorkspaceID, SiteID: site.ID},
		verify.FeedbackRequest{AssessmentID: in.AssessmentID, Label: in.Label, ReasonCodes: in.ReasonCodes})
}

func (a *verifyAPI) mobileFeedback(c *kernel.Call) {
	var in verify.MobileFeedbackInput
	if !c.Decode(&in) {
		return
	}
	tok := c.Bearer()
	app := (*catalog.MobileApp)(nil)
	if tok != "" && len(tok) <= 128 {
		app = c.Catalog().AppBySecret(tok)
	}
	if app == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd-mobile"`)
		c.Fail(kernel.ErrUnauthorized, "a valid mobile server secret is required (Authorization: Bearer)")
		return
	}
	if !c.AdmitCredential(app.ID, app.WorkspaceID) {
		return
	}
	if in.Platform != app.Platform || in.AppID != app.AppID {
		c.Fail(kernel.ErrInvalidAppIdentity, "platform and app_id do not match the mobile secret's registration")
		return
	}
	a.labelAssessment(c, verify.Labeller{WorkspaceID: app.WorkspaceID, MobileAppID: app.ID},
		verify.FeedbackRequest{AssessmentID: in.AssessmentID, Label: in.Label, ReasonCodes: in.ReasonCodes})
}

func (a *verifyAPI) labelAssessment(c *kernel.Call, l verify.Labeller, in verify.FeedbackRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	view, err := a.m.Feedback(ctx, l, in)
	if err != nil {
		c.FailErr(err)
		return
	}
	if view.Deduplicated {
		c.Ctx.Response.Header.Set("X-Service-Deduplicated", "true")
	}
	c.OK(view)
}
