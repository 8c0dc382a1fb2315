package resilience

import (
	"errors"
	"math"
	"testing"
	"time"
)

const sec = int64(time.Second)

// bstep is one operation on a breaker and what it must report. For "allow"
// all of ok, state and retry are checked; for the others only the state
// afterwards.
type bstep struct {
	at    int64
	op    string // allow, ok, fail, release
	ok    bool
	state State
	retry int64
}

func repeat(n int, s bstep) []bstep {
	out := make([]bstep, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func seq(parts ...[]bstep) []bstep {
	var out []bstep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(s bstep) []bstep { return []bstep{s} }

// mustTrip returns a breaker under cfg opened at time at by consecutive
// failures (cfg must set ConsecutiveFailures).
func mustTrip(t *testing.T, cfg BreakerConfig, at int64) Breaker {
	t.Helper()
	var b Breaker
	for i := 0; i < cfg.ConsecutiveFailures; i++ {
		b.Record(cfg, at, false)
	}
	if b.State != Open {
		t.Fatalf("breaker did not open after %d failures: %+v", cfg.ConsecutiveFailures, b)
	}
	return b
}

func TestBreakerTransitions(t *testing.T) {
	od := 30 * sec
	rate := BreakerConfig{WindowSize: 10, MinimumCalls: 10, FailureRateThreshold: 0.5, OpenDurationNs: od, HalfOpenProbes: 3}
	consec := rate
	consec.ConsecutiveFailures = 3
	small := BreakerConfig{WindowSize: 4, MinimumCalls: 4, FailureRateThreshold: 0.75, OpenDurationNs: od, HalfOpenProbes: 2}
	oneProbe := consec
	oneProbe.HalfOpenProbes = 1

	tests := []struct {
		name  string
		cfg   BreakerConfig
		open  bool // start from a breaker opened at 0 by consecutive failures
		steps []bstep
	}{
		{"a zero breaker is closed and admits calls", rate, false, one(bstep{0, "allow", true, Closed, 0})},
		{"closed opens when the failure rate reaches the threshold", rate, false, seq(
			repeat(5, bstep{op: "ok", state: Closed}),
			repeat(4, bstep{op: "fail", state: Closed}),
			one(bstep{op: "fail", state: Open}),
			one(bstep{1, "allow", false, Open, od - 1}),
		)},
		{"closed stays closed below the minimum number of calls", rate, false, seq(
			repeat(9, bstep{op: "fail", state: Closed}),
			one(bstep{0, "allow", true, Closed, 0}),
		)},
		{"closed opens on consecutive failures before the minimum", consec, false, seq(
			repeat(2, bstep{op: "fail", state: Closed}),
			one(bstep{op: "fail", state: Open}),
		)},
		{"a success resets the consecutive-failure count", consec, false, seq(
			repeat(2, bstep{op: "fail", state: Closed}),
			one(bstep{op: "ok", state: Closed}),
			repeat(2, bstep{op: "fail", state: Closed}),
		)},
		{"a failure that slid out of the window no longer counts", small, false, seq(
			repeat(2, bstep{op: "fail", state: Closed}),
			repeat(4, bstep{op: "ok", state: Closed}),   // window: ok ok ok ok
			repeat(2, bstep{op: "fail", state: Closed}), // window: ok ok fail fail, 4 failures ever
			one(bstep{op: "fail", state: Open}),         // window: ok fail fail fail
		)},
		{"an open breaker refuses until the open duration has elapsed", consec, true, seq(
			one(bstep{0, "allow", false, Open, od}),
			one(bstep{od - 1, "allow", false, Open, 1}),
			one(bstep{od, "allow", true, HalfOpen, 0}),
		)},
		{"half-open closes after every probe succeeds", consec, true, seq(
			repeat(3, bstep{od, "allow", true, HalfOpen, 0}),
			repeat(2, bstep{od, "ok", false, HalfOpen, 0}),
			one(bstep{od, "ok", false, Closed, 0}),
			one(bstep{od, "allow", true, Closed, 0}),
		)},
		{"half-open opens again on a probe failure and restarts the open duration", consec, true, seq(
			repeat(2, bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "ok", false, HalfOpen, 0}),
			one(bstep{od + sec, "fail", false, Open, 0}),
			one(bstep{2*od + sec - 1, "allow", false, Open, 1}),
			one(bstep{2*od + sec, "allow", true, HalfOpen, 0}),
		)},
		{"half-open admits no more probes than the limit", consec, true, seq(
			repeat(3, bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "allow", false, HalfOpen, od}),
		)},
		{"a successful probe still holds its place toward closing", consec, true, seq(
			repeat(3, bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "ok", false, HalfOpen, 0}),
			one(bstep{od, "allow", false, HalfOpen, od}),
		)},
		{"a released probe frees its slot without deciding anything", oneProbe, true, seq(
			one(bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "allow", false, HalfOpen, od}),
			one(bstep{od, "release", false, HalfOpen, 0}),
			one(bstep{od, "allow", true, HalfOpen, 0}),
		)},
		{"feedback arriving while open is ignored", consec, true, seq(
			one(bstep{sec, "ok", false, Open, 0}),
			one(bstep{sec, "fail", false, Open, 0}),
			one(bstep{od, "allow", true, HalfOpen, 0}), // the open duration did not restart
		)},
		{"feedback in half-open with no probe awaiting it is ignored", oneProbe, true, seq(
			one(bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "release", false, HalfOpen, 0}),
			one(bstep{od, "fail", false, HalfOpen, 0}),
			one(bstep{od, "ok", false, HalfOpen, 0}),
		)},
		{"closing empties the window so old failures do not reopen it", oneProbe, true, seq(
			one(bstep{od, "allow", true, HalfOpen, 0}),
			one(bstep{od, "ok", false, Closed, 0}),
			repeat(2, bstep{od, "fail", false, Closed, 0}),
		)},
		{"a clock that went backwards waits no longer than the open duration", consec, true, seq(
			one(bstep{-5 * sec, "allow", false, Open, od}),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Breaker
			if tt.open {
				b = mustTrip(t, tt.cfg, 0)
			}
			for i, s := range tt.steps {
				switch s.op {
				case "allow":
					ok, st, retry := b.Allow(tt.cfg, s.at)
					if ok != s.ok || st != s.state || retry != s.retry {
						t.Fatalf("step %d: Allow(%d) = (%v, %v, %d), want (%v, %v, %d)", i, s.at, ok, st, retry, s.ok, s.state, s.retry)
					}
				case "ok", "fail":
					b.Record(tt.cfg, s.at, s.op == "ok")
				case "release":
					b.ReleaseProbe()
				default:
					t.Fatalf("unknown op %q", s.op)
				}
				if b.State != s.state {
					t.Fatalf("step %d (%s): state %v, want %v (%+v)", i, s.op, b.State, s.state, b)
				}
			}
		})
	}
}

