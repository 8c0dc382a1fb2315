package resilience

import (
	"math/rand/v2"
	"testing"
)

// modelBreaker is the reference: a slice of the last outcomes and the state
// machine written out plainly.
type modelBreaker struct {
	state         State
	since         int64
	outcomes      []bool // true = failed, oldest first
	consec        int
	probes, succs int
}

func (m *modelBreaker) enter(s State, now int64) {
	m.state, m.since, m.probes, m.succs = s, now, 0, 0
	if s != HalfOpen {
		m.outcomes, m.consec = nil, 0
	}
}

func (m *modelBreaker) allow(cfg BreakerConfig, now int64) (bool, State, int64) {
	if m.state == Open {
		if now-m.since < cfg.OpenDurationNs {
			return false, Open, cfg.OpenDurationNs - max(now-m.since, 0)
		}
		m.enter(HalfOpen, now)
	}
	if m.state == HalfOpen {
		if m.probes+m.succs >= cfg.HalfOpenProbes {
			return false, HalfOpen, cfg.OpenDurationNs
		}
		m.probes++
		return true, HalfOpen, 0
	}
	return true, Closed, 0
}

func (m *modelBreaker) failures() int {
	n := 0
	for _, f := range m.outcomes {
		if f {
			n++
		}
	}
	return n
}

func (m *modelBreaker) record(cfg BreakerConfig, now int64, success bool) {
	switch m.state {
	case Closed:
		m.outcomes = append(m.outcomes, !success)
		if len(m.outcomes) > cfg.WindowSize {
			m.outcomes = m.outcomes[1:]
		}
		if success {
			m.consec = 0
		} else {
			m.consec++
		}
		n := len(m.outcomes)
		if (cfg.ConsecutiveFailures > 0 && m.consec >= cfg.ConsecutiveFailures) ||
			(n >= cfg.MinimumCalls && float64(m.failures())/float64(n) >= cfg.FailureRateThreshold) {
			m.enter(Open, now)
		}
	case HalfOpen:
		if m.probes == 0 {
			return
		}
		m.probes--
		if !success {
			m.enter(Open, now)
		} else if m.succs++; m.succs >= cfg.HalfOpenProbes {
			m.enter(Closed, now)
		}
	}
}

func TestBreakerMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rates := []float64{0.1, 0.25, 0.5, 0.75, 1}
	for run := 0; run < 3000; run++ {
		w := 1 + r.IntN(20)
		cfg := BreakerConfig{
			WindowSize:           w,
			MinimumCalls:         1 + r.IntN(w),
			FailureRateThreshold: rates[r.IntN(len(rates))],
			ConsecutiveFailures:  r.IntN(6),
			OpenDurationNs:       sec * (1 + r.Int64N(5)),
			HalfOpenProbes:       1 + r.IntN(4),
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		pFail := r.Float64()
		var b Breaker
		var m modelBreaker
		now := int64(1_700_000_000) * sec
		for step := 0; step < 300; step++ {
			now += r.Int64N(cfg.OpenDurationNs) - cfg.OpenDurationNs/8
			switch op := r.IntN(20); {
			case op < 8:
				ok, st, retry := b.Allow(cfg, now)
				wok, wst, wretry := m.allow(cfg, now)
				if ok != wok || st != wst || retry != wretry {
					t.Fatalf("run %d step %d cfg %+v: Allow = (%v, %v, %d), model (%v, %v, %d)", run, step, cfg, ok, st, retry, wok, wst, wretry)
				}
			case op < 19:
				success := r.Float64() >= pFail
				b.Record(cfg, now, success)
				m.record(cfg, now, success)
			default:
				b.ReleaseProbe()
				if m.state == HalfOpen && m.probes > 0 {
					m.probes--
				}
			}
			if b.State != m.state || b.Since != m.since || b.Calls != len(m.outcomes) || b.Failures != m.failures() ||
				b.Consecutive != m.consec || b.Probes != m.probes || b.Successes != m.succs {
				t.Fatalf("run %d step %d cfg %+v: breaker %v since %d calls %d failures %d consec %d probes %d succs %d; model %+v",
					run, step, cfg, b.State, b.Since, b.Calls, b.Failures, b.Consecutive, b.Probes, b.Successes, m)
			}
		}
	}
}
