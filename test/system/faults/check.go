package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Bounds are the limits a history is checked against.
type Bounds struct {
	// RateExtraPerChange is how many admits above a bucket's capacity one
	// ownership change may cost (a bucket restarting full: its capacity).
	RateExtraPerChange int
	// OwnershipChanges is how many ownership changes the schedule may
	// cause (one per fault episode that moves partitions).
	OwnershipChanges int
	// RingWhole bounds heal → every node sees the whole ring again.
	RingWhole time.Duration
	// Stop bounds signal → exit of a node asked to stop.
	Stop time.Duration
}

// Violation is one broken promise.
type Violation struct {
	Check  string // tokens-once, tokens-lost, lease-capacity, lease-fence, rate-admits, writes, ring, stop
	Key    string
	Detail string
}

func (v Violation) String() string { return v.Check + " " + v.Key + ": " + v.Detail }

// Report is what Check found: the violations and the figures worth
// writing down whether or not a check failed.
type Report struct {
	Violations []Violation
	Stats      Stats
}

// Stats are the measured figures of one history.
type Stats struct {
	Ops, Unknown               int
	Tokens, DoubleSpent, Lost  int
	TokensUnresolved           int
	LeaseKeys                  int
	LeaseMaxHolders            int // highest holders at one instant over all keys
	LeaseCapacity              int
	FenceBackwards             int
	RateKeysClosed             int
	RateMaxAdmitClosed         int // highest admits of one fail_closed bucket
	RateKeysOpen               int
	RateMaxAdmitOpen           int // highest admits of one fail_open bucket
	RateDegraded               int // answers carrying a degraded-fail-* reason
	RateCapacity               int
	WritesAcked, WritesMissing int
	RingWhole                  []time.Duration // per heal
	RingNeverWhole             int
	Stops                      []time.Duration
}

// Failed lists the names of the checks with at least one violation,
// sorted, without repeats.
func (r Report) Failed() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range r.Violations {
		if !seen[v.Check] {
			seen[v.Check] = true
			out = append(out, v.Check)
		}
	}
	sort.Strings(out)
	return out
}

// Summary is a one-line account of the figures.
func (s Stats) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ops=%d unknown=%d tokens=%d double-spent=%d lost-to-retry=%d unresolved=%d", s.Ops, s.Unknown, s.Tokens, s.DoubleSpent, s.Lost, s.TokensUnresolved)
	fmt.Fprintf(&b, " lease-max-holders=%d/%d fence-backwards=%d", s.LeaseMaxHolders, s.LeaseCapacity, s.FenceBackwards)
	fmt.Fprintf(&b, " rate-max-admits fail_closed=%d/%d fail_open=%d/%d degraded-answers=%d", s.RateMaxAdmitClosed, s.RateCapacity, s.RateMaxAdmitOpen, s.RateCapacity, s.RateDegraded)
	fmt.Fprintf(&b, " writes acked=%d missing=%d ring-whole=%v never-whole=%d stops=%v", s.WritesAcked, s.WritesMissing, s.RingWhole, s.RingNeverWhole, s.Stops)
	return b.String()
}

// Check runs every check over ops and events. nodes are the nodes every
// acknowledged write must be readable on after heal.
func Check(ops []Op, events []Event, nodes []string, b Bounds) Report {
	var r Report
	for _, op := range ops {
		r.Stats.Ops++
		if op.Outcome == Unknown {
			r.Stats.Unknown++
		}
	}
	r.checkTokens(ops)
	r.checkLeases(ops)
	r.checkRate(ops, b)
	r.checkWrites(ops, nodes)
	r.checkEvents(events, b)
	return r
}

func (r *Report) add(check, key, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Check: check, Key: key, Detail: fmt.Sprintf(format, args...)})
}

