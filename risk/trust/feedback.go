package trust

import (
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/errcode"
)

// Feedback labels and reason codes (two levels, as reCAPTCHA's
// annotations): a label, and why the customer knows.
var (
	FeedbackLabels  = []string{"legitimate", "fraudulent"}
	FeedbackReasons = []string{"passed_step_up", "failed_step_up", "customer_confirmed", "account_takeover", "chargeback",
		"false_positive", "other"}
)

// Feedback errors.
var (
	ErrInvalidFeedback = errcode.New("invalid-trust-feedback", errcode.Invalid, "decision_id must be a UUID, label legitimate or fraudulent, reason_code one of the documented reasons")
	ErrUnknownDecision = errcode.New("unknown-decision", errcode.NotFound, "no unexpired decision of this workspace has this decision_id")
)

// FeedbackDedup is the window in which an exact retry answers with the
// first feedback's id (spec 8).
const FeedbackDedup = 5 * time.Minute

// labelTTL is how long a label changes later decisions of the subject.
const labelTTL = 30 * 24 * time.Hour

// FeedbackRequest is POST /trust/feedback after decoding.
type FeedbackRequest struct {
	DecisionID string
	Label      string
	ReasonCode string
}

// FeedbackResult names the stored feedback.
type FeedbackResult struct {
	FeedbackID string
	Duplicate  bool
}

// Feedback labels a decision of the caller's workspace. The label is kept
// on the decision's record in actor state (bounded by its TTL and the
// actors' room), so nothing grows the replicated catalog; a fraudulent
// label marks the subject (shared with API Protection) and, for a failed
// step-up, counts a failed attempt.
func (m *Module) Feedback(who Caller, req FeedbackRequest) (FeedbackResult, error) {
	if uuid.Validate(req.DecisionID) != nil || !slices.Contains(FeedbackLabels, req.Label) || !slices.Contains(FeedbackReasons, req.ReasonCode) {
		return FeedbackResult{}, ErrInvalidFeedback
	}
	ws := who.Workspace
	op := &actors.AnnotateAssessment{ID: req.DecisionID, WorkspaceID: ws.ID, FeedbackID: uuid.NewString(), Label: req.Label,
		Reason: req.ReasonCode, DedupNs: int64(FeedbackDedup)}
	if err := m.ask.Ask(decisionRecordKey(req.DecisionID), op); err != nil {
		return FeedbackResult{}, err
	}
	if !op.Found {
		return FeedbackResult{}, ErrUnknownDecision
	}
	if op.Duplicate {
		return FeedbackResult{FeedbackID: op.FeedbackID, Duplicate: true}, nil
	}
	if op.SubjectKey != "" {
		label := "legitimate"
		if req.Label == "fraudulent" {
			label = "abuse"
		}
		lop := &actors.LabelSubject{Key: op.SubjectKey, Label: label, Expires: m.now().Add(labelTTL).UnixNano()}
		if err := m.ask.Ask(lop.Key, lop); err != nil {
			return FeedbackResult{}, err
		}
		if req.Label == "fraudulent" && req.ReasonCode == "failed_step_up" {
			var b [16]byte
			if raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(op.SubjectKey, actors.SpaceReputation+ws.ID+"/")); err == nil {
				copy(b[:], raw)
			}
			k := failuresKeyBinding(ws.ID, b)
			_ = m.ask.Ask(k, &actors.CountHit{Key: k, WindowNs: int64(SignalWindow)})
		}
	}
	return FeedbackResult{FeedbackID: op.FeedbackID}, nil
}

// Errors lists the module's domain errors, for the contract.
var Errors = []*errcode.Code{ErrInvalidRequest, ErrInvalidRule, ErrInvalidPolicy, ErrPolicyMissing, ErrUnknownAssessment.Code,
	ErrAssessmentUsed, ErrContextMismatch, ErrNoReceiptKey, ErrInvalidFeedback, ErrUnknownDecision}
