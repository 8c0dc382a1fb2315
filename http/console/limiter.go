package console

import (
	"sync"
	"time"
)

// loginLimiter bounds login attempts per client IP with GCRA: a burst of
// attempts, then one per interval. It is the console's own small limiter
// rather than the node's ingress limiter, because ingress counts whole
// requests per second (its finest rate is 1/s) while a login needs a rate
// of a few per minute. It is node-local, like the sessions it guards, and
// bounded: at most max keys are held; when full, keys whose allowance is
// back to a full burst are dropped, and if none is, new IPs are refused
// (attempts from known IPs still count normally) until keys age out.
type loginLimiter struct {
	mu       sync.Mutex
	tat      map[string]time.Time
	interval time.Duration
	burst    int
	max      int
}

func newLoginLimiter(interval time.Duration, burst, max int) *loginLimiter {
	return &loginLimiter{tat: map[string]time.Time{}, interval: interval, burst: burst, max: max}
}

// allow admits one attempt from key at now; when refused it returns how
// long to wait.
func (l *loginLimiter) allow(key string, now time.Time) (bool, time.Duration) {
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
			return false, l.interval
		}
	}
	if tat.Before(now) {
		tat = now
	}
	tolerance := l.interval * time.Duration(l.burst)
	next := tat.Add(l.interval)
	if next.Sub(now) > tolerance {
		return false, next.Sub(now) - tolerance
	}
	l.tat[key] = next
	return true, 0
}
