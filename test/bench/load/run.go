package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// ErrBadConfig is returned for a run that cannot be bounded or has no workers.
var ErrBadConfig = errors.New("load: bad config")

// Config bounds a run.
type Config struct {
	// Duration is the measured phase, after Warmup.
	Duration time.Duration
	// Warmup is sent like the rest but excluded from the results.
	Warmup time.Duration
	// Connections is the number of goroutines, each with its own Worker.
	Connections int
	// Rate, if positive, makes the run open-loop at Rate sends per second
	// spread over all goroutines; zero means closed loop.
	Rate float64
	// Ops names the operations a Worker reports in Outcome.Op; empty means
	// a single operation called "request".
	Ops []string
	// AtMeasureStart, if set, is called once when the warm-up ends (from
	// another goroutine), to sample counters such as a server's CPU time.
	AtMeasureStart func()
}

func (c Config) validate() error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("%w: duration must be positive", ErrBadConfig)
	case c.Warmup < 0:
		return fmt.Errorf("%w: warm-up must not be negative", ErrBadConfig)
	case c.Connections < 1:
		return fmt.Errorf("%w: need at least one connection", ErrBadConfig)
	case c.Rate < 0:
		return fmt.Errorf("%w: rate must not be negative", ErrBadConfig)
	case len(c.Ops) > 255:
		return fmt.Errorf("%w: too many operations", ErrBadConfig)
	}
	return nil
}

// OpResult is the latency of one operation of the mix.
type OpResult struct {
	Name    string
	Latency *hdr.Histogram
}

// Result is a run's merged tally; everything but Timeline excludes warm-up.
type Result struct {
	Config Config
	// Elapsed is the measured phase's length: Duration, or less if the run
	// was interrupted or the workers ran out of work.
	Elapsed time.Duration
	// Requests counts every measured request, failed ones included.
	Requests int64
	// Latency merges all operations (transport failures excluded).
	Latency *hdr.Histogram
	Ops     []OpResult
	// SendLag (open loop only) is how late each send left against its
	// intended time: generator overshoot plus backlog. Latency includes it.
	SendLag   *hdr.Histogram
	Transport int64
	Decode    int64
	// Status counts answers by unexpected HTTP status (or 0 for a protocol
	// error reply that has no status).
	Status    map[int]int64
	Decisions map[Decision]int64
	// Unsent (open loop only) counts measured sends the schedule intended
	// but that no goroutine was free to send before the end: the backlog.
	Unsent int64
	// Exhausted says the workers ran out of work; ExhaustedAt is when,
	// measured from the start of the run.
	Exhausted   bool
	ExhaustedAt time.Duration
	// Interrupted says the context was cancelled before the end.
	Interrupted bool
	// Timeline covers the whole run in steps of TimelineStep.
	Timeline     []Step
	TimelineStep time.Duration
}

// Throughput is measured requests per second of the measured phase.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Errors is the number of measured requests that failed in any way.
func (r *Result) Errors() int64 {
	n := r.Transport + r.Decode
	for _, c := range r.Status {
		n += c
	}
	return n
}

// Run drives cfg.Connections workers made by newWorker until the warm-up and
// duration have passed, the workers are exhausted, or ctx is cancelled. It
// always returns by itself: no send starts after the end.
func Run(ctx context.Context, cfg Config, newWorker func(i int) (Worker, error)) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(cfg.Ops) == 0 {
		cfg.Ops = []string{"request"}
	}
	workers := make([]Worker, cfg.Connections)
	closeAll := func() {
		for _, w := range workers {
			if c, ok := w.(io.Closer); ok && c != nil {
				_ = c.Close()
			}
		}
	}
	for i := range workers {
		w, err := newWorker(i)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("load: worker %d: %w", i, err)
		}
		workers[i] = w
	}
	defer closeAll()

	total := cfg.Warmup + cfg.Duration
	r := &run{cfg: cfg, total: total, recs: make([]*recorder, cfg.Connections)}
	if cfg.Rate > 0 {
		r.sched = NewSchedule(cfg.Rate)
	}
	for i := range r.recs {
		r.recs[i] = newRecorder(len(cfg.Ops), total, r.sched != nil)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-runCtx.Done()
		r.stop.Store(true)
	}()

	r.start = time.Now()
	if cfg.AtMeasureStart != nil {
		if cfg.Warmup == 0 {
			cfg.AtMeasureStart()
		} else {
			t := time.AfterFunc(cfg.Warmup, cfg.AtMeasureStart)
			defer t.Stop()
		}
	}
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.sched != nil {
				r.openLoop(runCtx, w, r.recs[i])
			} else {
				r.closedLoop(w, r.recs[i])
			}
		}()
	}
	wg.Wait()
	end := time.Since(r.start)
	interrupted := ctx.Err() != nil
	cancel()
	return r.merge(end, interrupted), nil
}

