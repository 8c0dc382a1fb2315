package ratelimit

import (
	"math/rand/v2"
	"testing"
)

// modelBucket is the reference: it walks time one interval at a time, which
// is obviously right and far too slow for production.
type modelBucket struct{ tokens, last int64 }

func (m *modelBucket) advance(cfg BucketConfig, now int64) {
	for {
		if m.tokens >= cfg.Capacity {
			m.tokens = cfg.Capacity
			m.last = max(m.last, now)
			return
		}
		if now-m.last < cfg.RefillInterval {
			return
		}
		m.tokens += cfg.RefillAmount
		m.last += cfg.RefillInterval
	}
}

func (m *modelBucket) take(cfg BucketConfig, now, cost int64) (bool, int64, int64) {
	m.advance(cfg, now)
	cost = max(cost, 0)
	if cost <= m.tokens {
		m.tokens -= cost
		return true, m.tokens, 0
	}
	if cost > cfg.Capacity {
		return false, m.tokens, Never
	}
	// Try each later boundary until a copy of the model holds enough.
	for k := int64(1); ; k++ {
		c := *m
		at := m.last + k*cfg.RefillInterval
		c.advance(cfg, at)
		if c.tokens >= cost {
			return false, m.tokens, at - now
		}
	}
}

func randomBucketConfig(r *rand.Rand) BucketConfig {
	capacity := 1 + r.Int64N(40)
	intervals := []int64{MinRefillInterval, 7 * MinRefillInterval, sec}
	return BucketConfig{
		Capacity:       capacity,
		RefillAmount:   1 + r.Int64N(capacity),
		RefillInterval: intervals[r.IntN(len(intervals))],
	}
}

func TestBucketMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 2000; run++ {
		cfg := randomBucketConfig(r)
		start := int64(1_700_000_000)*sec + r.Int64N(sec)
		now := start
		b := NewBucket(cfg, now)
		m := modelBucket{cfg.Capacity, now}
		furthest, granted := now, int64(0)
		for step := 0; step < 200; step++ {
			// Mostly forwards by up to a few intervals, sometimes backwards.
			now += r.Int64N(6*cfg.RefillInterval) - cfg.RefillInterval
			furthest = max(furthest, now)
			switch op := r.IntN(10); {
			case op < 7:
				cost := r.Int64N(cfg.Capacity+3) - 1
				ok, rem, retry := b.Take(cfg, now, cost)
				wok, wrem, wretry := m.take(cfg, now, cost)
				if ok != wok || rem != wrem || retry != wretry {
					t.Fatalf("run %d step %d cfg %+v: Take(%d, %d) = (%v, %d, %d), model (%v, %d, %d)",
						run, step, cfg, now-start, cost, ok, rem, retry, wok, wrem, wretry)
				}
				if ok {
					granted += max(cost, 0)
				} else if retry > 0 {
					checkRetryIsTight(t, cfg, b, now, cost, retry)
				}
			case op < 8:
				cost := r.Int64N(cfg.Capacity)
				before := b.Tokens
				b.Refund(cfg, cost)
				m.tokens = min(m.tokens+cost, cfg.Capacity)
				granted -= b.Tokens - before
			default:
				if got, want := b.Peek(cfg, now), (func() int64 { c := m; c.advance(cfg, now); return c.tokens })(); got != want {
					t.Fatalf("run %d step %d: Peek = %d, model %d", run, step, got, want)
				}
			}
			if b.Tokens != m.tokens || b.Last != m.last {
				t.Fatalf("run %d step %d cfg %+v: bucket %+v, model %+v", run, step, cfg, b, m)
			}
			// Conservation: nothing beyond the initial fill and one credit per
			// elapsed interval can ever have been handed out.
			if limit := cfg.Capacity + cfg.RefillAmount*((furthest-start)/cfg.RefillInterval); granted > limit {
				t.Fatalf("run %d step %d: granted %d tokens, at most %d possible", run, step, granted, limit)
			}
		}
	}
}

// checkRetryIsTight asserts that the reported wait is exactly enough: the
// same take succeeds at now+retry and fails a nanosecond earlier.
func checkRetryIsTight(t *testing.T, cfg BucketConfig, b Bucket, now, cost, retry int64) {
	t.Helper()
	early, late := b, b
	if ok, _, _ := early.Take(cfg, now+retry-1, cost); ok {
		t.Fatalf("take of %d succeeded %dns before the reported retry-after", cost, 1)
	}
	if ok, _, _ := late.Take(cfg, now+retry, cost); !ok {
		t.Fatalf("take of %d failed after waiting the reported retry-after %d", cost, retry)
	}
}
