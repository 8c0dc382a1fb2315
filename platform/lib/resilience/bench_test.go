package resilience

import "testing"

// Every admission and feedback path must report 0 allocs/op.

var (
	sinkBool  bool
	sinkState State
	sinkInt   int64
)

func BenchmarkBreakerAllowClosed(b *testing.B) {
	cfg := BreakerConfig{}.Defaults()
	var br Breaker
	for b.Loop() {
		sinkBool, sinkState, sinkInt = br.Allow(cfg, 0)
	}
}

func BenchmarkBreakerRecord(b *testing.B) {
	cfg := BreakerConfig{}.Defaults()
	var br Breaker
	i := 0
	for b.Loop() {
		i++
		br.Record(cfg, 0, i%4 != 0) // 25% failures: the ring wraps, the breaker stays closed
	}
	sinkState = br.State
}

func BenchmarkBreakerHalfOpenCycle(b *testing.B) {
	cfg := BreakerConfig{ConsecutiveFailures: 1, HalfOpenProbes: 1}.Defaults()
	var br Breaker
	now := int64(0)
	for b.Loop() {
		br.Record(cfg, now, false) // closed → open
		now += cfg.OpenDurationNs
		sinkBool, sinkState, _ = br.Allow(cfg, now) // open → half-open, probe admitted
		br.Record(cfg, now, true)                   // half-open → closed
	}
	if !sinkBool || br.State != Closed {
		b.Fatalf("the cycle did not run: last admission %v, state %v", sinkBool, br.State)
	}
}

func BenchmarkRetryBudgetDeposit(b *testing.B) {
	r, _ := NewRetryBudget(RetryBudgetConfig{}.Defaults())
	now := int64(0)
	for b.Loop() {
		now += 1_000_000 // 1ms: crosses a slot boundary every thousand calls
		r.Deposit(now)
	}
}

func BenchmarkRetryBudgetTryWithdraw(b *testing.B) {
	r, _ := NewRetryBudget(RetryBudgetConfig{}.Defaults())
	now := int64(0)
	for b.Loop() {
		now += 1_000_000
		r.Deposit(now)
		sinkBool = r.TryWithdraw(now)
	}
}

func BenchmarkBulkhead(b *testing.B) {
	var bh Bulkhead
	for b.Loop() {
		sinkBool = bh.TryAcquire(64)
		bh.Release()
	}
}
