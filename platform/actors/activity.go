package actors

// Account activity (Account Defence, spec 4.3): per key, a subject's or a
// device's keyed hash, the failed authentications in a sliding window and
// a bounded set of the counterparts seen with it (the devices of a
// subject, the subjects of a device), each with when it was last seen and
// whether an event with it ever succeeded. One op both records and reads,
// so an assessment costs one ask per key, and a read (Record false) never
// creates an entry, so the Trust API can look without counting.
//
// The set is bounded by MaxMembers (at most MaxActivityMembers): when it is
// full the least recently seen member is forgotten. Forgetting only makes a
// device look new again, which raises risk, so eviction fails safe. Entries
// are dropped RetainNs after their last recorded event, or two windows
// after it while none of their members ever succeeded (so a flood of
// made-up subjects, each failing once, is forgotten within two hours
// instead of filling the table for a month); they do not move with their
// partition on a hand-off (like velocity counters, a new owner starts
// afresh).

// MaxActivityMembers bounds the counterparts one key remembers.
const MaxActivityMembers = 64

type activityTable struct {
	m map[string]*activity
}

type activity struct {
	start     int64 // start of the current failure window
	cur, prev float64
	members   []activityMember
	seen      int64 // last recorded event
	retain    int64 // RetainNs of the last recorded event
	window    int64 // WindowNs of the last recorded event
	proven    bool  // a member succeeded
}

// keep is how long after its last event the entry is kept.
func (a *activity) keep() int64 {
	if a.proven {
		return a.retain
	}
	return 2 * a.window
}

type activityMember struct {
	hash string
	last int64
	ok   bool // an event with this member succeeded
}

func newActivityTable() *activityTable { return &activityTable{m: make(map[string]*activity)} }

// Sweep drops keys whose last event is older than their retention.
func (t *activityTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(a *activity) bool {
		return now-a.seen > a.keep()
	})
}

// evictOne makes room in a full table. Unlike a marker table, which must
// refuse rather than forget, a full activity table forgets: refusing would
// fail every new subject's assessment (a flood of made-up usernames would
// deny service to real users), while forgetting makes one key look new,
// which mostly raises risk. Of a few entries the map walk yields (Go starts
// it at a random place) it drops one never proven, else the first.
func (t *activityTable) evictOne() {
	victim, n := "", 0
	for k, a := range t.m {
		if victim == "" || !a.proven {
			victim = k
		}
		if n++; !a.proven || n == 8 {
			break
		}
	}
	delete(t.m, victim)
}

// Len implements Sizer.
func (t *activityTable) Len() int { return len(t.m) }

// Activity records one event for Key (when Record) and reports what is
// known of Key: failures over the last WindowNs (a sliding estimate from
// the current and previous fixed windows, this event included), the
// distinct members seen within WindowNs, and whether Member was seen
// before this op (Seen) and was part of a succeeded event (Known).
//
//actors:wire account.activity Activity ActivityResult
type Activity struct {
	Key    string `wire:"op"`
	Member string `wire:"op"` // counterpart hash, or "" for none
	Record bool   `wire:"op"` // false: read only, nothing is created or changed
	// Failed counts a failure; Succeeded marks Member as known good.
	Failed, Succeeded bool  `wire:"op"`
	WindowNs          int64 `wire:"op"`
	RetainNs          int64 `wire:"op"` // how long members and the key are kept (≥ WindowNs)
	MaxMembers        int   `wire:"op" wiredec:"int(min(max($, 0), MaxActivityMembers))"`

	Failures float64 `wire:"result"`
	Distinct int     `wire:"result"`
	Seen     bool    `wire:"result"`
	Known    bool    `wire:"result"`
}

// Apply implements Op.
func (o *Activity) Apply(st *State) {
	o.Failures, o.Distinct, o.Seen, o.Known = 0, 0, false, false
	if o.WindowNs <= 0 {
		o.WindowNs = 3600e9
	}
	o.RetainNs = max(o.RetainNs, o.WindowNs)
	o.MaxMembers = min(max(o.MaxMembers, 1), MaxActivityMembers)
	now := st.Now
	t := Slot(st, KindActivity, newActivityTable)
	a := t.m[o.Key]
	if a != nil && now-a.seen > a.keep() {
		delete(t.m, o.Key)
		a = nil
	}
	if a == nil {
		if !o.Record {
			return
		}
		if st.maxKeys > 0 && len(t.m) >= st.maxKeys {
			t.evictOne()
		}
		a = &activity{start: now}
		t.m[o.Key] = a
	}
	// Roll the failure window forward, as Hit does.
	if elapsed := now - a.start; elapsed >= o.WindowNs {
		n := elapsed / o.WindowNs
		if n == 1 {
			a.prev = a.cur
		} else {
			a.prev = 0
		}
		a.cur = 0
		a.start += n * o.WindowNs
	}
	retain := o.RetainNs
	if !o.Record {
		retain = a.retain
	}
	a.members = dropStale(a.members, now-retain)
	idx := -1
	if o.Member != "" {
		for i := range a.members {
			if a.members[i].hash == o.Member {
				idx = i
				break
			}
		}
	}
	if idx >= 0 {
		o.Seen, o.Known = true, a.members[idx].ok
	}
	if o.Record {
		if o.Failed {
			a.cur++
		}
		if o.Member != "" {
			if idx < 0 {
				if len(a.members) >= o.MaxMembers {
					a.members = evictOldest(a.members, o.MaxMembers-1)
				}
				a.members = append(a.members, activityMember{hash: o.Member})
				idx = len(a.members) - 1
			}
			m := &a.members[idx]
			m.last, m.ok = now, m.ok || o.Succeeded
			a.proven = a.proven || m.ok
		}
		a.seen, a.retain, a.window = now, o.RetainNs, o.WindowNs
	}
	for _, m := range a.members {
		if now-m.last < o.WindowNs {
			o.Distinct++
		}
	}
	frac := float64(now-a.start) / float64(o.WindowNs)
	o.Failures = a.cur + a.prev*(1-frac)
}

// dropStale removes members last seen before cutoff, in place.
func dropStale(ms []activityMember, cutoff int64) []activityMember {
	out := ms[:0]
	for _, m := range ms {
		if m.last >= cutoff {
			out = append(out, m)
		}
	}
	return out
}

// evictOldest removes the least recently seen members until n remain.
func evictOldest(ms []activityMember, n int) []activityMember {
	for len(ms) > n {
		old := 0
		for i := range ms {
			if ms[i].last < ms[old].last {
				old = i
			}
		}
		ms = append(ms[:old], ms[old+1:]...)
	}
	return ms
}
