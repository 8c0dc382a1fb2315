package load

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// funcWorker adapts a function to Worker.
type funcWorker func() Outcome

func (f funcWorker) Do() Outcome { return f() }

func instant() (Worker, error) {
	return funcWorker(func() Outcome { return Outcome{Decision: Allow} }), nil
}

func mustRun(t *testing.T, ctx context.Context, cfg Config, newWorker func(int) (Worker, error)) *Result {
	t.Helper()
	res, err := Run(ctx, cfg, newWorker)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"a zero duration is rejected", Config{Connections: 1}},
		{"zero connections are rejected", Config{Duration: time.Second}},
		{"a negative rate is rejected", Config{Duration: time.Second, Connections: 1, Rate: -1}},
		{"a negative warm-up is rejected", Config{Duration: time.Second, Connections: 1, Warmup: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tt.cfg, func(int) (Worker, error) { return instant() }); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("want ErrBadConfig, got %v", err)
			}
		})
	}
}

func TestClosedLoopExcludesWarmup(t *testing.T) {
	res := mustRun(t, context.Background(), Config{Duration: 200 * time.Millisecond, Warmup: 100 * time.Millisecond, Connections: 4},
		func(int) (Worker, error) { return instant() })
	var all, completed int64
	for _, s := range res.Timeline {
		all += s.Count
		completed += s.Completed
	}
	if completed != all {
		t.Fatalf("timeline: %d sent but %d completed", all, completed)
	}
	if res.Requests == 0 || res.Requests >= all {
		t.Fatalf("measured %d of %d requests; want some, and fewer than with warm-up", res.Requests, all)
	}
	if res.Elapsed != 200*time.Millisecond {
		t.Fatalf("elapsed %v, want the configured duration", res.Elapsed)
	}
	if res.Decisions[Allow] != res.Requests || res.Latency.TotalCount() != res.Requests {
		t.Fatalf("allow=%d hist=%d requests=%d", res.Decisions[Allow], res.Latency.TotalCount(), res.Requests)
	}
}

func TestOpenLoopFollowsTheRate(t *testing.T) {
	res := mustRun(t, context.Background(), Config{Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, Connections: 8, Rate: 2000},
		func(int) (Worker, error) { return instant() })
	if res.Requests < 900 || res.Requests > 1001 {
		t.Fatalf("sent %d requests at 2000/s over 0.5 s, want about 1000", res.Requests)
	}
	if res.SendLag == nil || res.SendLag.TotalCount() != res.Requests {
		t.Fatalf("send lag not recorded for every request")
	}
}

// TestOpenLoopCountsTheStall is the coordinated-omission check: one 100 ms
// stall on a single connection at 1000/s delays the ~100 sends queued behind
// it, and their latency must show it; a closed loop sees one slow request.
func TestOpenLoopCountsTheStall(t *testing.T) {
	const stall = 100 * time.Millisecond
	newWorker := func(int) (Worker, error) {
		var calls atomic.Int64
		return funcWorker(func() Outcome {
			if calls.Add(1) == 150 {
				time.Sleep(stall)
			}
			return Outcome{}
		}), nil
	}
	open := mustRun(t, context.Background(), Config{Duration: 400 * time.Millisecond, Warmup: 50 * time.Millisecond, Connections: 1, Rate: 1000}, newWorker)
	if got := time.Duration(open.Latency.Max()) * time.Microsecond; got < stall {
		t.Fatalf("open loop max %v, want at least the stall %v", got, stall)
	}
	slow := open.Latency.TotalCount() - countBelow(open, 20*time.Millisecond)
	if slow < 50 {
		t.Fatalf("open loop saw %d requests slower than 20ms, want the queue behind the stall (~80)", slow)
	}

	// The closed loop records the stalled request and nothing behind it
	// (a few more may be slow on a loaded machine, never the whole queue).
	closed := mustRun(t, context.Background(), Config{Duration: 400 * time.Millisecond, Warmup: 0, Connections: 1}, newWorker)
	if slow := closed.Latency.TotalCount() - countBelow(closed, 20*time.Millisecond); slow < 1 || slow > 5 {
		t.Fatalf("closed loop saw %d slow requests, want the stalled one (and not the queue)", slow)
	}
}

func countBelow(r *Result, d time.Duration) int64 {
	var n int64
	limit := int64(d / time.Microsecond)
	for _, b := range r.Latency.Distribution() {
		if b.To <= limit {
			n += b.Count
		}
	}
	return n
}

