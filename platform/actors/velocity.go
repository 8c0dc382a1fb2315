package actors

// Velocity counters: how often something happened over the last window
// (a sliding estimate from the current and previous fixed windows) and
// its long-run average per window (an exponentially weighted mean over
// about an hour of windows), per key. The challenge endpoint keeps one per
// client IP and site and one per site, to raise proof-of-work difficulty.

const (
	// velocityAlpha weights each finished window in the average: about
	// the last 60 windows count.
	velocityAlpha = 1.0 / 60
	// velocityIdle is how long an untouched counter is kept, Unix ns.
	velocityIdle = int64(3600e9)
)

type velocity struct {
	start     int64 // start of the current window
	cur, prev float64
	avg       float64
	warm      bool // avg has seen a finished window
	seen      int64
}

type challengeRateTable struct {
	m map[string]*velocity
}

func newChallengeRateTable() *challengeRateTable {
	return &challengeRateTable{m: make(map[string]*velocity)}
}

func (t *challengeRateTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(v *velocity) bool {
		return now-v.seen > velocityIdle
	})
}

// Hit counts one event for Key with window Window (ns) and reports the
// rate over the last window, this event included, and the average per
// window before it (0 until a window has finished).
//
//actors:wire challenge_rate.hit Hit HitResult
type Hit struct {
	Key    string `wire:"op"`
	Window int64  `wire:"op"`

	Rate     float64 `wire:"result"`
	Baseline float64 `wire:"result"`
}

// Apply implements Op.
func (o *Hit) Apply(st *State) {
	if o.Window <= 0 {
		o.Window = 60e9
	}
	t := Slot(st, KindChallengeRate, newChallengeRateTable)
	v := t.m[o.Key]
	now := st.Now
	if v == nil {
		if !st.Room(KindChallengeRate, len(t.m)) {
			return
		}
		v = &velocity{start: now}
		t.m[o.Key] = v
	}
	v.roll(now, o.Window)
	v.cur++
	v.seen = now
	o.Rate, o.Baseline = v.rate(now, o.Window), v.avg
}

// PeekHit reports what a Hit of Key with window Window would report
// before its own event: the rate over the last window and the average per
// window, counting nothing, creating no entry and not keeping an idle one
// alive (an unknown key reports 0 and 0). A decision reads counters that
// other events feed (an agent's failed signatures and denied approvals)
// with it; a Hit there would count the reading itself.
//
//actors:wire challenge_rate.peek Hit HitResult
type PeekHit struct {
	Key    string `wire:"op"`
	Window int64  `wire:"op"`

	Rate     float64 `wire:"result"`
	Baseline float64 `wire:"result"`
}

// Apply implements Op.
func (o *PeekHit) Apply(st *State) {
	if o.Window <= 0 {
		o.Window = 60e9
	}
	o.Rate, o.Baseline = 0, 0
	t := Slot(st, KindChallengeRate, newChallengeRateTable)
	v := t.m[o.Key]
	if v == nil {
		return
	}
	r := *v // roll a copy: the table is left as it was
	r.roll(st.Now, o.Window)
	o.Rate, o.Baseline = r.rate(st.Now, o.Window), r.avg
}

// roll moves v's current window forward to the one holding now, folding
// the finished windows into the average: the current one with its count,
// any further ones as empty (at most an hour's).
func (v *velocity) roll(now, window int64) {
	elapsed := now - v.start
	if elapsed < window {
		return
	}
	n := elapsed / window
	for i := int64(0); i < n && i < 60; i++ {
		c := 0.0
		if i == 0 {
			c = v.cur
		}
		if !v.warm {
			v.avg, v.warm = c, true
		} else {
			v.avg += velocityAlpha * (c - v.avg)
		}
	}
	if n == 1 {
		v.prev = v.cur
	} else {
		v.prev = 0
	}
	v.cur = 0
	v.start += n * window
}

// rate is the sliding estimate over the last window at now (v rolled to
// now): the current window's count and the part of the previous one the
// window still covers.
func (v *velocity) rate(now, window int64) float64 {
	frac := float64(now-v.start) / float64(window)
	return v.cur + v.prev*(1-frac)
}
