package verify

import (
	"context"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

func TestFeedbackIsTakenOncePerAssessment(t *testing.T) {
	e := mustNewEnv(t)
	v, _ := e.siteverify(Request{Response: []byte(e.mint(nil))})
	site := Labeller{WorkspaceID: "ws1", SiteID: "site-1"}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		l    Labeller
		in   FeedbackRequest
		want string
	}{
		{"a label that is no label is refused", site, FeedbackRequest{AssessmentID: v.AssessmentID, Label: "meh"}, "invalid-field"},
		{"an unknown reason is refused", site, FeedbackRequest{AssessmentID: v.AssessmentID, Label: "abuse", ReasonCodes: []string{"nope"}}, "invalid-field"},
		{"a repeated reason is refused", site, FeedbackRequest{AssessmentID: v.AssessmentID, Label: "abuse", ReasonCodes: []string{"spam", "spam"}}, "invalid-field"},
		{"another site's assessment is unknown", Labeller{WorkspaceID: "ws1", SiteID: "site-2"}, FeedbackRequest{AssessmentID: v.AssessmentID, Label: "abuse"}, "unknown-assessment"},
		{"a made-up id is unknown", site, FeedbackRequest{AssessmentID: "00000000-0000-4000-8000-000000000000", Label: "abuse"}, "unknown-assessment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.m.Feedback(ctx, tc.l, tc.in); code(err) != tc.want {
				t.Fatalf("%v, want %s", err, tc.want)
			}
		})
	}
	in := FeedbackRequest{AssessmentID: v.AssessmentID, Label: "false_positive", ReasonCodes: []string{"support-verified"}}
	first, err := e.m.Feedback(ctx, site, in)
	if err != nil || first.Deduplicated || !first.AssessmentKnown {
		t.Fatalf("%+v %v", first, err)
	}
	if tally := e.cat.TallyOf("site-1"); tally == nil || tally.FalsePositives != 1 {
		t.Fatalf("tally %+v", tally)
	}
	e.advance(time.Minute)
	again, err := e.m.Feedback(ctx, site, in)
	if err != nil || !again.Deduplicated || again.FeedbackID != first.FeedbackID {
		t.Fatalf("an exact retry: %+v %v", again, err)
	}
	if tally := e.cat.TallyOf("site-1"); tally.FalsePositives != 1 {
		t.Fatalf("a retry counted twice: %+v", tally)
	}
	if _, err := e.m.Feedback(ctx, site, FeedbackRequest{AssessmentID: v.AssessmentID, Label: "abuse"}); code(err) != "conflict" {
		t.Fatalf("another label: %v", err)
	}
	e.advance(5 * time.Minute)
	if _, err := e.m.Feedback(ctx, site, in); code(err) != "conflict" {
		t.Fatalf("a retry after the window: %v", err)
	}
	// A mobile app labels any assessment of its workspace (a registered
	// app: a tally belongs to a live site or app).
	e.apply(&catalog.CreateMobileApp{App: catalog.MobileApp{ID: "app-1", WorkspaceID: "ws1", Platform: "ios", AppID: "com.example"}})
	v2, _ := e.siteverify(Request{Response: []byte(e.mint(nil))})
	if _, err := e.m.Feedback(ctx, Labeller{WorkspaceID: "ws1", MobileAppID: "app-1"}, FeedbackRequest{AssessmentID: v2.AssessmentID, Label: "legitimate"}); err != nil {
		t.Fatal(err)
	}
}
