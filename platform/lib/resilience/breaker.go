package resilience

import "math"

// State is the position of a circuit breaker (spec 3.4).
type State uint8

// Closed is the zero State, so the zero Breaker lets calls through.
const (
	Closed State = iota
	Open
	HalfOpen
)

// String returns the spec's name for the state.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// Breaker is the state of one circuit breaker. Closed, it records outcomes
// in a ring of the last WindowSize calls and opens on too high a failure
// rate or too many failures in a row. Open, it refuses until OpenDurationNs
// has passed, then turns half-open and admits up to HalfOpenProbes probes:
// one failure opens it again, HalfOpenProbes successes close it with an
// empty window.
//
// The ring is a fixed bitset sized for MaxWindowSize, so a Breaker is a
// plain value of about 200 bytes that copies, persists and records without
// allocating. The fields are exported for the owner to persist and
// replicate; change them only through the methods. Every method expects a
// config that passed Validate.
type Breaker struct {
	State State
	// Since is when State was entered.
	Since int64
	// Failed holds one bit per ring slot, set for a failed call.
	Failed [MaxWindowSize / 64]uint64
	// Size is the WindowSize the ring was filled under; a different one
	// restarts the window rather than misread the slots.
	Size int
	// Next is the ring slot the next outcome is written to.
	Next int
	// Calls and Failures count the outcomes held in the ring.
	Calls, Failures int
	// Consecutive counts failures since the last success.
	Consecutive int
	// Probes counts half-open admissions still awaiting feedback, and
	// Successes the probes that reported success.
	Probes, Successes int
}

// Allow reports whether a call may go ahead now, and the state that
// decided. An open breaker whose open duration has elapsed becomes half-open
// here and admits the call as a probe. When refused, retryAfterNs is the
// rest of the open duration; a half-open breaker with every probe slot taken
// cannot know when its probes will answer and reports the whole open
// duration as a conservative wait.
func (b *Breaker) Allow(cfg BreakerConfig, now int64) (ok bool, state State, retryAfterNs int64) {
	switch b.State {
	case Closed:
		return true, Closed, 0
	case HalfOpen:
		return b.admitProbe(cfg)
	}
	// Open, or a corrupted state, which fails closed the same way.
	elapsed := satSub(now, b.Since)
	if elapsed >= cfg.OpenDurationNs {
		b.enter(HalfOpen, now)
		return b.admitProbe(cfg)
	}
	// A clock that went backwards counts as no time elapsed, so the wait
	// never exceeds the open duration.
	return false, Open, cfg.OpenDurationNs - max(elapsed, 0)
}

func (b *Breaker) admitProbe(cfg BreakerConfig) (bool, State, int64) {
	if b.Probes+b.Successes >= cfg.HalfOpenProbes {
		return false, HalfOpen, cfg.OpenDurationNs
	}
	b.Probes++
	return true, HalfOpen, 0
}

// Record reports the outcome of a call Allow admitted. While open, outcomes
// are of calls admitted before it opened and are ignored. While half-open,
// an outcome counts only if a probe is awaiting feedback, since feedback
// from a call admitted while closed can arrive late and must not decide the
// probes.
func (b *Breaker) Record(cfg BreakerConfig, now int64, success bool) {
	switch b.State {
	case Closed:
		b.push(cfg, !success)
		if success {
			b.Consecutive = 0
		} else if b.Consecutive < math.MaxInt32 {
			b.Consecutive++
		}
		if b.tripped(cfg) {
			b.enter(Open, now)
		}
	case HalfOpen:
		if b.Probes <= 0 {
			return
		}
		b.Probes--
		if !success {
			b.enter(Open, now)
			return
		}
		b.Successes++
		if b.Successes >= cfg.HalfOpenProbes {
			b.enter(Closed, now)
		}
	}
}

// ReleaseProbe frees the slot of a half-open probe whose admission expired
// without feedback, so a lost caller cannot hold the breaker half-open for
// ever. It decides nothing about the dependency.
func (b *Breaker) ReleaseProbe() {
	if b.State == HalfOpen && b.Probes > 0 {
		b.Probes--
	}
}

// tripped compares by division: failures/calls is correctly rounded, so a
// rate exactly at the threshold (3/30 against 0.1) trips, where
// failures >= threshold*calls would not (0.1*30 rounds above 3).
func (b *Breaker) tripped(cfg BreakerConfig) bool {
	if cfg.ConsecutiveFailures > 0 && b.Consecutive >= cfg.ConsecutiveFailures {
		return true
	}
	return b.Calls > 0 && b.Calls >= cfg.MinimumCalls &&
		float64(b.Failures)/float64(b.Calls) >= cfg.FailureRateThreshold
}

// push writes one outcome into the ring, overwriting the oldest once full.
func (b *Breaker) push(cfg BreakerConfig, failed bool) {
	size := min(max(cfg.WindowSize, 1), MaxWindowSize)
	if b.Size != size || b.Next < 0 || b.Next >= size || b.Calls < 0 || b.Calls > size ||
		b.Failures < 0 || b.Failures > b.Calls {
		b.clearWindow()
		b.Size = size
	}
	word, bit := b.Next/64, uint64(1)<<(b.Next%64)
	if b.Calls == size {
		if b.Failed[word]&bit != 0 {
			b.Failures--
		}
	} else {
		b.Calls++
	}
	if failed {
		b.Failed[word] |= bit
		b.Failures++
	} else {
		b.Failed[word] &^= bit
	}
	if b.Next++; b.Next == size {
		b.Next = 0
	}
}

func (b *Breaker) clearWindow() {
	b.Failed = [MaxWindowSize / 64]uint64{}
	b.Next, b.Calls, b.Failures, b.Consecutive = 0, 0, 0, 0
}

// enter moves to s. Every transition starts the probe count afresh, and
// leaving closed or coming back to it empties the window: the outcomes that
// opened the breaker must not reopen it the moment it closes.
func (b *Breaker) enter(s State, now int64) {
	b.State, b.Since = s, now
	b.Probes, b.Successes = 0, 0
	if s != HalfOpen {
		b.clearWindow()
	}
}

func satSub(a, b int64) int64 {
	d := a - b
	if (d < a) != (b > 0) {
		if b > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return d
}