type run struct {
	cfg   Config
	total time.Duration
	start time.Time
	sched *Schedule
	recs  []*recorder
	stop  atomic.Bool

	exhaustOnce sync.Once
	exhaustedAt atomic.Int64 // offset from start, ns; 0 = not exhausted
}

func (r *run) exhausted(at time.Duration) {
	r.exhaustOnce.Do(func() {
		if at < 1 {
			at = 1
		}
		r.exhaustedAt.Store(int64(at))
		r.stop.Store(true)
	})
}

func (r *run) closedLoop(w Worker, rec *recorder) {
	for !r.stop.Load() {
		sent := time.Since(r.start)
		if sent >= r.total {
			return
		}
		if !r.send(w, rec, sent) {
			return
		}
	}
}

// send makes one request of w, intended at offset at, and records it
// (past the warm-up); false means w had nothing left to send.
func (r *run) send(w Worker, rec *recorder, at time.Duration) bool {
	o := w.Do()
	lat := time.Since(r.start) - at
	if o.Kind == Exhausted {
		r.exhausted(at)
		return false
	}
	rec.timelineAdd(at, lat, o.Kind != OK)
	if at >= r.cfg.Warmup {
		rec.record(o, lat)
	}
	return true
}

func (r *run) openLoop(ctx context.Context, w Worker, rec *recorder) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for !r.stop.Load() {
		intended := r.sched.Claim()
		if intended >= r.total {
			return
		}
		now := time.Since(r.start)
		if wait := intended - now; wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
			now = time.Since(r.start)
		}
		if now >= r.total {
			// The schedule is behind by more than what is left: what is not
			// sent by the end is counted as backlog, not sent late.
			return
		}
		if !r.send(w, rec, intended) {
			return
		}
		if intended >= r.cfg.Warmup {
			_ = rec.lag.RecordValue(clampUs(now - intended))
		}
	}
}

func (r *run) merge(end time.Duration, interrupted bool) *Result {
	res := &Result{
		Config:      r.cfg,
		Latency:     newHistogram(),
		Status:      map[int]int64{},
		Decisions:   map[Decision]int64{},
		Interrupted: interrupted,
	}
	stopAt := min(end, r.total)
	if at := time.Duration(r.exhaustedAt.Load()); at > 0 {
		res.Exhausted, res.ExhaustedAt = true, at
		stopAt = min(stopAt, at)
	}
	res.Elapsed = max(stopAt-r.cfg.Warmup, 0)
	for i, name := range r.cfg.Ops {
		op := OpResult{Name: name, Latency: newHistogram()}
		for _, rec := range r.recs {
			op.Latency.Merge(rec.ops[i])
		}
		res.Latency.Merge(op.Latency)
		res.Ops = append(res.Ops, op)
	}
	if r.sched != nil {
		res.SendLag = newHistogram()
	}
	res.Timeline = make([]Step, len(r.recs[0].timeline))
	res.TimelineStep = r.recs[0].step
	for _, rec := range r.recs {
		res.Requests += rec.requests
		res.Transport += rec.transport
		res.Decode += rec.decode
		for code, n := range rec.status {
			if n > 0 {
				res.Status[code] += n
			}
		}
		if rec.otherStat > 0 {
			res.Status[0] += rec.otherStat
		}
		for d, n := range rec.decisions {
			if n > 0 {
				res.Decisions[Decision(d)] += n
			}
		}
		if rec.lag != nil {
			res.SendLag.Merge(rec.lag)
		}
		for s, sec := range rec.timeline {
			t := &res.Timeline[s]
			t.Count += sec.Count
			t.Completed += sec.Completed
			t.Errors += sec.Errors
			t.SumUs += sec.SumUs
			t.MaxUs = max(t.MaxUs, sec.MaxUs)
		}
	}
	if r.sched != nil && !res.Exhausted && !interrupted {
		intended := r.sched.Count(r.cfg.Warmup, r.total)
		res.Unsent = max(intended-res.Requests, 0)
	}
	return res
}
