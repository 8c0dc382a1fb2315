package actors

import (
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/resilience"
)

// handOff moves every partition for which moving reports true from one
// system to another, the way the cluster does on a planned move.
func handOff(t *testing.T, from, to *System, moving func(int) bool) {
	t.Helper()
	for i := 0; i < from.Shards(); i++ {
		ex := &Export{In: moving}
		if err := from.Ask(i, ex, time.Second); err != nil {
			t.Fatal(err)
		}
		for _, ch := range ex.Chunks {
			im := &Import{Chunk: ch}
			if err := to.Ask(ch.Partition, im, time.Second); err != nil || im.Err != nil {
				t.Fatal(err, im.Err)
			}
		}
	}
}

func TestHandoffMovesLeasesWithTheirHoldersAndFences(t *testing.T) {
	from, to := mustNewSystem(t, nil), mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	var fences []uint64
	for _, id := range []string{"l1", "l2"} {
		op := &LeaseReserve{Key: "cc/k", LeaseID: id, Capacity: 2, Expires: exp}
		if err := from.Ask(5, op, time.Second); err != nil || !op.Granted {
			t.Fatal(op.Granted, err)
		}
		fences = append(fences, op.Fence)
	}
	handOff(t, from, to, func(p int) bool { return p == 5 })

	full := &LeaseReserve{Key: "cc/k", LeaseID: "l3", Capacity: 2, Expires: exp}
	if err := to.Ask(5, full, time.Second); err != nil || full.Granted {
		t.Fatalf("the new owner granted a third slot of two: granted=%v err=%v", full.Granted, err)
	}
	rel := &LeaseRelease{Key: "cc/k", LeaseID: "l1", Fence: fences[0]}
	if err := to.Ask(5, rel, time.Second); err != nil || !rel.Released {
		t.Fatalf("the holder of l1 cannot release it on the new owner: %v %v", rel.Released, err)
	}
	next := &LeaseReserve{Key: "cc/k", LeaseID: "l3", Capacity: 2, Expires: exp}
	if err := to.Ask(5, next, time.Second); err != nil || !next.Granted || next.Fence <= fences[1] {
		t.Fatalf("after a release: granted=%v fence %d, want a grant above %d", next.Granted, next.Fence, fences[1])
	}
}

func TestHandoffKeepsAnOpenCircuitOpenAndItsSlotsHeld(t *testing.T) {
	from, to := mustNewSystem(t, nil), mustNewSystem(t, nil)
	cfg := DependencyConfig{
		Breaker: resilience.BreakerConfig{WindowSize: 4, MinimumCalls: 2, FailureRateThreshold: 0.5, OpenDurationNs: 60e9, HalfOpenProbes: 1},
		Budget:  resilience.RetryBudgetConfig{TTLNs: 10e9, MinPerSecond: 1, Ratio: 0.1}, MaxConcurrent: 1,
	}
	exp := time.Now().Add(time.Minute).UnixNano()
	// A slow call holds the only bulkhead slot on a second dependency.
	held := &BreakerAdmit{Key: "dep/slow", AdmissionID: "slow", Config: cfg, Expires: exp}
	if err := from.Ask(2, held, time.Second); err != nil || !held.Admitted {
		t.Fatal(held.Admitted, err)
	}
	for i := range 2 {
		a := &BreakerAdmit{Key: "dep/bad", AdmissionID: string(rune('a' + i)), Config: cfg, Expires: exp}
		if err := from.Ask(2, a, time.Second); err != nil || !a.Admitted {
			t.Fatal(a.Admitted, err)
		}
		if err := from.Ask(2, &BreakerFeedback{Key: "dep/bad", AdmissionID: a.AdmissionID, Config: cfg}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	handOff(t, from, to, func(p int) bool { return p == 2 })

	open := &BreakerAdmit{Key: "dep/bad", AdmissionID: "c", Config: cfg, Expires: exp}
	if err := to.Ask(2, open, time.Second); err != nil || open.Admitted || open.Reason != AdmitCircuitOpen {
		t.Fatalf("on the new owner: admitted=%v reason=%v, want circuit-open", open.Admitted, open.Reason)
	}
	full := &BreakerAdmit{Key: "dep/slow", AdmissionID: "next", Config: cfg, Expires: exp}
	if err := to.Ask(2, full, time.Second); err != nil || full.Admitted || full.Reason != AdmitBulkheadFull {
		t.Fatalf("on the new owner: admitted=%v reason=%v, want bulkhead-full", full.Admitted, full.Reason)
	}
	fb := &BreakerFeedback{Key: "dep/slow", AdmissionID: "slow", Success: true, Config: cfg}
	if err := to.Ask(2, fb, time.Second); err != nil {
		t.Fatal(err)
	}
	again := &BreakerAdmit{Key: "dep/slow", AdmissionID: "next", Config: cfg, Expires: exp}
	if err := to.Ask(2, again, time.Second); err != nil || !again.Admitted {
		t.Fatalf("the slot freed by the moved admission's feedback: admitted=%v reason=%v", again.Admitted, again.Reason)
	}
}

func TestHandoffKeepsARedemptionAndItsFirstOutcome(t *testing.T) {
	from, to := mustNewSystem(t, nil), mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	first := &Redeem{ID: "tok/x", Expires: exp, Key: "idem", Outcome: Outcome{Codes: 0, Ref: "assessment-1"}}
	if err := from.Ask(7, first, time.Second); err != nil || !first.First {
		t.Fatal(first.First, err)
	}
	ex := &Export{In: func(p int) bool { return p == 7 }, ReplicatedOnly: true}
	if err := from.Ask(7, ex, time.Second); err != nil || len(ex.Chunks) == 0 {
		t.Fatalf("redemptions are not exported as replicated state: %d chunks, %v", len(ex.Chunks), err)
	}
	handOff(t, from, to, func(p int) bool { return p == 7 })
	retry := &Redeem{ID: "tok/x", Expires: exp, Key: "idem", Outcome: Outcome{Codes: 4, Ref: "other"}}
	if err := to.Ask(7, retry, time.Second); err != nil || !retry.Replayed || retry.Outcome.Ref != "assessment-1" {
		t.Fatalf("idempotent retry on the new owner: replayed=%v outcome %+v", retry.Replayed, retry.Outcome)
	}
	dup := &Redeem{ID: "tok/x", Expires: exp, Key: "another"}
	if err := to.Ask(7, dup, time.Second); err != nil || dup.First || dup.Replayed {
		t.Fatalf("another use on the new owner: first=%v replayed=%v", dup.First, dup.Replayed)
	}
}
