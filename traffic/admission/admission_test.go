package admission

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
)

const wsID = "11111111-1111-4111-8111-111111111111"

func TestAdmissionIsTakenBackOnceWithoutHTTP(t *testing.T) {
	tx := catalog.Begin(catalog.Empty())
	for _, c := range []catalog.Command{
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "k1", Purpose: catalog.KeyLive, Secret: bytes.Repeat([]byte{1}, 32), CreatedAt: time.Unix(1, 0)}},
		&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: wsID, Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}},
		&catalog.PutDependency{Dependency: catalog.Dependency{ID: "d1", WorkspaceID: wsID, Name: "payments", WindowSize: 10,
			MinimumCalls: 5, FailureRateThreshold: 0.5, ConsecutiveFailures: 2, OpenDurationMs: 1000, HalfOpenProbes: 1,
			RetryRatio: 0.1, RetryMinPerSecond: 1, RetryTTLMs: 10_000, MaxConcurrent: 1, AdmissionTTLMs: 5000}},
	} {
		if _, err := c.Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	cat := tx.Commit(1)
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	t.Cleanup(sys.Stop)
	now := time.Now()
	m := New(cluster.SingleNode("n1", sys, time.Second), func() time.Time { return now })
	who := Caller{Workspace: cat.Workspaces[wsID], AppID: "site-1"}

	if _, err := m.Admit(cat, who, &AdmitFields{Dependency: "nope"}); !errors.Is(err, ErrUnknownDependency) {
		t.Fatalf("unknown dependency: %v", err)
	}
	a, err := m.Admit(cat, who, &AdmitFields{Dependency: "payments", AdmissionContext: AdmissionContext{Action: "charge"}})
	if err != nil || !a.Admitted || a.InFlight != 1 {
		t.Fatalf("admit: %+v %v", a, err)
	}
	if full, _ := m.Admit(cat, who, &AdmitFields{Dependency: "payments"}); full.Admitted || full.Reason != "bulkhead-full" {
		t.Fatalf("the bulkhead of one admitted a second call: %+v", full)
	}
	fb := &FeedbackFields{AdmissionToken: a.AdmissionToken, Outcome: "success", AdmissionContext: AdmissionContext{Action: "refund"}}
	if _, err := m.Feedback(cat, who, fb); !errors.Is(err, ErrContext) {
		t.Fatalf("feedback from another context: %v", err)
	}
	fb.Action = "charge"
	if r, err := m.Feedback(cat, who, fb); err != nil || r.CountedAs != "success" {
		t.Fatalf("feedback: %+v %v", r, err)
	}
	if _, err := m.Feedback(cat, who, fb); !errors.Is(err, ErrUsed) {
		t.Fatalf("a replayed feedback: %v", err)
	}
	b, _ := m.Admit(cat, who, &AdmitFields{Dependency: "payments"})
	if !b.Admitted {
		t.Fatalf("the feedback did not free the bulkhead slot: %+v", b)
	}
	now = now.Add(6 * time.Second)
	if _, err := m.Feedback(cat, who, &FeedbackFields{AdmissionToken: b.AdmissionToken, Outcome: "failure"}); !errors.Is(err, ErrExpired) {
		t.Fatalf("feedback after expiry: %v", err)
	}
	if _, err := m.Feedback(cat, who, &FeedbackFields{AdmissionToken: "admit_garbage", Outcome: "failure"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a garbage token: %v", err)
	}
}
