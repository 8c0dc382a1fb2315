package ratelimit

// Quota is the state of one fixed quota: Used units consumed in the window
// that starts at Start. The zero Quota is a fresh one. Like Bucket, its
// fields are exported for persistence and change only through the methods.
type Quota struct {
	Start int64
	Used  int64
}

// Take consumes cost units of limit in the window of w holding now, starting
// a fresh window first if the calendar has rolled over. resetAtNs is the end
// of the window being counted, or Never when cost exceeds limit so no reset
// can help. A clock that reads a window earlier than Start keeps counting
// against the later window instead of reopening a spent one. A negative
// cost or limit counts as zero.
func (q *Quota) Take(limit int64, w Window, now, cost int64) (ok bool, remaining, resetAtNs int64) {
	if start := WindowStart(w, now); start > q.Start {
		q.Start, q.Used = start, 0
	}
	if q.Used < 0 {
		q.Used = 0 // only a corrupted snapshot gets here
	}
	cost, limit = max(cost, 0), max(limit, 0)
	resetAtNs = WindowEnd(w, q.Start)
	if cost > limit {
		resetAtNs = Never
	}
	// Compare by subtraction: Used+cost could overflow, limit-Used cannot
	// once Used is non-negative.
	if cost <= limit-q.Used {
		q.Used += cost
		return true, limit - q.Used, resetAtNs
	}
	return false, max(limit-q.Used, 0), resetAtNs
}

// Refund gives back cost units to the window currently counted, for a check
// that took and must then be undone. Refund in the same step as the Take: a
// refund issued after a later Take rolled the window would credit the new
// window. Used never goes below zero.
func (q *Quota) Refund(cost int64) {
	if cost <= 0 {
		return
	}
	q.Used = max(q.Used-cost, 0)
}
