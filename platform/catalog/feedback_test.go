package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func mustApply(t *testing.T, c *Catalog, cmds ...Command) *Catalog {
	t.Helper()
	for i, cmd := range cmds {
		// Commands travel through the Raft log as JSON: round-trip them.
		body, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(cmd.Kind(), body)
		if err != nil {
			t.Fatal(err)
		}
		tx := Begin(c)
		if _, err := dec.Apply(tx); err != nil {
			t.Fatalf("command %d (%s): %v", i, cmd.Kind(), err)
		}
		c = tx.Commit(c.Index + 1)
	}
	return c
}

func TestRecordFeedbackTalliesOnceAndCascades(t *testing.T) {
	c := mustApply(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w"}},
		&CreateSite{Site: Site{ID: "s", WorkspaceID: "w", SiteKey: "k"}})
	fp := FeedbackRecord{ID: "f1", WorkspaceID: "w", SiteID: "s", AssessmentID: "a", Label: LabelFalsePositive,
		SignalReasons: 1<<2 | 1<<4, AssessmentKnown: true, RecordedAt: time.Unix(10, 0).UTC()}
	c = mustApply(t, c, &RecordFeedback{Record: fp}, &RecordFeedback{Record: fp},
		&RecordFeedback{Record: FeedbackRecord{ID: "f2", WorkspaceID: "w", SiteID: "s", Label: LabelAbuse}})
	tally := c.TallyOf("s")
	if tally == nil || tally.FalsePositives != 1 || tally.Abuse != 1 {
		t.Fatalf("tally = %+v, want one false positive (applied twice) and one abuse", tally)
	}
	if tally.ReasonFalsePositives[2] != 1 || tally.ReasonFalsePositives[4] != 1 || tally.ReasonFalsePositives[0] != 0 {
		t.Fatalf("per-reason false positives = %v", tally.ReasonFalsePositives)
	}
	if len(c.Feedback) != 0 {
		t.Fatalf("records = %d, want none: only the bounded tally is kept", len(c.Feedback))
	}
	for i := 0; i < 3*recentFeedback; i++ {
		c = mustApply(t, c, &RecordFeedback{Record: FeedbackRecord{ID: fmt.Sprint("g", i), WorkspaceID: "w", SiteID: "s", Label: LabelLegitimate}})
	}
	if n := len(c.TallyOf("s").Recent); n != recentFeedback || c.TallyOf("s").Legitimate != 3*recentFeedback {
		t.Fatalf("tally keeps %d recent ids (want %d) and counts %d", n, recentFeedback, c.TallyOf("s").Legitimate)
	}
	c = mustApply(t, c, &DeleteWorkspace{ID: "w"})
	if len(c.Feedback) != 0 || c.TallyOf("s") != nil {
		t.Fatal("deleting the workspace left its feedback behind")
	}
}

func TestRecordFeedbackNeedsAnOwner(t *testing.T) {
	c := mustApply(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w"}})
	tx := Begin(c)
	if _, err := (&RecordFeedback{Record: FeedbackRecord{ID: "f", WorkspaceID: "w", Label: LabelAbuse}}).Apply(tx); err == nil {
		t.Fatal("feedback without a site or app was recorded")
	}
	tx = Begin(c)
	if _, err := (&RecordFeedback{Record: FeedbackRecord{ID: "f", WorkspaceID: "nope", SiteID: "s"}}).Apply(tx); err == nil {
		t.Fatal("feedback of an unknown workspace was recorded")
	}
}

// A tally is one per live site or app: feedback for a site of another
// workspace or a deleted one is refused, and a site's tally leaves with
// it, so deleting and creating sites cannot grow the tallies (issue 24).
func TestAFeedbackTallyLivesAndDiesWithItsSite(t *testing.T) {
	c := mustApply(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w"}}, &CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&CreateSite{Site: Site{ID: "s", WorkspaceID: "w", SiteKey: "k"}},
		&CreateMobileApp{App: MobileApp{ID: "m", WorkspaceID: "w", Platform: "ios", AppID: "a"}},
		&RecordFeedback{Record: FeedbackRecord{ID: "f1", WorkspaceID: "w", SiteID: "s", Label: LabelAbuse}},
		&RecordFeedback{Record: FeedbackRecord{ID: "f2", WorkspaceID: "w", MobileAppID: "m", Label: LabelAbuse}})
	for _, r := range []FeedbackRecord{
		{ID: "x1", WorkspaceID: "w2", SiteID: "s", Label: LabelAbuse},
		{ID: "x2", WorkspaceID: "w", SiteID: "gone", Label: LabelAbuse},
		{ID: "x3", WorkspaceID: "w2", MobileAppID: "m", Label: LabelAbuse},
	} {
		if _, err := (&RecordFeedback{Record: r}).Apply(Begin(c)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%+v: %v, want not found", r, err)
		}
	}
	c = mustApply(t, c, &DeleteSite{WorkspaceID: "w", ID: "s"}, &DeleteMobileApp{WorkspaceID: "w", ID: "m"})
	if len(c.FeedbackTallies) != 0 {
		t.Fatalf("tallies of deleted owners stay: %v", c.FeedbackTallies)
	}
}
