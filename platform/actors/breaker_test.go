package actors

import (
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/resilience"
)

func testDependency() DependencyConfig {
	return DependencyConfig{
		Breaker: resilience.BreakerConfig{WindowSize: 10, MinimumCalls: 5, FailureRateThreshold: 0.5,
			OpenDurationNs: int64(time.Second), HalfOpenProbes: 2},
		Budget:        resilience.RetryBudgetConfig{TTLNs: int64(10 * time.Second), MinPerSecond: 0, Ratio: 0.5},
		MaxConcurrent: 3,
	}
}

func TestBreakerActorTransitions(t *testing.T) {
	clk := newFakeClock(int64(1_700_000_000) * 1e9)
	s := mustNewSystem(t, clk.now)
	cfg := testDependency()
	const key = "breaker/ws/dep"
	n := 0
	admit := func(retry bool) *BreakerAdmit {
		t.Helper()
		n++
		op := &BreakerAdmit{Key: key, AdmissionID: string(rune('a' + n)), Retry: retry, Config: cfg, Expires: clk.now() + int64(30*time.Second)}
		mustAsk(t, s, op)
		return op
	}
	feedback := func(a *BreakerAdmit, ok bool) *BreakerFeedback {
		t.Helper()
		op := &BreakerFeedback{Key: key, AdmissionID: a.AdmissionID, Success: ok, Config: cfg}
		mustAsk(t, s, op)
		return op
	}

	t.Run("the bulkhead admits at most max_concurrent calls in flight", func(t *testing.T) {
		var in []*BreakerAdmit
		for i := 0; i < 3; i++ {
			a := admit(false)
			if !a.Admitted || !a.Bulkhead {
				t.Fatalf("call %d refused: %+v", i, a)
			}
			in = append(in, a)
		}
		full := admit(false)
		if full.Admitted || full.Reason != AdmitBulkheadFull || full.RetryAfter != int64(30*time.Second) {
			t.Fatalf("fourth call: %+v", full)
		}
		for _, a := range in {
			feedback(a, true)
		}
		if again := admit(false); !again.Admitted || again.InFlight != 1 {
			t.Fatalf("after feedback: %+v", again)
		} else {
			feedback(again, true)
		}
	})
	t.Run("retries beyond the budget are refused and give their slot back", func(t *testing.T) {
		// 5 first attempts so far deposited 2.5 retries at ratio 0.5.
		r1, r2 := admit(true), admit(true)
		r3 := admit(true)
		if !r1.Admitted || !r2.Admitted || r3.Admitted || r3.Reason != AdmitRetryBudget {
			t.Fatalf("retries: %v %v %+v", r1.Admitted, r2.Admitted, r3)
		}
		if r3.InFlight != 2 {
			t.Fatalf("a refused retry kept its bulkhead slot: in flight %d", r3.InFlight)
		}
		feedback(r1, true)
		feedback(r2, true)
	})
	t.Run("failures over the threshold open the circuit", func(t *testing.T) {
		var last *BreakerFeedback
		for i := 0; i < 7; i++ {
			last = feedback(admit(false), false)
		}
		if last.State != resilience.Open {
			t.Fatalf("state %v after 7 failures of 14 calls", last.State)
		}
		refused := admit(false)
		if refused.Admitted || refused.Reason != AdmitCircuitOpen || refused.RetryAfter != int64(time.Second) {
			t.Fatalf("open circuit answered %+v", refused)
		}
	})
	var p1, p2 *BreakerAdmit
	t.Run("after the open duration the breaker admits a bounded number of probes", func(t *testing.T) {
		clk.add(time.Second)
		p1, p2 = admit(false), admit(false)
		p3 := admit(false)
		if !p1.Probe || !p2.Probe || p3.Admitted || p3.State != resilience.HalfOpen {
			t.Fatalf("probes %+v %+v third %+v", p1, p2, p3)
		}
	})
	t.Run("a late answer from before the circuit opened decides nothing", func(t *testing.T) {
		fb := feedback(&BreakerAdmit{AdmissionID: "never-a-probe"}, true)
		if fb.Counted || fb.State != resilience.HalfOpen {
			t.Fatalf("late feedback %+v", fb)
		}
	})
	t.Run("an expired probe gives its slot back", func(t *testing.T) {
		clk.add(31 * time.Second) // both probes expire without feedback
		q1, q2 := admit(false), admit(false)
		if !q1.Probe || !q2.Probe {
			t.Fatalf("probe slots not returned: %+v %+v", q1, q2)
		}
		p1, p2 = q1, q2
	})
	t.Run("a probe failure reopens the circuit", func(t *testing.T) {
		if fb := feedback(p1, false); fb.State != resilience.Open {
			t.Fatalf("state %v", fb.State)
		}
		if fb := feedback(p2, true); fb.Counted {
			t.Fatal("a probe of the previous half-open period was counted")
		}
	})
	t.Run("all probes succeeding closes the circuit", func(t *testing.T) {
		clk.add(time.Second)
		a, b := admit(false), admit(false)
		feedback(a, true)
		if fb := feedback(b, true); fb.State != resilience.Closed {
			t.Fatalf("state %v after both probes succeeded", fb.State)
		}
		peek := &BreakerPeek{Key: key}
		mustAsk(t, s, peek)
		if peek.State != resilience.Closed || peek.InFlight != 0 || peek.Calls != 0 {
			t.Fatalf("peek %+v", peek)
		}
	})
}

func TestBreakerAdmissionExpiryReleasesBulkheadInSweep(t *testing.T) {
	clk := newFakeClock(1e9)
	s := mustNewSystem(t, clk.now)
	cfg := testDependency()
	cfg.MaxConcurrent = 1
	a := &BreakerAdmit{Key: "k", AdmissionID: "x", Config: cfg, Expires: clk.now() + 1e9}
	mustAsk(t, s, a)
	clk.add(2 * time.Second)
	deadline := time.Now().Add(2 * time.Second)
	for {
		var inFlight int
		mustAsk(t, s, opFunc(func(st *State) { inFlight = Slot(st, KindBreaker, newBreakerTable).m["k"].bulk.InFlight }))
		if inFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not free the expired admission's bulkhead slot")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
