package resilience

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Limits of a RetryBudgetConfig, chosen so the fixed-point reserve
// (MinPerSecond × TTL in millionths of a retry) stays far inside int64.
const (
	MinRetryTTL     = int64(time.Second)
	MaxRetryTTL     = int64(time.Hour)
	MaxMinPerSecond = 100_000
	MaxRetryRatio   = 100.0
)

// ErrRetryTTL means TTLNs is not within MinRetryTTL..MaxRetryTTL.
var ErrRetryTTL = errors.New("resilience: retry budget TTL out of range")

// ErrMinPerSecond means MinPerSecond is not within 0..MaxMinPerSecond.
var ErrMinPerSecond = errors.New("resilience: retry budget minimum per second out of range")

// ErrRetryRatio means Ratio is not within 0..MaxRetryRatio.
var ErrRetryRatio = errors.New("resilience: retry budget ratio out of range")

// budgetSlots is how many time slots the TTL is cut into; as in Finagle's
// WindowedAdder, credit expires one slot (TTL/10) at a time.
const budgetSlots = 10

// retryUnit is one retry in the budget's fixed point, so the ratio is kept
// to six decimal places and the arithmetic is exact integer sums.
const retryUnit = 1_000_000

// RetryBudgetConfig tunes a RetryBudget the way Finagle's RetryBudget is
// tuned: over any TTL, retries may be at most Ratio of first attempts plus
// MinPerSecond per second of TTL.
type RetryBudgetConfig struct {
	TTLNs        int64
	MinPerSecond int64
	Ratio        float64
}

// Defaults returns c with every zero field set to Finagle's default: a 10s
// TTL, 10 retries per second and a ratio of 0.2. Zero is also a meaningful
// MinPerSecond or Ratio; to use it, set every field and skip Defaults.
func (c RetryBudgetConfig) Defaults() RetryBudgetConfig {
	if c.TTLNs == 0 {
		c.TTLNs = int64(10 * time.Second)
	}
	if c.MinPerSecond == 0 {
		c.MinPerSecond = 10
	}
	if c.Ratio == 0 {
		c.Ratio = 0.2
	}
	return c
}

// Validate reports the first setting out of range, wrapping one of the
// sentinel errors above.
func (c RetryBudgetConfig) Validate() error {
	switch {
	case c.TTLNs < MinRetryTTL || c.TTLNs > MaxRetryTTL:
		return fmt.Errorf("%w: %dns, want %d..%dns", ErrRetryTTL, c.TTLNs, MinRetryTTL, MaxRetryTTL)
	case c.MinPerSecond < 0 || c.MinPerSecond > MaxMinPerSecond:
		return fmt.Errorf("%w: %d, want 0..%d", ErrMinPerSecond, c.MinPerSecond, MaxMinPerSecond)
	case !(c.Ratio >= 0 && c.Ratio <= MaxRetryRatio): // also refuses NaN
		return fmt.Errorf("%w: %v, want 0..%v", ErrRetryRatio, c.Ratio, MaxRetryRatio)
	}
	return nil
}

// RetryBudget decides whether a retry may be sent. Each first attempt
// deposits Ratio of a retry; each retry withdraws a whole one; deposits and
// withdrawals expire after the TTL, and a constant reserve of
// MinPerSecond×TTL retries lets a quiet service still retry. Withdrawals
// expire too, which is what turns the reserve into a rate.
//
// Amounts are integers in millionths of a retry, held in budgetSlots time
// slots, so the balance is exact and nothing allocates. The zero value
// refuses every retry; build one with NewRetryBudget. A RetryBudget is
// short-lived admission state and is not meant to be persisted, so its
// fields are unexported.
type RetryBudget struct {
	deposit int64 // millionths of a retry credited per first attempt
	reserve int64 // millionths of a retry always available per TTL
	width   int64 // nanoseconds per slot
	epoch   int64 // absolute slot number (now/width) of the newest slot
	slots   [budgetSlots]int64
}

// NewRetryBudget returns an empty budget for cfg.
func NewRetryBudget(cfg RetryBudgetConfig) (RetryBudget, error) {
	if err := cfg.Validate(); err != nil {
		return RetryBudget{}, err
	}
	return RetryBudget{
		deposit: int64(math.Round(cfg.Ratio * retryUnit)),
		// MinPerSecond × TTL seconds × retryUnit, kept exact for TTLs in
		// whole microseconds.
		reserve: cfg.MinPerSecond * (cfg.TTLNs / 1000),
		width:   cfg.TTLNs / budgetSlots,
		epoch:   math.MinInt64,
	}, nil
}

// Deposit credits the budget for a first attempt made at now.
func (r *RetryBudget) Deposit(now int64) {
	if r.width <= 0 {
		return
	}
	r.slots[r.advance(now)] += r.deposit
}

// TryWithdraw reports whether a retry may be sent at now, and if so charges
// it to the budget.
func (r *RetryBudget) TryWithdraw(now int64) bool {
	if r.width <= 0 {
		return false
	}
	i := r.advance(now)
	if r.balance() < retryUnit {
		return false
	}
	r.slots[i] -= retryUnit
	return true
}

// Available reports how many whole retries TryWithdraw would grant at now,
// without changing the budget.
func (r *RetryBudget) Available(now int64) int64 {
	if r.width <= 0 {
		return 0
	}
	c := *r
	c.advance(now)
	return max(c.balance(), 0) / retryUnit
}

func (r *RetryBudget) balance() int64 {
	sum := r.reserve
	for _, v := range r.slots {
		sum += v
	}
	return sum
}

// advance expires the slots that fell out of the TTL by now and returns the
// index of now's slot. A clock that reads earlier than the newest slot uses
// the newest slot, so going backwards neither expires nor revives credit.
func (r *RetryBudget) advance(now int64) int {
	n := floorDiv(now, r.width)
	if gap := satSub(n, r.epoch); gap >= budgetSlots {
		r.slots = [budgetSlots]int64{}
		r.epoch = n
	} else if gap > 0 {
		for ; r.epoch < n; r.epoch++ {
			r.slots[floorMod(r.epoch+1, budgetSlots)] = 0
		}
	}
	return int(floorMod(r.epoch, budgetSlots))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}
