package http

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
)

// Detection feedback (spec 4.12): the customer labels what an assessment
// turned out to be. A record is durable (a catalog command through Raft)
// and feeds the site's tally, which the challenge and score rules read
// (see package humanscore): confirmed false positives lower difficulty and
// relieve the penalties of the reasons that assessment carried; abuse and
// false negatives raise difficulty.
//
// Feedback is taken only for a known, unexpired assessment of the
// caller's own site (or, for a mobile app, workspace), once per
// assessment: a redemption marker of the assessment holds the label for
// the assessment's lifetime. Exact retries within five minutes are
// de-duplicated (the first answer comes back); another label for the same
// assessment is a conflict. Raft holds only the per-site tally, bounded by
// the number of sites, never a record per call.

// feedbackDedupWindow is spec section 8's de-duplication window.
const feedbackDedupWindow = 5 * time.Minute

// detectionReasons are the bounded reason codes a report may carry.
var detectionReasons = []string{
	"account-takeover", "credential-stuffing", "fake-account", "payment-fraud", "spam", "scraping",
	"inventory-hoarding", "promo-abuse", "customer-complaint", "support-verified", "known-good-automation",
	"manual-review", "other",
}

const feedbackReasonEnum = "account-takeover|credential-stuffing|fake-account|payment-fraud|spam|scraping|inventory-hoarding|promo-abuse|customer-complaint|support-verified|known-good-automation|manual-review|other"

// FeedbackInput reports the outcome of one site assessment.
type FeedbackInput struct {
	Secret       string   `json:"secret" doc:"The site's private secret (or Authorization: Bearer)."`
	AssessmentID string   `json:"assessment_id" required:"true" format:"uuid" doc:"From the siteverify answer."`
	Label        string   `json:"label" required:"true" enum:"legitimate|abuse|approved_automation|false_positive|false_negative"`
	ReasonCodes  []string `json:"reason_codes" enum:"account-takeover|credential-stuffing|fake-account|payment-fraud|spam|scraping|inventory-hoarding|promo-abuse|customer-complaint|support-verified|known-good-automation|manual-review|other" doc:"0 to 5 distinct codes."`
}

// MobileFeedbackInput reports the outcome of one mobile assessment.
type MobileFeedbackInput struct {
	Platform     string   `json:"platform" required:"true" enum:"android|ios" doc:"Must match the mobile secret's registration."`
	AppID        string   `json:"app_id" required:"true" doc:"Must match the mobile secret's registration."`
	AssessmentID string   `json:"assessment_id" required:"true" format:"uuid"`
	Label        string   `json:"label" required:"true" enum:"legitimate|abuse|approved_automation|false_positive|false_negative"`
	ReasonCodes  []string `json:"reason_codes" enum:"account-takeover|credential-stuffing|fake-account|payment-fraud|spam|scraping|inventory-hoarding|promo-abuse|customer-complaint|support-verified|known-good-automation|manual-review|other" doc:"0 to 5 distinct codes."`
}

// FeedbackView is the answer; an exact retry within five minutes gets the
// same answer (and the header X-Service-Deduplicated: true).
type FeedbackView struct {
	FeedbackID      string    `json:"feedback_id" required:"true" format:"uuid"`
	AssessmentID    string    `json:"assessment_id" required:"true"`
	Label           string    `json:"label" required:"true"`
	ReasonCodes     []string  `json:"reason_codes" required:"true"`
	AssessmentKnown bool      `json:"assessment_known" required:"true" doc:"Whether the assessment was still on record; only known ones teach the score which signals were false positives."`
	RecordedAt      time.Time `json:"recorded_at" required:"true"`
}

func (s *Server) feedbackRoutes() []Route {
	errs := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnauthorized, ErrUnknownAssessment, ErrConflict, ErrUnavailable}
	return []Route{
		{Method: "POST", Path: "/detection/feedback", ID: "detectionFeedback", Tag: "Detection feedback", Auth: []Auth{AuthSiteSecret},
			Summary: "Label a site assessment (legitimate, abuse, approved_automation, false_positive, false_negative) with bounded reason codes; exact retries within 5 minutes are de-duplicated.",
			Body:    &FeedbackInput{}, Result: &FeedbackView{}, Errors: errs, Handle: s.siteFeedback},
		{Method: "POST", Path: "/mobile/detection/feedback", ID: "mobileDetectionFeedback", Tag: "Detection feedback", Auth: []Auth{AuthMobile},
			Summary: "Label a mobile assessment; Authorization: Bearer <mobile secret> plus the registered platform and app_id (mismatch: 403 invalid-app-identity).",
			Body:    &MobileFeedbackInput{}, Result: &FeedbackView{}, Errors: append(errs, ErrInvalidAppIdentity), Handle: s.mobileFeedback},
	}
}

