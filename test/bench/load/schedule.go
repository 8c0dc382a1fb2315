package load

import (
	"sync/atomic"
	"time"
)

// Schedule is the open-loop arrival plan: send i is intended at i×Interval
// after the start, whoever happens to be free to send it. Workers claim sends
// in order from a shared counter, so when all of them are stuck the backlog
// is sent as soon as one frees up, and its latency still counts from the
// intended time.
type Schedule struct {
	interval time.Duration
	next     atomic.Int64
}

// NewSchedule returns a schedule of rate sends per second.
func NewSchedule(rate float64) *Schedule {
	iv := time.Duration(float64(time.Second) / rate)
	if iv < 1 {
		iv = 1
	}
	return &Schedule{interval: iv}
}

// Interval is the time between two intended sends.
func (s *Schedule) Interval() time.Duration { return s.interval }

// Claim takes the next send and returns its intended offset from the start.
func (s *Schedule) Claim() time.Duration {
	return time.Duration(s.next.Add(1)-1) * s.interval
}

// Claimed is how many sends have been claimed so far.
func (s *Schedule) Claimed() int64 { return s.next.Load() }

// Count is how many sends the schedule intends in [from, to).
func (s *Schedule) Count(from, to time.Duration) int64 {
	return ceilDiv(to, s.interval) - ceilDiv(from, s.interval)
}

func ceilDiv(d, iv time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + iv - 1) / iv)
}
