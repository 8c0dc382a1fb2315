package resilience

import (
	"errors"
	"fmt"
	"time"
)

// Limits of a BreakerConfig. MaxWindowSize fixes the size of the ring every
// Breaker carries, which is what lets Record run without allocating.
const (
	MaxWindowSize          = 1024
	MaxConsecutiveFailures = 1_000_000
	MaxHalfOpenProbes      = 1000
	MinOpenDuration        = int64(time.Millisecond)
	MaxOpenDuration        = int64(24 * time.Hour)
)

// ErrWindowSize means WindowSize is not within 1..MaxWindowSize.
var ErrWindowSize = errors.New("resilience: breaker window size out of range")

// ErrMinimumCalls means MinimumCalls is not within 1..WindowSize; a minimum
// larger than the window could never be reached, so the failure-rate rule
// would silently never fire.
var ErrMinimumCalls = errors.New("resilience: breaker minimum calls out of range")

// ErrFailureRate means FailureRateThreshold is not in (0, 1].
var ErrFailureRate = errors.New("resilience: breaker failure-rate threshold out of range")

// ErrConsecutiveFailures means ConsecutiveFailures is negative or above
// MaxConsecutiveFailures.
var ErrConsecutiveFailures = errors.New("resilience: breaker consecutive failures out of range")

// ErrOpenDuration means OpenDurationNs is not within
// MinOpenDuration..MaxOpenDuration.
var ErrOpenDuration = errors.New("resilience: breaker open duration out of range")

// ErrHalfOpenProbes means HalfOpenProbes is not within 1..MaxHalfOpenProbes.
var ErrHalfOpenProbes = errors.New("resilience: breaker half-open probes out of range")

// BreakerConfig tunes a Breaker.
type BreakerConfig struct {
	// WindowSize is how many of the most recent calls the failure rate is
	// computed over.
	WindowSize int
	// MinimumCalls is how many calls the window must hold before the failure
	// rate may open the breaker, so one early failure does not.
	MinimumCalls int
	// FailureRateThreshold opens the breaker when failures/calls in the
	// window reach it.
	FailureRateThreshold float64
	// ConsecutiveFailures opens the breaker after that many failures in a
	// row, whatever the window says; 0 turns the rule off.
	ConsecutiveFailures int
	// OpenDurationNs is how long an open breaker refuses before it lets
	// probes through.
	OpenDurationNs int64
	// HalfOpenProbes is how many probes must all succeed to close again, and
	// so also how many may be in flight at once.
	HalfOpenProbes int
}

// Defaults returns c with every zero field set to its default: a window of
// 100 calls, a minimum of 100 calls (or the whole window if smaller), a 50%
// failure rate, no consecutive-failure rule, 60s open and 10 probes.
func (c BreakerConfig) Defaults() BreakerConfig {
	if c.WindowSize == 0 {
		c.WindowSize = 100
	}
	if c.MinimumCalls == 0 {
		c.MinimumCalls = min(100, c.WindowSize)
	}
	if c.FailureRateThreshold == 0 {
		c.FailureRateThreshold = 0.5
	}
	if c.OpenDurationNs == 0 {
		c.OpenDurationNs = int64(60 * time.Second)
	}
	if c.HalfOpenProbes == 0 {
		c.HalfOpenProbes = 10
	}
	return c
}

// Validate reports the first setting out of range, wrapping one of the
// sentinel errors above.
func (c BreakerConfig) Validate() error {
	switch {
	case c.WindowSize < 1 || c.WindowSize > MaxWindowSize:
		return fmt.Errorf("%w: %d, want 1..%d", ErrWindowSize, c.WindowSize, MaxWindowSize)
	case c.MinimumCalls < 1 || c.MinimumCalls > c.WindowSize:
		return fmt.Errorf("%w: %d, want 1..%d", ErrMinimumCalls, c.MinimumCalls, c.WindowSize)
	case !(c.FailureRateThreshold > 0 && c.FailureRateThreshold <= 1): // also refuses NaN
		return fmt.Errorf("%w: %v, want (0, 1]", ErrFailureRate, c.FailureRateThreshold)
	case c.ConsecutiveFailures < 0 || c.ConsecutiveFailures > MaxConsecutiveFailures:
		return fmt.Errorf("%w: %d, want 0..%d", ErrConsecutiveFailures, c.ConsecutiveFailures, MaxConsecutiveFailures)
	case c.OpenDurationNs < MinOpenDuration || c.OpenDurationNs > MaxOpenDuration:
		return fmt.Errorf("%w: %dns, want %d..%dns", ErrOpenDuration, c.OpenDurationNs, MinOpenDuration, MaxOpenDuration)
	case c.HalfOpenProbes < 1 || c.HalfOpenProbes > MaxHalfOpenProbes:
		return fmt.Errorf("%w: %d, want 1..%d", ErrHalfOpenProbes, c.HalfOpenProbes, MaxHalfOpenProbes)
	}
	return nil
}
