package actors

import "github.com/trustd/trustd/platform/lib/ratelimit"

// Rate-limit state: one entry per workspace + policy + keyed hash of the
// scope value (the caller builds the key; simulation state of observe-mode
// policies lives under its own keys (the caller marks the space in the
// key's first byte), so it can never touch live capacity). An entry holds the policy's token bucket and, when the
// policy has one, its fixed quota; both are changed by one op, so the
// owning shard checks and consumes them atomically.
//
// The op carries the policy's current settings rather than the entry
// remembering them, so a PATCHed capacity or refill takes effect on the
// next check. Entries are never evicted while they hold information: the
// Sweeper drops an entry only once its bucket has refilled to capacity and
// its quota window (if any) has no consumption left in it, when it is
// indistinguishable from a key that was never seen.

// bucketEntry is one key's state. cfg and window are the settings of the
// latest op, which the sweeper uses to decide whether the entry is idle.
type bucketEntry struct {
	b         ratelimit.Bucket
	cfg       ratelimit.BucketConfig
	q         ratelimit.Quota
	window    ratelimit.Window // 0: the policy has no quota
	partition int32            // for hand-off (bucket_wire.go)
}

// idle reports whether dropping e loses nothing at now.
func (e *bucketEntry) idle(now int64) bool {
	if !e.b.Full(e.cfg, now) {
		return false
	}
	return e.window == 0 || e.q.Used == 0 || ratelimit.WindowEnd(e.window, e.q.Start) <= now
}

type bucketTable struct {
	m map[string]*bucketEntry
}

func newBucketTable() *bucketTable { return &bucketTable{m: make(map[string]*bucketEntry)} }

// Sweep drops idle entries.
func (t *bucketTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(e *bucketEntry) bool {
		return e.idle(now)
	})
}

// Len is the number of keys held (tests, metrics).
func (t *bucketTable) Len() int { return len(t.m) }

// BucketRefusal says which part of a policy refused a Reserve.
type BucketRefusal uint8

// Reasons a Reserve did not take.
const (
	RefusedNone BucketRefusal = iota
	RefusedBucket
	RefusedQuota
)

// Reserve takes Cost tokens from the key's bucket and Cost units from its
// quota (when QuotaLimit > 0), both or neither. A key seen for the first
// time starts full.
//
//actors:wire bucket.reserve Reserve ReserveResult
type Reserve struct {
	Key         string                 `wire:"op"`
	Bucket      ratelimit.BucketConfig `wire:"op" wirevia:"bucketConfig"`
	QuotaLimit  int64                  `wire:"op"`
	QuotaWindow ratelimit.Window       `wire:"op"`
	Cost        int64                  `wire:"op"`

	// Results.
	OK        bool          `wire:"result"`
	Refused   BucketRefusal `wire:"result"`
	Remaining int64         `wire:"result"` // tokens left after the op
	// RetryAfterNs is the wait until the cost fits (0 when OK;
	// ratelimit.Never when it never will).
	RetryAfterNs   int64 `wire:"result"`
	QuotaRemaining int64 `wire:"result"`
	QuotaResetNs   int64 `wire:"result"` // end of the quota window (Unix ns), or ratelimit.Never
	QuotaStart     int64 `wire:"result"` // the window the op counted in; a Refund names it
}

// Apply implements Op.
func (o *Reserve) Apply(st *State) {
	t := Slot(st, KindBucket, newBucketTable)
	e := t.m[o.Key]
	if e == nil {
		if !st.Room(KindBucket, len(t.m)) {
			return
		}
		e = &bucketEntry{b: ratelimit.NewBucket(o.Bucket, st.Now), partition: int32(st.Partition)}
		t.m[o.Key] = e
	}
	e.cfg = o.Bucket
	if o.QuotaLimit > 0 {
		e.window = o.QuotaWindow
	}
	ok, rem, retry := e.b.Take(o.Bucket, st.Now, o.Cost)
	o.Remaining, o.RetryAfterNs = rem, retry
	o.QuotaRemaining, o.QuotaResetNs, o.QuotaStart = 0, 0, 0
	if !ok {
		o.OK, o.Refused = false, RefusedBucket
		if o.QuotaLimit > 0 {
			o.QuotaRemaining, o.QuotaResetNs, o.QuotaStart = peekQuota(e.q, o.QuotaLimit, o.QuotaWindow, st.Now)
			// Waiting for tokens does not help while the quota is spent too.
			if o.QuotaRemaining < o.Cost && o.RetryAfterNs != ratelimit.Never {
				if o.QuotaResetNs == ratelimit.Never {
					o.RetryAfterNs = ratelimit.Never
				} else {
					o.RetryAfterNs = max(o.RetryAfterNs, o.QuotaResetNs-st.Now)
				}
			}
		}
		return
	}
	if o.QuotaLimit > 0 {
		qok, qrem, reset := e.q.Take(o.QuotaLimit, o.QuotaWindow, st.Now, o.Cost)
		o.QuotaRemaining, o.QuotaResetNs, o.QuotaStart = qrem, reset, e.q.Start
		if !qok {
			e.b.Refund(o.Bucket, o.Cost)
			o.Remaining = e.b.Tokens
			o.OK, o.Refused = false, RefusedQuota
			o.RetryAfterNs = ratelimit.Never
			if reset != ratelimit.Never {
				o.RetryAfterNs = max(reset-st.Now, 0)
			}
			return
		}
	}
	o.OK, o.Refused, o.RetryAfterNs = true, RefusedNone, 0
}

// peekQuota reports a quota's state at now without consuming.
func peekQuota(q ratelimit.Quota, limit int64, w ratelimit.Window, now int64) (remaining, resetAt, start int64) {
	_, remaining, resetAt = q.Take(limit, w, now, 0) // q is a copy
	return remaining, resetAt, max(q.Start, ratelimit.WindowStart(w, now))
}

// Refund undoes a Reserve that took, for a check that another policy
// refused. The quota is credited only while the window the Reserve counted
// in is still the current one; crediting a later window would mint quota.
//
//actors:wire bucket.refund Refund
type Refund struct {
	Key        string                 `wire:"op"`
	Bucket     ratelimit.BucketConfig `wire:"op" wirevia:"bucketConfig"`
	Cost       int64                  `wire:"op"`
	QuotaStart int64                  `wire:"op"` // from the Reserve; 0 when it took no quota
	QuotaLimit int64                  `wire:"op"`
}

// Apply implements Op.
func (o *Refund) Apply(st *State) {
	t := Slot(st, KindBucket, newBucketTable)
	e := t.m[o.Key]
	if e == nil {
		return // swept: it was full, so nothing is owed
	}
	e.b.Refund(o.Bucket, o.Cost)
	if o.QuotaLimit > 0 && e.q.Start == o.QuotaStart {
		e.q.Refund(o.Cost)
	}
}
