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
// Exact retries within five minutes are de-duplicated: a marker actor
// keyed by a hash of the request remembers the first record's id and
// time, so a retry gets the same answer and no second record; the catalog
// command is idempotent by record id, so a retry after a lost or failed
// first write completes it rather than duplicating it.

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
	errs := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnauthorized, ErrUnknownAssessment, ErrUnavailable}
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
	get, err := c.getVerification(in.AssessmentID)
	if err != nil {
		c.failErr(err)
		return
	}
	if get.Found {
		if get.A.SiteID != site.ID {
			c.fail(ErrUnknownAssessment, "that assessment belongs to no verification of this site")
			return
		}
		rec.AssessmentKnown, rec.SignalReasons = true, get.A.Reasons
	}
	s.recordFeedback(c, site.ID, rec)
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
	s.recordFeedback(c, app.ID, rec)
}

// recordFeedback de-duplicates and stores rec for owner (site or app id).
func (s *Server) recordFeedback(c *Call, owner string, rec catalog.FeedbackRecord) {
	if rec.ReasonCodes == nil {
		rec.ReasonCodes = []string{}
	}
	h := sha256.New()
	for _, part := range append([]string{owner, rec.AssessmentID, rec.Label}, rec.ReasonCodes...) {
		h.Write([]byte{byte(len(part) >> 8), byte(len(part))})
		h.Write([]byte(part))
	}
	key := "fb/" + hex.EncodeToString(h.Sum(nil))
	now := c.Now()
	op := &actors.Redeem{ID: key, Key: key, Expires: now.Add(feedbackDedupWindow).UnixNano(),
		Outcome: actors.Outcome{Ref: uuid.NewString(), At: now.UnixNano()}}
	if err := c.ask(key, op); err != nil {
		c.failErr(err)
		return
	}
	rec.ID, rec.RecordedAt = op.Outcome.Ref, time.Unix(0, op.Outcome.At).UTC()
	if op.Replayed {
		c.Ctx.Response.Header.Set("X-Service-Deduplicated", "true")
	}
	v, ok := c.apply(&catalog.RecordFeedback{Record: rec})
	if !ok {
		return
	}
	r := v.(*catalog.FeedbackRecord)
	c.ok(&FeedbackView{FeedbackID: r.ID, AssessmentID: r.AssessmentID, Label: r.Label, ReasonCodes: r.ReasonCodes,
		AssessmentKnown: r.AssessmentKnown, RecordedAt: r.RecordedAt})
}