func TestBreakerRateAtThresholdTrips(t *testing.T) {
	// 0.1*30 rounds above 3 in float64; the rate 3/30 must still trip.
	cfg := BreakerConfig{WindowSize: 30, MinimumCalls: 30, FailureRateThreshold: 0.1, OpenDurationNs: sec, HalfOpenProbes: 1}
	var b Breaker
	for i := 0; i < 27; i++ {
		b.Record(cfg, 0, true)
	}
	for i := 0; i < 3; i++ {
		b.Record(cfg, 0, false)
	}
	if b.State != Open {
		t.Fatalf("3 failures in 30 at threshold 0.1 left the breaker %v", b.State)
	}
}

func TestBreakerWindowSizeChangeRestartsWindow(t *testing.T) {
	cfg := BreakerConfig{WindowSize: 10, MinimumCalls: 10, FailureRateThreshold: 0.5, OpenDurationNs: sec, HalfOpenProbes: 1}
	var b Breaker
	for i := 0; i < 9; i++ {
		b.Record(cfg, 0, false)
	}
	cfg.WindowSize, cfg.MinimumCalls = 5, 5
	b.Record(cfg, 0, false)
	if b.Calls != 1 || b.Failures != 1 || b.State != Closed {
		t.Fatalf("after a window size change the ring holds %d calls, %d failures, state %v; want a fresh window", b.Calls, b.Failures, b.State)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", State(9): "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func TestBreakerConfig(t *testing.T) {
	def := BreakerConfig{}.Defaults()
	if want := (BreakerConfig{100, 100, 0.5, 0, 60 * sec, 10}); def != want {
		t.Fatalf("Defaults() = %+v, want %+v", def, want)
	}
	with := func(f func(*BreakerConfig)) BreakerConfig { c := def; f(&c); return c }
	tests := []struct {
		name string
		cfg  BreakerConfig
		want error
	}{
		{"the defaults are valid", def, nil},
		{"a small window takes a matching default minimum", BreakerConfig{WindowSize: 20}.Defaults(), nil},
		{"a consecutive-failure rule is valid", with(func(c *BreakerConfig) { c.ConsecutiveFailures = 5 }), nil},
		{"a window of zero is refused", with(func(c *BreakerConfig) { c.WindowSize = 0 }), ErrWindowSize},
		{"a window over the ring size is refused", with(func(c *BreakerConfig) { c.WindowSize = MaxWindowSize + 1 }), ErrWindowSize},
		{"a minimum larger than the window is refused", with(func(c *BreakerConfig) { c.MinimumCalls = 101 }), ErrMinimumCalls},
		{"a zero failure rate is refused", with(func(c *BreakerConfig) { c.FailureRateThreshold = 0 }), ErrFailureRate},
		{"a failure rate above one is refused", with(func(c *BreakerConfig) { c.FailureRateThreshold = 1.01 }), ErrFailureRate},
		{"a NaN failure rate is refused", with(func(c *BreakerConfig) { c.FailureRateThreshold = math.NaN() }), ErrFailureRate},
		{"negative consecutive failures are refused", with(func(c *BreakerConfig) { c.ConsecutiveFailures = -1 }), ErrConsecutiveFailures},
		{"an open duration under a millisecond is refused", with(func(c *BreakerConfig) { c.OpenDurationNs = 999_999 }), ErrOpenDuration},
		{"an open duration over a day is refused", with(func(c *BreakerConfig) { c.OpenDurationNs = MaxOpenDuration + 1 }), ErrOpenDuration},
		{"zero probes are refused", with(func(c *BreakerConfig) { c.HalfOpenProbes = 0 }), ErrHalfOpenProbes},
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
