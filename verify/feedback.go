package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// Detection feedback (spec 4.12): the customer labels what an assessment
// turned out to be. A label feeds the site's tally (a catalog command
// through Raft), which the challenge and score rules read (see package
// verify/score): confirmed false positives lower difficulty and relieve the
// penalties of the reasons that assessment carried; abuse and false
// negatives raise difficulty.
//
// Feedback is taken only for a known, unexpired assessment of the
// caller's own site (or, for a mobile app, workspace), once per
// assessment: a redemption marker of the assessment holds the label for
// the assessment's lifetime. Exact retries within five minutes are
// de-duplicated (the first answer comes back); another label for the same
// assessment is a conflict. Raft holds only the per-site tally, bounded by
// the number of sites, never a record per call.

// Store applies a catalog command through Raft. The node's store
// implements it.
type Store interface {
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// feedbackDedupWindow is spec section 8's de-duplication window.
const feedbackDedupWindow = 5 * time.Minute

// detectionReasons are the bounded reason codes a report may carry.
var detectionReasons = []string{
	"account-takeover", "credential-stuffing", "fake-account", "payment-fraud", "spam", "scraping",
	"inventory-hoarding", "promo-abuse", "customer-complaint", "support-verified", "known-good-automation",
	"manual-review", "other",
}

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
	// Deduplicated is an exact retry answered with the first answer.
	Deduplicated bool `json:"-"`
}

// Labeller is who labels: a site (by its secret) or a mobile app (by its
// secret and registered identity), as the transport authenticated it.
type Labeller struct {
	WorkspaceID string
	SiteID      string // a site's label: only this site's assessments
	MobileAppID string // a mobile app's label: any assessment of the workspace
}

func (l Labeller) owner() string {
	if l.SiteID != "" {
		return l.SiteID
	}
	return l.MobileAppID
}

func (l Labeller) owns(v *actors.Verification) bool {
	if l.SiteID != "" {
		return v.SiteID == l.SiteID
	}
	return v.WorkspaceID == l.WorkspaceID
}

// FeedbackRequest is one label.
type FeedbackRequest struct {
	AssessmentID string
	Label        string
	ReasonCodes  []string
}

func validateFeedback(in *FeedbackRequest) error {
	if _, err := uuid.Parse(in.AssessmentID); err != nil || len(in.AssessmentID) != 36 {
		return errcode.Field("assessment_id", "a UUID")
	}
	known := false
	for _, l := range catalog.FeedbackLabels {
		known = known || l == in.Label
	}
	if !known {
		return errcode.Field("label", "one of legitimate, abuse, approved_automation, false_positive, false_negative")
	}
	if len(in.ReasonCodes) > 5 {
		return errcode.Field("reason_codes", "at most 5")
	}
	for i, r := range in.ReasonCodes {
		ok := false
		for _, k := range detectionReasons {
			ok = ok || k == r
		}
		if !ok {
			return errcode.Field("reason_codes", "unknown reason code "+r)
		}
		for _, prev := range in.ReasonCodes[:i] {
			if prev == r {
				return errcode.Field("reason_codes", "duplicate reason code "+r)
			}
		}
	}
	return nil
}

// Feedback takes one label per assessment and adds it to the tally of
// the labeller's site or app. The label is held by a redemption marker of
// the assessment, kept as long as the assessment: an exact retry within
// five minutes gets the first answer back (Deduplicated), and a different
// label for an assessment already labelled is a conflict. Only the bounded
// tally (one per site or app) is written through Raft, never a record per
// call, so no caller grows replicated state. Feedback is only ever taken
// for a known, unexpired assessment of the labeller's own site or
// workspace, so no caller can make the service store anything for ids it
// made up.
func (m *Module) Feedback(ctx context.Context, l Labeller, in FeedbackRequest) (*FeedbackView, error) {
	if err := validateFeedback(&in); err != nil {
		return nil, err
	}
	get, err := m.getVerification(in.AssessmentID)
	if err != nil {
		return nil, err
	}
	if !get.Found || !l.owns(&get.A) {
		return nil, ErrUnknownAssessment.With("no unexpired verification of yours has this assessment_id")
	}
	a := &get.A
	rec := catalog.FeedbackRecord{WorkspaceID: l.WorkspaceID, SiteID: l.SiteID, MobileAppID: l.MobileAppID,
		AssessmentID: in.AssessmentID, Label: in.Label, ReasonCodes: in.ReasonCodes}
	if rec.ReasonCodes == nil {
		rec.ReasonCodes = []string{}
	}
	h := sha256.New()
	for _, part := range append([]string{l.owner(), rec.AssessmentID, rec.Label}, rec.ReasonCodes...) {
		h.Write([]byte{byte(len(part) >> 8), byte(len(part))})
		h.Write([]byte(part))
	}
	now := m.now()
	expires := max(a.Expires, now.Add(feedbackDedupWindow).UnixNano())
	id := actors.SpaceFeedback + rec.AssessmentID
	op := &actors.Redeem{ID: id, Key: hex.EncodeToString(h.Sum(nil)), Expires: expires,
		Outcome: actors.Outcome{Ref: uuid.NewString(), At: now.UnixNano()}}
	if err := m.ask.Ask(id, op); err != nil {
		return nil, err
	}
	if !op.First && !op.Replayed {
		return nil, fmt.Errorf("this assessment already has feedback with another label or reasons: %w", catalog.ErrConflict)
	}
	rec.ID, rec.RecordedAt = op.Outcome.Ref, time.Unix(0, op.Outcome.At).UTC()
	rec.AssessmentKnown, rec.SignalReasons = true, a.Reasons
	if op.Replayed && now.Sub(rec.RecordedAt) > feedbackDedupWindow {
		return nil, fmt.Errorf("this assessment was labelled more than five minutes ago; feedback is taken once: %w", catalog.ErrConflict)
	}
	// An exact retry applies again (the tally counts a record id once),
	// so a retry after a lost or failed first write completes it.
	if _, err := m.store.Apply(ctx, &catalog.RecordFeedback{Record: rec}); err != nil {
		return nil, err
	}
	return &FeedbackView{FeedbackID: rec.ID, AssessmentID: rec.AssessmentID, Label: rec.Label, ReasonCodes: rec.ReasonCodes,
		AssessmentKnown: true, RecordedAt: rec.RecordedAt, Deduplicated: op.Replayed}, nil
}
