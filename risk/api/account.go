package api

import (
	"context"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/risk/account"
)

// Account Defence (spec 2.3, 2.5, 3.6, 4.3): transport only. Scoring,
// feedback, trusted devices and the signals the Trust API reads live in
// risk/account (see its DESIGN.md).

// AccountAssessInput is the body of POST /account/assess.
type AccountAssessInput struct {
	Secret              string `json:"secret,omitempty" doc:"Legacy: the site's private secret, when no scoped credential (scope site.verify) is sent as Authorization: Bearer."`
	SubjectID           string `json:"subject_id" required:"true" doc:"Your stable account identifier (1 to 256 bytes). Kept only as a keyed hash."`
	DeviceID            string `json:"device_id,omitempty" doc:"Your device identifier (cookie, SDK id), 1 to 256 bytes. Kept only as a keyed hash. Without it, device signals are not used and device_missing is scored."`
	EventType           string `json:"event_type" required:"true" enum:"login|registration|password_reset|profile_update|transaction|challenge|custom" doc:"What happened. Every event type takes every outcome. Failures of login, challenge (a second factor) and password_reset count as failed authentications; successes of login, registration and challenge make the device known for the subject."`
	Outcome             string `json:"outcome" required:"true" enum:"attempted|succeeded|failed" doc:"attempted: assessed before the outcome is known; succeeded; failed."`
	AccountAgeDays      *int64 `json:"account_age_days,omitempty" doc:"Hint, 0 to 36500: the account's age. Under a day raises risk (new_account); an older account never lowers it."`
	CompromisedPassword bool   `json:"compromised_password,omitempty" doc:"Hint: the password was found in a breach corpus. true raises risk; false never lowers it."`
}

// AccountFeedbackInput is the body of POST /account/feedback.
type AccountFeedbackInput struct {
	Secret       string `json:"secret,omitempty" doc:"Legacy: the site's private secret, when no scoped credential is sent."`
	AssessmentID string `json:"assessment_id" required:"true" format:"uuid" doc:"An assessment_id of POST /account/assess of the same workspace, at most 24 hours old."`
	Label        string `json:"label" required:"true" enum:"legitimate|fraudulent" doc:"First level of the taxonomy. The label is kept on the assessment's subject and device for 30 days and changes their later assessments."`
	ReasonCode   string `json:"reason_code" required:"true" enum:"passed_two_factor|correct_password|customer_confirmed|support_verified|other|failed_two_factor|incorrect_password|account_takeover|credential_stuffing|fake_account|chargeback|chargeback_fraud|payment_heuristics|customer_reported" doc:"Second level, which must belong to the label. legitimate: passed_two_factor, correct_password, customer_confirmed, support_verified, other. fraudulent: failed_two_factor, incorrect_password, account_takeover, credential_stuffing, fake_account, chargeback, chargeback_fraud, payment_heuristics, customer_reported, other."`
}

// AccountTrustedDeviceInput is the body of POST /account/trusted-device.
type AccountTrustedDeviceInput struct {
	Secret    string `json:"secret,omitempty" doc:"Legacy: the site's private secret, when no scoped credential is sent."`
	Action    string `json:"action" required:"true" enum:"trust|revoke" doc:"trust (again: refreshes the 180-day lifetime and the label) or revoke (idempotent)."`
	SubjectID string `json:"subject_id" required:"true" doc:"Kept only as a keyed hash."`
	DeviceID  string `json:"device_id" required:"true" doc:"Kept only as a keyed hash."`
	Label     string `json:"label,omitempty" doc:"Your name for the device, at most 64 bytes; kept as given with the trust, so put no personal data in it."`
}

type accountAPI struct{ m *account.Module }

func (a accountAPI) routes() []kernel.Route {
	errs := kernel.WithModuleCodes([]kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrUnavailable}, account.Errors)
	auth := []kernel.Auth{kernel.AuthCredential, kernel.AuthSiteSecret}
	return []kernel.Route{
		{Method: "POST", Path: "/account/assess", ID: "accountAssess", Tag: "Account Defence",
			Summary: "Score an account event from what the service observed of the subject and the device; caller hints only raise risk.",
			Auth:    auth, Body: &AccountAssessInput{}, Result: &account.Assessment{}, Errors: errs, Handle: siteVerifyOp(a.assess)},
		{Method: "POST", Path: "/account/feedback", ID: "accountFeedback", Tag: "Account Defence",
			Summary: "Label an assessment legitimate or fraudulent; exact retries within 5 minutes are de-duplicated.",
			Auth:    auth, Body: &AccountFeedbackInput{}, Result: &account.Feedback{}, Errors: errs, Handle: siteVerifyOp(a.feedback)},
		{Method: "POST", Path: "/account/trusted-device", ID: "accountTrustedDevice", Tag: "Account Defence",
			Summary: "Trust or revoke a device for a subject; a trusted device carries no new-device risk.",
			Auth:    auth, Body: &AccountTrustedDeviceInput{}, Result: &account.TrustResult{}, Errors: append(errs, kernel.ErrNotFound),
			Handle: siteVerifyOp(a.trustedDevice)},
	}
}

// siteVerifyOp is the handler of an Account Defence or API Protection
// operation on body In: decode, authenticate scope site.verify (a scoped
// credential, or the site secret in the body), run op, answer.
func siteVerifyOp[In any, P interface {
	*In
	kernel.SiteSecretBody
}, Out any](op func(c *kernel.Call, ws *catalog.Workspace, appID string, in *In) (Out, error)) func(*kernel.Call) {
	return func(c *kernel.Call) {
		in := P(new(In))
		if !c.Decode(in) {
			return
		}
		ws, appID, ok := c.AuthSiteVerify(in.SiteSecret())
		if !ok {
			return
		}
		res, err := op(c, ws, appID, (*In)(in))
		if err != nil {
			c.FailErr(err)
			return
		}
		c.OK(res)
	}
}

func (in *AccountAssessInput) SiteSecret() string        { return in.Secret }
func (in *AccountFeedbackInput) SiteSecret() string      { return in.Secret }
func (in *AccountTrustedDeviceInput) SiteSecret() string { return in.Secret }

func (a accountAPI) assess(_ *kernel.Call, ws *catalog.Workspace, appID string, in *AccountAssessInput) (*account.Assessment, error) {
	res, err := a.m.Assess(context.Background(), account.Caller{Workspace: ws, AppID: appID}, account.AssessRequest{SubjectID: in.SubjectID,
		DeviceID: in.DeviceID, EventType: in.EventType, Outcome: in.Outcome, AccountAgeDays: in.AccountAgeDays,
		CompromisedPassword: in.CompromisedPassword})
	return &res, err
}

func (a accountAPI) feedback(_ *kernel.Call, ws *catalog.Workspace, appID string, in *AccountFeedbackInput) (*account.Feedback, error) {
	res, err := a.m.Feedback(context.Background(), account.Caller{Workspace: ws, AppID: appID}, account.FeedbackRequest{AssessmentID: in.AssessmentID,
		Label: in.Label, ReasonCode: in.ReasonCode})
	return &res, err
}

func (a accountAPI) trustedDevice(_ *kernel.Call, ws *catalog.Workspace, appID string, in *AccountTrustedDeviceInput) (*account.TrustResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.m.TrustDevice(ctx, account.Caller{Workspace: ws, AppID: appID}, account.TrustRequest{Action: in.Action, SubjectID: in.SubjectID,
		DeviceID: in.DeviceID, Label: in.Label})
	return &res, err
}
