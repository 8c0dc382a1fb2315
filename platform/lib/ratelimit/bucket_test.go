package ratelimit

import (
	"errors"
	"math"
	"testing"
	"time"
)

const sec = int64(time.Second)

// testCfg holds 10 tokens and credits 2 every second.
var testCfg = BucketConfig{Capacity: 10, RefillAmount: 2, RefillInterval: sec}

func TestBucketTake(t *testing.T) {
	huge := BucketConfig{Capacity: MaxCapacity, RefillAmount: 1, RefillInterval: MaxRefillInterval}
	tests := []struct {
		name         string
		cfg          BucketConfig
		b            Bucket
		now, cost    int64
		ok           bool
		remaining    int64
		retry        int64
		tokens, last int64
	}{
		{"a new bucket grants its whole capacity at once", testCfg, NewBucket(testCfg, 0), 0, 10, true, 0, 0, 0, 0},
		{"a take larger than the tokens left is refused and consumes nothing", testCfg, Bucket{3, 0}, 0, 5, false, 3, sec, 3, 0},
		{"retry-after counts from the last credited boundary, not from now", testCfg, Bucket{0, 0}, 400e6, 5, false, 0, 3*sec - 400e6, 0, 0},
		{"refill credits whole intervals only", testCfg, Bucket{0, 0}, 1999e6, 4, false, 2, 1e6, 2, sec},
		{"refill stops at capacity", testCfg, Bucket{9, 0}, 100 * sec, 0, true, 10, 0, 10, 100 * sec},
		{"a cost above capacity is refused for ever", testCfg, Bucket{10, 0}, 0, 11, false, 10, Never, 10, 0},
		{"a zero cost on an empty bucket is allowed", testCfg, Bucket{0, 0}, 0, 0, true, 0, 0, 0, 0},
		{"a negative cost counts as zero and adds nothing", testCfg, Bucket{3, 0}, 0, -5, true, 3, 0, 3, 0},
		{"a clock that went backwards mints nothing", testCfg, Bucket{0, 10 * sec}, 5 * sec, 1, false, 0, 6 * sec, 0, 10 * sec},
		{"a full bucket keeps its last time when the clock went backwards", testCfg, Bucket{10, 10 * sec}, 5 * sec, 1, true, 9, 0, 9, 10 * sec},
		{"a gap wider than half the int64 range fills the bucket without overflow", testCfg, Bucket{0, math.MinInt64 + 1}, math.MaxInt64, 10, true, 0, 0, 0, math.MaxInt64},
		{"retry-after saturates when filling outlasts int64 nanoseconds", huge, Bucket{0, 0}, 0, MaxCapacity, false, 0, math.MaxInt64, 0, 0},
		{"a snapshot with negative tokens is read as empty", testCfg, Bucket{-7, 0}, 0, 1, false, 0, sec, 0, 0},
		{"tokens above a shrunken capacity are clipped", testCfg, Bucket{50, 0}, 0, 10, true, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			ok, rem, retry := b.Take(tt.cfg, tt.now, tt.cost)
			if ok != tt.ok || rem != tt.remaining || retry != tt.retry {
				t.Errorf("Take = (%v, %d, %d), want (%v, %d, %d)", ok, rem, retry, tt.ok, tt.remaining, tt.retry)
			}
			if b.Tokens != tt.tokens || b.Last != tt.last {
				t.Errorf("bucket = %+v, want {Tokens:%d Last:%d}", b, tt.tokens, tt.last)
			}
		})
	}
}