func validateFeedback(assessmentID, label string, reasons []string) error {
	if _, err := uuid.Parse(assessmentID); err != nil || len(assessmentID) != 36 {
		return invalid("assessment_id", "a UUID")
	}
	known := false
	for _, l := range catalog.FeedbackLabels {
		known = known || l == label
	}
	if !known {
		return invalid("label", "one of legitimate, abuse, approved_automation, false_positive, false_negative")
	}
	if len(reasons) > 5 {
		return invalid("reason_codes", "at most 5")
	}
	for i, r := range reasons {
		ok := false
		for _, k := range detectionReasons {
			ok = ok || k == r
		}
		if !ok {
			return invalid("reason_codes", "unknown reason code "+r)
		}
		for _, prev := range reasons[:i] {
			if prev == r {
				return invalid("reason_codes", "duplicate reason code "+r)
			}
		}
	}
	return nil
}

func (s *Server) siteFeedback(c *Call) {
	var in FeedbackInput
	if !c.decode(&in) {
		return
	}
	site := c.siteFromSecret(in.Secret)
	if site == nil {
		return
	}
	if err := validateFeedback(in.AssessmentID, in.Label, in.ReasonCodes); err != nil {
		c.failErr(err)
		return
	}
	rec := catalog.FeedbackRecord{WorkspaceID: site.WorkspaceID, SiteID: site.ID, AssessmentID: in.AssessmentID,
		Label: in.Label, ReasonCodes: in.ReasonCodes}
	a, ok := c.knownAssessment(in.AssessmentID, func(v *actors.Verification) bool { return v.SiteID == site.ID })
	if !ok {
		return
	}
	s.recordFeedback(c, site.ID, rec, a)
}

// knownAssessment finds a verification the caller may label, answering
// unknown-assessment itself otherwise: feedback is only ever taken for a
// known, unexpired assessment of the caller's own site or workspace, so
// no caller can make the service store anything for ids it made up.
func (c *Call) knownAssessment(id string, mine func(*actors.Verification) bool) (*actors.Verification, bool) {
	get, err := c.getVerification(id)
	if err != nil {
		c.failErr(err)
		return nil, false
	}
	if !get.Found || !mine(&get.A) {
		c.fail(ErrUnknownAssessment, "no unexpired verification of yours has this assessment_id")
		return nil, false
	}
	return &get.A, true
}

func (s *Server) mobileFeedback(c *Call) {
	var in MobileFeedbackInput
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
	if err := validateFeedback(in.AssessmentID, in.Label, in.ReasonCodes); err != nil {
		c.failErr(err)
		return
	}
	rec := catalog.FeedbackRecord{WorkspaceID: app.WorkspaceID, MobileAppID: app.ID, AssessmentID: in.AssessmentID,
		Label: in.Label, ReasonCodes: in.ReasonCodes}
	a, ok := c.knownAssessment(in.AssessmentID, func(v *actors.Verification) bool { return v.WorkspaceID == app.WorkspaceID })
	if !ok {
		return
	}
	s.recordFeedback(c, app.ID, rec, a)
}

// recordFeedback takes one label per assessment and adds it to the tally
// of owner (site or app id). The label is held by a redemption marker of
// the assessment, kept as long as the assessment: an exact retry within
// five minutes gets the first answer back (X-Service-Deduplicated), and
// a different label for an assessment already labelled is a conflict.
// Only the bounded tally (one per site or app) is written through Raft,
// never a record per call, so no caller grows replicated state.
func (s *Server) recordFeedback(c *Call, owner string, rec catalog.FeedbackRecord, a *actors.Verification) {
	if rec.ReasonCodes == nil {
		rec.ReasonCodes = []string{}
	}
	h := sha256.New()
	for _, part := range append([]string{owner, rec.AssessmentID, rec.Label}, rec.ReasonCodes...) {
		h.Write([]byte{byte(len(part) >> 8), byte(len(part))})
		h.Write([]byte(part))
	}
	now := c.Now()
	expires := max(a.Expires, now.Add(feedbackDedupWindow).UnixNano())
	id := "fb/" + rec.AssessmentID
	op := &actors.Redeem{ID: id, Key: hex.EncodeToString(h.Sum(nil)), Expires: expires,
		Outcome: actors.Outcome{Ref: uuid.NewString(), At: now.UnixNano()}}
	if err := c.ask(id, op); err != nil {
		c.failErr(err)
		return
	}
	if !op.First && !op.Replayed {
		c.fail(ErrConflict, "this assessment already has feedback with another label or reasons")
		return
	}
	rec.ID, rec.RecordedAt = op.Outcome.Ref, time.Unix(0, op.Outcome.At).UTC()
	rec.AssessmentKnown, rec.SignalReasons = true, a.Reasons
	view := &FeedbackView{FeedbackID: rec.ID, AssessmentID: rec.AssessmentID, Label: rec.Label, ReasonCodes: rec.ReasonCodes,
		AssessmentKnown: true, RecordedAt: rec.RecordedAt}
	if op.Replayed && now.Sub(rec.RecordedAt) > feedbackDedupWindow {
		c.fail(ErrConflict, "this assessment was labelled more than five minutes ago; feedback is taken once")
		return
	}
	if op.Replayed {
		// An exact retry: apply again (the tally counts a record id once),
		// so a retry after a lost or failed first write completes it.
		c.Ctx.Response.Header.Set("X-Service-Deduplicated", "true")
	}
	if _, ok := c.apply(&catalog.RecordFeedback{Record: rec}); !ok {
		return
	}
	c.ok(view)
}
