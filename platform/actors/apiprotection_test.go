package actors

import (
	"sync/atomic"
	"testing"
)

func TestAPIProtectionOpsByMessages(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000)
	s := mustNewSystem(t, func() int64 { return now.Load() })

	t.Run("velocity counts within a window and restarts in the next", func(t *testing.T) {
		for want := int64(1); want <= 3; want++ {
			op := &CountHit{Key: "v", WindowNs: 1_000}
			mustAsk(t, s, op)
			if op.Count != want || op.EndNs != 2_000 {
				t.Fatalf("count %d end %d, want %d 2000", op.Count, op.EndNs, want)
			}
		}
		now.Store(2_000)
		op := &CountHit{Key: "v", WindowNs: 1_000}
		mustAsk(t, s, op)
		if op.Count != 1 {
			t.Fatalf("a new window starts at 1, got %d", op.Count)
		}
	})
	t.Run("an idempotency key remembers its first fingerprint", func(t *testing.T) {
		cases := []struct {
			name string
			fp   byte
			want int
		}{
			{"the first use is new", 1, IdempotencyFirst},
			{"the same payload is a replay", 1, IdempotencyReplay},
			{"another payload is a mismatch", 2, IdempotencyMismatch},
			{"the first fingerprint still stands after a mismatch", 1, IdempotencyReplay},
		}
		for _, c := range cases {
			op := &ClaimIdempotency{Key: "k", Fingerprint: [32]byte{c.fp}, Expires: 10_000}
			mustAsk(t, s, op)
			if op.Outcome != c.want {
				t.Errorf("%s: outcome %d, want %d", c.name, op.Outcome, c.want)
			}
		}
	})
	t.Run("assessments are kept until expiry and annotated once per exact retry", func(t *testing.T) {
		mustAsk(t, s, &PutAssessment{Assessment: Assessment{ID: "a1", WorkspaceID: "w", Risk: 0.5, ExpiresNs: 5_000, SubjectKey: "s"}})
		get := &GetAssessment{ID: "a1"}
		mustAsk(t, s, get)
		if !get.Found || get.Assessment.Risk != 0.5 {
			t.Fatalf("%+v", get)
		}
		first := &AnnotateAssessment{ID: "a1", WorkspaceID: "w", FeedbackID: "f1", Label: "abuse", Reason: "other", DedupNs: 100}
		mustAsk(t, s, first)
		retry := &AnnotateAssessment{ID: "a1", WorkspaceID: "w", FeedbackID: "f2", Label: "abuse", Reason: "other", DedupNs: 100}
		mustAsk(t, s, retry)
		if !first.Found || first.Duplicate || !retry.Duplicate || retry.FeedbackID != "f1" || first.SubjectKey != "s" {
			t.Fatalf("first %+v retry %+v", first, retry)
		}
		other := &AnnotateAssessment{ID: "a1", WorkspaceID: "other", FeedbackID: "f3", Label: "abuse", DedupNs: 100}
		mustAsk(t, s, other)
		if other.Found {
			t.Fatal("another workspace may not annotate the assessment")
		}
		now.Store(5_000)
		mustAsk(t, s, get)
		if get.Found {
			t.Fatal("an expired assessment is still served")
		}
	})
	t.Run("a subject label expires", func(t *testing.T) {
		mustAsk(t, s, &LabelSubject{Key: "s", Label: "abuse", Expires: 6_000})
		op := &SubjectLabel{Key: "s"}
		mustAsk(t, s, op)
		if op.Label != "abuse" {
			t.Fatalf("label %q", op.Label)
		}
		now.Store(6_000)
		mustAsk(t, s, op)
		if op.Label != "" {
			t.Fatalf("expired label %q still served", op.Label)
		}
	})
}