// checkTokens: a token succeeds for at most one idempotency key (a retry
// with the same key may repeat the first outcome), and a token that
// nobody got a success for but somebody was told "duplicate" was burnt by
// an attempt whose answer was lost: a valid token lost to its own retry.
func (r *Report) checkTokens(ops []Op) {
	type tok struct {
		success   map[string]bool // idempotency keys that got success
		anonymous int             // successes without an idempotency key
		dup, ok   int
		nodes     []string
		attempts  []string // for the report
	}
	toks := map[string]*tok{}
	var order []string
	for _, op := range ops {
		if op.Kind != KindVerify {
			continue
		}
		t := toks[op.Token]
		if t == nil {
			t = &tok{success: map[string]bool{}}
			toks[op.Token] = t
			order = append(order, op.Token)
		}
		t.attempts = append(t.attempts, fmt.Sprintf("%s@%s key=%s %s %s", op.Invoke.Format("15:04:05.000"), op.Node, op.IdemKey, op.Outcome, op.Err))
		if op.Outcome != OK {
			continue
		}
		t.ok++
		switch {
		case op.Success && op.IdemKey == "":
			t.anonymous++
			t.nodes = append(t.nodes, op.Node)
		case op.Success:
			if !t.success[op.IdemKey] {
				t.nodes = append(t.nodes, op.Node)
			}
			t.success[op.IdemKey] = true
		case op.Duplicate:
			t.dup++
		}
	}
	r.Stats.Tokens = len(toks)
	for _, k := range order {
		t := toks[k]
		n := len(t.success) + t.anonymous
		switch {
		case n > 1:
			r.Stats.DoubleSpent++
			r.add("tokens-once", k, "accepted %d times (through %v)", n, t.nodes)
		case n == 0 && t.dup > 0:
			r.Stats.Lost++
			r.add("tokens-lost", k, "never accepted, refused as duplicate %d times; attempts: %s", t.dup, strings.Join(t.attempts, "; "))
		case n == 0:
			r.Stats.TokensUnresolved++
		}
	}
}

// checkLeases: at no instant do more distinct holders hold a constraint
// key than its capacity (a holder holds from its grant's completion until
// its expiry; nothing is released in the suite), and a grant invoked
// after another completed carries a higher fence; no two holders share one.
func (r *Report) checkLeases(ops []Op) {
	type grant struct {
		holder       string
		invoke, done time.Time
		expires      time.Time
		fence        uint64
		node         string
	}
	keys := map[string][]grant{}
	capacity := map[string]int{}
	var order []string
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Kind != KindLease || op.Outcome != OK || !op.Acquired {
			continue
		}
		if _, ok := keys[op.Key]; !ok {
			order = append(order, op.Key)
		}
		capacity[op.Key] = op.Capacity
		if op.Capacity > r.Stats.LeaseCapacity {
			r.Stats.LeaseCapacity = op.Capacity
		}
		if seen[op.Key+"\x00"+op.Holder] { // an idempotent replay of a holder
			continue
		}
		seen[op.Key+"\x00"+op.Holder] = true
		keys[op.Key] = append(keys[op.Key], grant{op.Holder, op.Invoke, op.Done, op.Expires, op.Fence, op.Node})
	}
	r.Stats.LeaseKeys = len(keys)
	for _, k := range order {
		gs := keys[k]
		// Holders at each instant: +1 at done, -1 at expiry.
		type edge struct {
			at time.Time
			d  int
		}
		var edges []edge
		for _, g := range gs {
			edges = append(edges, edge{g.done, +1})
			if !g.expires.IsZero() {
				edges = append(edges, edge{g.expires, -1})
			}
		}
		sort.Slice(edges, func(i, j int) bool {
			if edges[i].at.Equal(edges[j].at) {
				return edges[i].d < edges[j].d // an expiry frees before a grant takes
			}
			return edges[i].at.Before(edges[j].at)
		})
		cur, peak := 0, 0
		for _, e := range edges {
			cur += e.d
			peak = max(peak, cur)
		}
		r.Stats.LeaseMaxHolders = max(r.Stats.LeaseMaxHolders, peak)
		if peak > capacity[k] {
			nodes := map[string]int{}
			for _, g := range gs {
				nodes[g.node]++
			}
			r.add("lease-capacity", k, "%d holders at once, capacity %d (grants by node %v)", peak, capacity[k], nodes)
		}
		// Fences: sort by completion; a grant must exceed every fence
		// completed before it was invoked.
		byDone := append([]grant(nil), gs...)
		sort.Slice(byDone, func(i, j int) bool { return byDone[i].done.Before(byDone[j].done) })
		prefixMax := make([]uint64, len(byDone))
		for i, g := range byDone {
			prefixMax[i] = g.fence
			if i > 0 {
				prefixMax[i] = max(prefixMax[i], prefixMax[i-1])
			}
		}
		fences := map[uint64]string{}
		for _, g := range gs {
			if other, ok := fences[g.fence]; ok {
				r.Stats.FenceBackwards++
				r.add("lease-fence", k, "fence %d granted to both %s and %s", g.fence, other, g.holder)
			}
			fences[g.fence] = g.holder
			n := sort.Search(len(byDone), func(i int) bool { return !byDone[i].done.Before(g.invoke) })
			if n > 0 && g.fence <= prefixMax[n-1] {
				r.Stats.FenceBackwards++
				r.add("lease-fence", k, "holder %s got fence %d through %s after a grant with fence %d had completed", g.holder, g.fence, g.node, prefixMax[n-1])
			}
		}
	}
}

