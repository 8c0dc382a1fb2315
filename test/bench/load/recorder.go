package load

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds: 1 µs to 5 minutes at 3 significant
// digits, so a request that waits out any sane timeout is still recorded.
const (
	minLatencyUs = 1
	maxLatencyUs = int64(5 * time.Minute / time.Microsecond)
	sigFigs      = 3
)

func newHistogram() *hdr.Histogram { return hdr.New(minLatencyUs, maxLatencyUs, sigFigs) }

// Step is one step of the run's timeline (warm-up included), by the time a
// request was sent (or intended to be); see Result.TimelineStep.
type Step struct {
	// Count is requests sent (or intended) in the step; Completed is
	// requests whose answer arrived in it, the throughput of an open loop.
	Count     int64 `json:"count"`
	Completed int64 `json:"completed"`
	Errors    int64 `json:"errors"`
	SumUs     int64 `json:"sum_us"`
	MaxUs     int64 `json:"max_us"`
}

// MeanUs is the mean latency of the second's requests.
func (s Step) MeanUs() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.SumUs) / float64(s.Count)
}

// recorder is one goroutine's private tally.
type recorder struct {
	ops       []*hdr.Histogram
	lag       *hdr.Histogram
	requests  int64
	transport int64
	decode    int64
	status    [600]int64
	otherStat int64
	decisions [numDecisions]int64
	timeline  []Step
	step      time.Duration
}

func newRecorder(nops int, total time.Duration, openLoop bool) *recorder {
	step := timelineStep(total)
	r := &recorder{ops: make([]*hdr.Histogram, nops), timeline: make([]Step, int(total/step)+2), step: step}
	for i := range r.ops {
		r.ops[i] = newHistogram()
	}
	if openLoop {
		r.lag = newHistogram()
	}
	return r
}

func clampUs(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if us < minLatencyUs {
		return minLatencyUs
	}
	if us > maxLatencyUs {
		return maxLatencyUs
	}
	return us
}

// timelineSteps is about how many points a run's timeline has.
const timelineSteps = 120

// timelineStep cuts total into about timelineSteps steps of a round 10 ms
// multiple, so a plot of a short run is not three points.
func timelineStep(total time.Duration) time.Duration {
	step := (total/timelineSteps + 10*time.Millisecond - 1).Truncate(10 * time.Millisecond)
	return max(step, 10*time.Millisecond)
}

// timeline records every request by its (intended) send offset, warm-up too.
func (r *recorder) timelineAdd(at, lat time.Duration, failed bool) {
	sec := int(at / r.step)
	if sec < 0 || sec >= len(r.timeline) {
		return
	}
	s := &r.timeline[sec]
	s.Count++
	us := clampUs(lat)
	s.SumUs += us
	if us > s.MaxUs {
		s.MaxUs = us
	}
	if failed {
		s.Errors++
	}
	// An answer that arrives after the last step is counted in it.
	done := min(int((at+lat)/r.step), len(r.timeline)-1)
	r.timeline[done].Completed++
}

// record tallies a measured request. Transport failures are counted but kept
// out of the latency histogram: a refused connection answers in microseconds
// and would make a broken run look fast.
func (r *recorder) record(o Outcome, lat time.Duration) {
	r.requests++
	switch o.Kind {
	case Transport:
		r.transport++
		return
	case Decode:
		r.decode++
	case Status:
		if int(o.Status) < len(r.status) {
			r.status[o.Status]++
		} else {
			r.otherStat++
		}
	}
	if o.Decision < numDecisions {
		r.decisions[o.Decision]++
	}
	op := int(o.Op)
	if op >= len(r.ops) {
		op = 0
	}
	_ = r.ops[op].RecordValue(clampUs(lat))
}
