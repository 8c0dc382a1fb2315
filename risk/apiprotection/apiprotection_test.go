package apiprotection

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

const wsID = "11111111-1111-4111-8111-111111111111"

func TestClassifyBands(t *testing.T) {
	for _, tc := range []struct {
		risk  float64
		class string
		rec   ratelimit.Decision
	}{
		{0, "low", ratelimit.Allow}, {0.299, "low", ratelimit.Allow}, {0.3, "medium", ratelimit.Throttle},
		{0.699, "medium", ratelimit.Throttle}, {0.7, "high", ratelimit.Reject}, {1, "high", ratelimit.Reject},
	} {
		if c, r := Classify(tc.risk); c != tc.class || r != tc.rec {
			t.Errorf("Classify(%v) = %s %v, want %s %v", tc.risk, c, r, tc.class, tc.rec)
		}
	}
}

func TestAssessScoresShapeVelocityAndFeedbackWithoutHTTP(t *testing.T) {
	tx := catalog.Begin(catalog.Empty())
	for _, c := range []catalog.Command{
		&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: wsID, Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}},
		&catalog.CreateAPIProtectionPolicy{Policy: catalog.APIProtectionPolicy{ID: "p1", WorkspaceID: wsID, Name: "orders",
			Target: catalog.PolicyTarget{Type: catalog.TargetWorkspace}, PathPattern: "/orders/*", Method: "*",
			RequireAuthentication: true, Limits: catalog.APILimits{PageSize: 100},
			Velocity: catalog.APIVelocity{WindowSeconds: 60, PerSubject: 2}, EnforcementMode: "enforce"}},
	} {
		if _, err := c.Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	cat := tx.Commit(1)
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	t.Cleanup(sys.Stop)
	m := New(cluster.SingleNode("n1", sys, time.Second), time.Now)
	who := Caller{Workspace: cat.Workspaces[wsID], AppID: "site-1"}

	if _, err := m.Assess(cat, who, &AssessRequest{Method: "GET", Path: "/a?b=1"}); !errors.Is(err, errcode.ErrInvalidField) {
		t.Fatalf("a path with a query: %v", err)
	}
	calm, err := m.Assess(cat, who, &AssessRequest{Method: "GET", Path: "/orders/1", AuthenticationPresent: true, SubjectID: "u1"})
	if err != nil || calm.Classification != "low" || calm.Decision != "allow" || calm.PolicyName != "orders" {
		t.Fatalf("a calm request: %+v %v", calm, err)
	}
	m.Assess(cat, who, &AssessRequest{Method: "GET", Path: "/orders/1", AuthenticationPresent: true, SubjectID: "u1"})
	hot, _ := m.Assess(cat, who, &AssessRequest{Method: "GET", Path: "/orders/1", SubjectID: "u1", PageSize: 500})
	if hot.Classification != "high" || hot.Decision != "reject" || hot.RetryAfterSeconds < 1 ||
		!slices.Contains(hot.ReasonCodes, "velocity-subject-exceeded") || !slices.Contains(hot.ReasonCodes, "authentication-missing") {
		t.Fatalf("an unauthenticated, oversized third request in a minute: %+v", hot)
	}
	if _, err := m.Feedback(Caller{Workspace: &catalog.Workspace{ID: "other"}}, &FeedbackRequest{AssessmentID: hot.AssessmentID,
		Label: "abuse", ReasonCode: "scraping"}); !errors.Is(err, ErrUnknownAssessment) {
		t.Fatalf("another workspace labelled this workspace's assessment: %v", err)
	}
	first, err := m.Feedback(who, &FeedbackRequest{AssessmentID: hot.AssessmentID, Label: "abuse", ReasonCode: "scraping"})
	again, _ := m.Feedback(who, &FeedbackRequest{AssessmentID: hot.AssessmentID, Label: "abuse", ReasonCode: "scraping"})
	if err != nil || again.FeedbackID != first.FeedbackID {
		t.Fatalf("an exact retry must answer the first feedback id: %+v %+v %v", first, again, err)
	}
	later, _ := m.Assess(cat, who, &AssessRequest{Method: "GET", Path: "/other", SubjectID: "u1"})
	if !slices.Contains(later.ReasonCodes, "prior-abuse-feedback") {
		t.Fatalf("feedback did not mark the subject: %+v", later)
	}
}
