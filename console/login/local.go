package login

import (
	"sync"
	"time"
)

// local is the node-local fallback of the cluster-wide buckets: GCRA per
// key, a burst then one per interval, used only when a bucket's owner
// node cannot be reached. Bounded: at most max keys are held; when full,
// keys whose allowance is back to a full burst are dropped, and if none
// is, a new key is refused (known keys still count normally) until keys
// age out.
type local struct {
	mu  sync.Mutex
	tat map[string]time.Time
	max int
}

func newLocal(max int) *local {
	return &local{tat: map[string]time.Time{}, max: max}
}

// take admits cost (0 or 1) attempts on key at now, with a burst of burst
// then one per interval; cost 0 only asks whether one would be admitted.
// When refused it returns how long to wait.
func (l *local) take(key string, interval time.Duration, burst int, cost int, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, ok := l.tat[key]
	if !ok && len(l.tat) >= l.max {
		for k, t := range l.tat {
			if !t.After(now) {
				delete(l.tat, k)
			}
		}
		if len(l.tat) >= l.max {
			return false, interval
		}
	}
	if tat.Before(now) {
		tat = now
	}
	tolerance := interval * time.Duration(burst)
	next := tat.Add(interval)
	if next.Sub(now) > tolerance {
		return false, next.Sub(now) - tolerance
	}
	if cost > 0 {
		l.tat[key] = next
	}
	return true, 0
}