// checkRate: a fail_closed bucket admits at most its capacity plus the
// bound per ownership change; fail_open buckets are only measured (their
// degraded admits are by design).
func (r *Report) checkRate(ops []Op, b Bounds) {
	admits := map[string]int{}
	capacity := map[string]int{}
	open := map[string]bool{}
	var order []string
	for _, op := range ops {
		if op.Kind != KindRate {
			continue
		}
		if _, ok := capacity[op.Key]; !ok {
			order = append(order, op.Key)
		}
		capacity[op.Key] = op.Capacity
		open[op.Key] = op.FailOpen
		r.Stats.RateCapacity = max(r.Stats.RateCapacity, op.Capacity)
		if op.Outcome == OK && op.Allowed {
			admits[op.Key]++
		}
		if op.Outcome == OK && op.Degraded {
			r.Stats.RateDegraded++
		}
	}
	limit := b.RateExtraPerChange * b.OwnershipChanges
	for _, k := range order {
		if open[k] {
			r.Stats.RateKeysOpen++
			r.Stats.RateMaxAdmitOpen = max(r.Stats.RateMaxAdmitOpen, admits[k])
			continue
		}
		r.Stats.RateKeysClosed++
		r.Stats.RateMaxAdmitClosed = max(r.Stats.RateMaxAdmitClosed, admits[k])
		if admits[k] > capacity[k]+limit {
			r.add("rate-admits", k, "admitted %d, capacity %d + bound %d (%d ownership changes × %d)", admits[k], capacity[k], limit, b.OwnershipChanges, b.RateExtraPerChange)
		}
	}
}

// checkWrites: every acknowledged write is found on every node by the
// last read of it there.
func (r *Report) checkWrites(ops []Op, nodes []string) {
	last := map[string]Op{} // object + node → latest read
	var acked []string
	for _, op := range ops {
		switch {
		case op.Kind == KindWrite && op.Outcome == OK:
			acked = append(acked, op.Object)
		case op.Kind == KindRead:
			k := op.Object + "\x00" + op.Node
			if prev, ok := last[k]; !ok || !op.Invoke.Before(prev.Invoke) {
				last[k] = op
			}
		}
	}
	r.Stats.WritesAcked = len(acked)
	for _, obj := range acked {
		var missing []string
		for _, n := range nodes {
			rd, ok := last[obj+"\x00"+n]
			if !ok || rd.Outcome != OK || !rd.Found {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			r.Stats.WritesMissing++
			r.add("writes", obj, "acknowledged but not read back on %v", missing)
		}
	}
}

// checkEvents: after every heal the ring is whole within the bound, and
// no stop takes longer than its bound.
func (r *Report) checkEvents(events []Event, b Bounds) {
	for _, e := range events {
		switch e.What {
		case "ring-whole":
			r.Stats.RingWhole = append(r.Stats.RingWhole, e.Dur.Round(10*time.Millisecond))
			if b.RingWhole > 0 && e.Dur > b.RingWhole {
				r.add("ring", e.Node, "whole again %v after heal, bound %v", e.Dur.Round(10*time.Millisecond), b.RingWhole)
			}
		case "ring-not-whole":
			r.Stats.RingNeverWhole++
			r.add("ring", e.Node, "not whole %v after heal: %s", e.Dur.Round(10*time.Millisecond), e.Note)
		case "stop":
			r.Stats.Stops = append(r.Stats.Stops, e.Dur.Round(10*time.Millisecond))
			if b.Stop > 0 && e.Dur > b.Stop {
				r.add("stop", e.Node, "stop took %v, bound %v %s", e.Dur.Round(10*time.Millisecond), b.Stop, e.Note)
			}
		}
	}
}
