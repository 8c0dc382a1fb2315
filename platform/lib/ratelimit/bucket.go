package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Limits of a BucketConfig. They keep every product the bucket computes
// inside int64 and reject settings that can only be typing mistakes.
const (
	MaxCapacity       int64 = 1_000_000_000_000
	MinRefillInterval       = int64(time.Millisecond)
	MaxRefillInterval       = int64(365 * 24 * time.Hour)
)

// Never is the retry-after a Take reports when waiting cannot help: the cost
// exceeds what the bucket or quota can ever hold.
const Never int64 = -1

// ErrCapacity means a bucket capacity is not within 1..MaxCapacity.
var ErrCapacity = errors.New("ratelimit: bucket capacity out of range")

// ErrRefillAmount means a refill amount is not within 1..capacity; a refill
// larger than the bucket would be silently truncated, so it is refused.
var ErrRefillAmount = errors.New("ratelimit: refill amount out of range")

// ErrRefillInterval means a refill interval is not within
// MinRefillInterval..MaxRefillInterval.
var ErrRefillInterval = errors.New("ratelimit: refill interval out of range")

// BucketConfig is the token-bucket part of a policy: RefillAmount tokens are
// credited at the end of every RefillInterval (nanoseconds), up to Capacity.
type BucketConfig struct {
	Capacity       int64
	RefillAmount   int64
	RefillInterval int64
}

// Validate reports the first setting out of range, wrapping one of the
// sentinel errors above.
func (c BucketConfig) Validate() error {
	if c.Capacity < 1 || c.Capacity > MaxCapacity {
		return fmt.Errorf("%w: capacity %d, want 1..%d", ErrCapacity, c.Capacity, MaxCapacity)
	}
	if c.RefillAmount < 1 || c.RefillAmount > c.Capacity {
		return fmt.Errorf("%w: refill amount %d, want 1..%d", ErrRefillAmount, c.RefillAmount, c.Capacity)
	}
	if c.RefillInterval < MinRefillInterval || c.RefillInterval > MaxRefillInterval {
		return fmt.Errorf("%w: refill interval %dns, want %d..%dns",
			ErrRefillInterval, c.RefillInterval, MinRefillInterval, MaxRefillInterval)
	}
	return nil
}

// Bucket is the state of one token bucket. Tokens are whole tokens; Last is
// the instant up to which refill has been credited. While the bucket is
// short of capacity Last moves only by whole intervals, so repeated reads
// never lose the fraction of an interval that has already elapsed.
//
// The fields are exported so the owner can persist and replicate the state;
// change them only through the methods. Every method expects a config that
// passed Validate; a bad one yields nonsense numbers, never a panic.
type Bucket struct {
	Tokens int64
	Last   int64
}

// NewBucket returns a full bucket, which is what a key that has never been
// seen is owed.
func NewBucket(cfg BucketConfig, now int64) Bucket {
	return Bucket{Tokens: cfg.Capacity, Last: now}
}

// refill credits every whole interval between Last and now. A full bucket
// moves Last to now instead: time spent full must not be banked, or a long
// idle period would later release more than Capacity in one burst. A clock
// that reads earlier than Last credits nothing.
func (b *Bucket) refill(cfg BucketConfig, now int64) {
	if b.Tokens < 0 {
		b.Tokens = 0 // only a corrupted snapshot gets here
	}
	if b.Tokens >= cfg.Capacity {
		b.Tokens = cfg.Capacity // capacity may have shrunk since
		if now > b.Last {
			b.Last = now
		}
		return
	}
	if now <= b.Last || cfg.RefillInterval <= 0 || cfg.RefillAmount <= 0 {
		return
	}
	// The true difference of two int64 always fits a uint64, and with a
	// positive interval the quotient fits an int64 again.
	intervals := int64((uint64(now) - uint64(b.Last)) / uint64(cfg.RefillInterval))
	if intervals == 0 {
		return
	}
	need := cfg.Capacity - b.Tokens
	if intervals >= (need+cfg.RefillAmount-1)/cfg.RefillAmount {
		b.Tokens = cfg.Capacity
		b.Last = now
		return
	}
	// Here intervals*RefillAmount < need+RefillAmount and
	// intervals*RefillInterval <= now-Last, so neither product overflows.
	b.Tokens += intervals * cfg.RefillAmount
	b.Last += intervals * cfg.RefillInterval
}

// Take consumes cost tokens if the bucket holds that many after refill, and
// reports the tokens left. When it refuses, retryAfterNs is the exact wait
// until enough tokens will have accrued (assuming nothing else takes), or
// Never when cost exceeds Capacity. A negative cost counts as zero, so a
// caller mistake can never add tokens.
func (b *Bucket) Take(cfg BucketConfig, now, cost int64) (ok bool, remaining, retryAfterNs int64) {
	b.refill(cfg, now)
	cost = max(cost, 0)
	if cost <= b.Tokens {
		b.Tokens -= cost
		return true, b.Tokens, 0
	}
	if cost > cfg.Capacity || cfg.RefillAmount <= 0 {
		return false, b.Tokens, Never
	}
	return false, b.Tokens, b.wait(cfg, now, cost)
}

// wait is the time from now until the refill boundary at which the bucket
// first holds cost tokens. It saturates at MaxInt64 rather than overflow for
// configs that take longer than int64 nanoseconds to fill.
func (b *Bucket) wait(cfg BucketConfig, now, cost int64) int64 {
	k := (cost - b.Tokens + cfg.RefillAmount - 1) / cfg.RefillAmount
	hi, lo := bits.Mul64(uint64(k), uint64(cfg.RefillInterval))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	// After refill a bucket short of tokens has 0 <= now-Last < interval,
	// unless the clock went backwards, when now-Last is negative.
	return satAdd(int64(lo), satSub(b.Last, now))
}

// Refund returns cost tokens, for example when a later policy of the same
// check refused and the whole check must not consume. It never fills past
// Capacity, and a non-positive cost does nothing.
func (b *Bucket) Refund(cfg BucketConfig, cost int64) {
	if cost <= 0 {
		return
	}
	if b.Tokens < 0 {
		b.Tokens = 0
	}
	if cost >= cfg.Capacity-b.Tokens {
		b.Tokens = cfg.Capacity
		return
	}
	b.Tokens += cost
}

// Peek reports the tokens the bucket would hold at now, without changing it.
func (b *Bucket) Peek(cfg BucketConfig, now int64) int64 {
	c := *b
	c.refill(cfg, now)
	return c.Tokens
}

// Full reports whether the bucket is back at capacity at now. A full bucket
// is indistinguishable from a new one, so its owner may evict it.
func (b *Bucket) Full(cfg BucketConfig, now int64) bool {
	return b.Peek(cfg, now) >= cfg.Capacity
}

func satAdd(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return satAdd(a, -b)
}