func TestBucketSequences(t *testing.T) {
	type step struct {
		at, cost int64
		ok       bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a full bucket does not bank idle time", []step{
			{100 * sec, 10, true},       // idle for 100s, still only 10 tokens
			{100*sec + sec/2, 1, false}, // no refill yet: the clock restarted at 100s
			{101 * sec, 2, true},
			{101 * sec, 1, false},
		}},
		{"partial intervals survive reads, so refill does not drift", []step{
			{0, 10, true},
			{600e6, 0, true},  // a read between boundaries must not move Last to now
			{1200e6, 2, true}, // the 1s boundary credited 2
			{2000e6, 2, true}, // the 2s boundary credits again: drift would push it to 2.2s
			{2000e6, 1, false},
		}},
		{"waiting exactly the reported retry-after is enough", []step{
			{0, 10, true},
			{300e6, 4, false}, // retry-after is 1.7s
			{1999e6, 4, false},
			{2000e6, 4, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket(testCfg, 0)
			for i, s := range tt.steps {
				if ok, _, _ := b.Take(testCfg, s.at, s.cost); ok != s.ok {
					t.Fatalf("step %d: Take(at=%d, cost=%d) ok = %v, want %v (bucket %+v)", i, s.at, s.cost, ok, s.ok, b)
				}
			}
		})
	}
}

func TestBucketRefund(t *testing.T) {
	tests := []struct {
		name   string
		tokens int64
		cost   int64
		want   int64
	}{
		{"a refund adds the tokens back", 3, 4, 7},
		{"a refund never fills past capacity", 8, 5, 10},
		{"a huge refund does not overflow", 8, math.MaxInt64, 10},
		{"a zero refund does nothing", 3, 0, 3},
		{"a negative refund does not take tokens", 3, -2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bucket{Tokens: tt.tokens}
			b.Refund(testCfg, tt.cost)
			if b.Tokens != tt.want {
				t.Errorf("Tokens = %d, want %d", b.Tokens, tt.want)
			}
		})
	}
}

func TestBucketPeekAndFull(t *testing.T) {
	tests := []struct {
		name string
		b    Bucket
		now  int64
		peek int64
		full bool
	}{
		{"a new bucket is full", NewBucket(testCfg, 0), 0, 10, true},
		{"a drained bucket is not full before enough intervals", Bucket{0, 0}, 4 * sec, 8, false},
		{"a drained bucket is full again after enough intervals", Bucket{0, 0}, 5 * sec, 10, true},
		{"an odd deficit needs the interval that overshoots it", Bucket{1, 0}, 4*sec + sec/2, 9, false},
		{"a bucket read before its last time gains nothing", Bucket{4, 10 * sec}, 0, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			if got := b.Peek(testCfg, tt.now); got != tt.peek {
				t.Errorf("Peek = %d, want %d", got, tt.peek)
			}
			if got := b.Full(testCfg, tt.now); got != tt.full {
				t.Errorf("Full = %v, want %v", got, tt.full)
			}
			if b != tt.b {
				t.Errorf("Peek/Full changed the bucket to %+v", b)
			}
		})
	}
}

func TestBucketConfigValidate(t *testing.T) {
	ms := MinRefillInterval
	tests := []struct {
		name string
		cfg  BucketConfig
		want error
	}{
		{"a sensible config is valid", testCfg, nil},
		{"the extreme limits are valid", BucketConfig{MaxCapacity, MaxCapacity, MaxRefillInterval}, nil},
		{"a one-token one-millisecond bucket is valid", BucketConfig{1, 1, ms}, nil},
		{"a zero capacity is refused", BucketConfig{0, 1, sec}, ErrCapacity},
		{"a capacity above the limit is refused", BucketConfig{MaxCapacity + 1, 1, sec}, ErrCapacity},
		{"a zero refill amount is refused", BucketConfig{10, 0, sec}, ErrRefillAmount},
		{"a refill larger than the bucket is refused", BucketConfig{10, 11, sec}, ErrRefillAmount},
		{"a refill interval under a millisecond is refused", BucketConfig{10, 1, ms - 1}, ErrRefillInterval},
		{"a negative refill interval is refused", BucketConfig{10, 1, -sec}, ErrRefillInterval},
		{"a refill interval over a year is refused", BucketConfig{10, 1, MaxRefillInterval + 1}, ErrRefillInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}
