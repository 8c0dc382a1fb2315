package catalog

import (
	"fmt"
	"slices"
	"time"
)

// Detection feedback (spec 4.12): a customer's verdict on one assessment,
// durable in Raft. Each record also updates its site's (or app's) tally,
// which the challenge and score rules read: confirmed false positives
// relax difficulty and the penalties of the reasons they carried; abuse
// and false negatives harden difficulty.

// Feedback labels.
const (
	LabelLegitimate         = "legitimate"
	LabelAbuse              = "abuse"
	LabelApprovedAutomation = "approved_automation"
	LabelFalsePositive      = "false_positive"
	LabelFalseNegative      = "false_negative"
)

// FeedbackLabels lists the labels, in the contract's order.
var FeedbackLabels = []string{LabelLegitimate, LabelAbuse, LabelApprovedAutomation, LabelFalsePositive, LabelFalseNegative}

// FeedbackRecord is one detection feedback report.
type FeedbackRecord struct {
	ID           string `json:"feedback_id"`
	WorkspaceID  string `json:"workspace_id"`
	SiteID       string `json:"site_id,omitempty"`
	MobileAppID  string `json:"mobile_app_id,omitempty"`
	AssessmentID string `json:"assessment_id"`
	Label        string `json:"label"`
	// ReasonCodes are the caller's, from a closed list.
	ReasonCodes []string `json:"reason_codes"`
	// SignalReasons is the verify/score reason set of the assessment, when
	// the assessment was still known at report time.
	SignalReasons   uint32    `json:"signal_reasons"`
	AssessmentKnown bool      `json:"assessment_known"`
	RecordedAt      time.Time `json:"recorded_at"`
}

// FeedbackTally sums the feedback of one site or app.
type FeedbackTally struct {
	WorkspaceID        string `json:"workspace_id"`
	Legitimate         int    `json:"legitimate"`
	Abuse              int    `json:"abuse"`
	ApprovedAutomation int    `json:"approved_automation"`
	FalsePositives     int    `json:"false_positives"`
	FalseNegatives     int    `json:"false_negatives"`
	// ReasonFalsePositives counts false positives per verify/score reason
	// bit that the assessment carried.
	ReasonFalsePositives [32]int `json:"reason_false_positives"`
	// Recent holds the ids of the last recentFeedback records counted, so
	// a command applied twice (a client's exact retry within five minutes,
	// a forwarded write retried) counts once. Bounded: about 10 KB a site.
	Recent []string `json:"recent,omitempty"`
}

// recentFeedback bounds FeedbackTally.Recent.
const recentFeedback = 256

// TallyOf returns the feedback tally of a site or app id (nil if none).
func (c *Catalog) TallyOf(id string) *FeedbackTally { return c.FeedbackTallies[id] }

// RecordFeedback stores a feedback record. Applying the same record id
// twice changes nothing, so a client retry after a lost answer is safe.
type RecordFeedback struct {
	Record FeedbackRecord `json:"record"`
}

func (*RecordFeedback) Kind() string { return "detection_feedback.record" }

// Only the owner's tally is kept: records are not stored, so a tenant's
// calls never grow replicated state (the caller de-duplicates, once per
// assessment). Feedback holds records written by older versions.
func (c *RecordFeedback) Apply(tx *Tx) (any, error) {
	r := c.Record
	if old, ok := tx.next.Feedback[r.ID]; ok {
		return old, nil
	}
	if _, ok := tx.next.Workspaces[r.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, r.WorkspaceID)
	}
	owner := r.SiteID
	if owner == "" {
		owner = r.MobileAppID
	}
	if owner == "" {
		return nil, fmt.Errorf("%w: feedback names no site or app", ErrNotFound)
	}
	// A tally belongs to a live site or app of the workspace and leaves
	// with it (dropTally), so there is at most one per site and app.
	if !ownsTallyOwner(tx.next, r) {
		return nil, fmt.Errorf("%w: site or app %s in workspace %s", ErrNotFound, owner, r.WorkspaceID)
	}
	tallies := Writable(tx, "feedback_tallies", &tx.next.FeedbackTallies)
	t := FeedbackTally{WorkspaceID: r.WorkspaceID}
	if old := tallies[owner]; old != nil {
		if slices.Contains(old.Recent, r.ID) {
			return &r, nil
		}
		t = *old
	}
	t.Recent = append(append(make([]string, 0, recentFeedback), t.Recent[max(0, len(t.Recent)-recentFeedback+1):]...), r.ID)
	switch r.Label {
	case LabelLegitimate:
		t.Legitimate++
	case LabelAbuse:
		t.Abuse++
	case LabelApprovedAutomation:
		t.ApprovedAutomation++
	case LabelFalsePositive:
		t.FalsePositives++
		for bit := range t.ReasonFalsePositives {
			if r.SignalReasons&(1<<bit) != 0 {
				t.ReasonFalsePositives[bit]++
			}
		}
	case LabelFalseNegative:
		t.FalseNegatives++
	}
	tallies[owner] = &t
	return &r, nil
}

// ownsTallyOwner reports whether the site or app r names is a live one of
// r's workspace.
func ownsTallyOwner(c *Catalog, r FeedbackRecord) bool {
	if r.SiteID != "" {
		s := c.Sites[r.SiteID]
		return s != nil && s.WorkspaceID == r.WorkspaceID
	}
	a := c.MobileApps[r.MobileAppID]
	return a != nil && a.WorkspaceID == r.WorkspaceID
}

// dropTally removes the feedback tally of a deleted site or app.
func dropTally(tx *Tx, owner string) {
	if _, ok := tx.next.FeedbackTallies[owner]; ok {
		delete(Writable(tx, "feedback_tallies", &tx.next.FeedbackTallies), owner)
	}
}

// deleteWorkspaceFeedback is the workspace cascade of this file.
func deleteWorkspaceFeedback(tx *Tx, workspaceID string) {
	deleteOwned(tx, "feedback", &tx.next.Feedback, workspaceID, func(r *FeedbackRecord) string { return r.WorkspaceID })
	deleteOwned(tx, "feedback_tallies", &tx.next.FeedbackTallies, workspaceID, func(t *FeedbackTally) string { return t.WorkspaceID })
}