func TestExhaustedWorkersEndTheRunEarly(t *testing.T) {
	var budget atomic.Int64
	budget.Store(100)
	start := time.Now()
	res := mustRun(t, context.Background(), Config{Duration: 5 * time.Second, Connections: 4}, func(int) (Worker, error) {
		return funcWorker(func() Outcome {
			if budget.Add(-1) < 0 {
				return Outcome{Kind: Exhausted}
			}
			return Outcome{Decision: VerifySuccess}
		}), nil
	})
	if time.Since(start) > 2*time.Second || !res.Exhausted {
		t.Fatalf("run did not end on exhaustion (exhausted=%v)", res.Exhausted)
	}
	if res.Requests != 100 || res.Decisions[VerifySuccess] != 100 {
		t.Fatalf("requests=%d successes=%d, want 100", res.Requests, res.Decisions[VerifySuccess])
	}
	if res.Elapsed >= 5*time.Second {
		t.Fatalf("elapsed %v should stop at exhaustion", res.Elapsed)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	for _, rate := range []float64{0, 0.5} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		res := mustRun(t, ctx, Config{Duration: 10 * time.Second, Connections: 2, Rate: rate},
			func(int) (Worker, error) { return instant() })
		cancel()
		if time.Since(start) > 2*time.Second || !res.Interrupted {
			t.Fatalf("rate %v: run did not stop on cancel (interrupted=%v)", rate, res.Interrupted)
		}
	}
}

func TestOutcomesAreClassified(t *testing.T) {
	outcomes := []Outcome{
		{Kind: Transport},
		{Kind: Status, Status: 429},
		{Kind: Status, Status: 503},
		{Kind: Decode},
		{Decision: Allow},
		{Decision: Throttle},
		{Op: 1, Decision: VerifyFailure},
	}
	res := mustRun(t, context.Background(), Config{Duration: 50 * time.Millisecond, Connections: 1, Ops: []string{"a", "b"}},
		func(int) (Worker, error) {
			i := 0
			return funcWorker(func() Outcome { o := outcomes[i%len(outcomes)]; i++; return o }), nil
		})
	if res.Transport == 0 || res.Status[429] == 0 || res.Status[503] == 0 || res.Decode == 0 {
		t.Fatalf("errors not classified: %+v %v", res, res.Status)
	}
	if res.Decisions[Allow] == 0 || res.Decisions[Throttle] == 0 || res.Decisions[VerifyFailure] == 0 {
		t.Fatalf("decisions not counted: %v", res.Decisions)
	}
	if res.Ops[1].Latency.TotalCount() == 0 {
		t.Fatalf("second operation has no latency")
	}
	if got := res.Latency.TotalCount(); got != res.Requests-res.Transport {
		t.Fatalf("histogram has %d values, want requests minus transport failures (%d)", got, res.Requests-res.Transport)
	}
}

func TestRecordAllocatesNothing(t *testing.T) {
	rec := newRecorder(2, 10*time.Second, true)
	o := Outcome{Op: 1, Kind: Status, Status: 429}
	if allocs := testing.AllocsPerRun(1000, func() {
		rec.record(o, 300*time.Microsecond)
		rec.timelineAdd(time.Second, 300*time.Microsecond, true)
	}); allocs != 0 {
		t.Fatalf("record allocates %.1f times", allocs)
	}
}

func TestScheduleCounts(t *testing.T) {
	s := NewSchedule(1000)
	if s.Interval() != time.Millisecond {
		t.Fatalf("interval %v", s.Interval())
	}
	if a, b := s.Claim(), s.Claim(); a != 0 || b != time.Millisecond {
		t.Fatalf("claims %v %v", a, b)
	}
	if n := s.Count(time.Second, 3*time.Second); n != 2000 {
		t.Fatalf("count %d, want 2000", n)
	}
}

func TestAtMeasureStartRunsWhenWarmupEnds(t *testing.T) {
	start := time.Now()
	var at atomic.Int64
	cfg := Config{Duration: 100 * time.Millisecond, Warmup: 60 * time.Millisecond, Connections: 1,
		AtMeasureStart: func() { at.Store(int64(time.Since(start))) }}
	mustRun(t, context.Background(), cfg, func(int) (Worker, error) { return instant() })
	if got := time.Duration(at.Load()); got < 60*time.Millisecond || got > 150*time.Millisecond {
		t.Fatalf("hook ran at %v, want at the end of the 60ms warm-up", got)
	}
}
