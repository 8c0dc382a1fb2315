package actors

import (
	"sync"
	"time"
)

// Asks reach a shard in batches, and a shard's mailbox runs on a goroutine
// of its own.
//
// The shard actor stays the only code that touches its State: every op is
// applied inside Receive, one after another, in the order the asks were
// queued. What changed is how an ask gets there (measured in
// test/bench/RESULTS.md, "Speed, session 2"):
//
//   - A caller appends its request to the shard's batch queue (a slice under
//     a short lock) and sends the actor a drainBatch message only when no
//     drain is already posted. The actor takes the whole queue in one
//     Receive, applies every op in order and answers each caller on its own
//     channel. Under load, many asks share one mailbox message; idle, an
//     ask costs what it did (one message, one answer).
//   - What the poster does not run itself (mailbox.go) runs on a pinned
//     goroutine per shard (a protoactor Dispatcher, like Akka's
//     PinnedDispatcher) instead of a new goroutine each time the mailbox
//     wakes: the runtime's goroutine dispatcher paid, per ask, a goroutine
//     start and exit and the growth of its 2 KiB stack to the depth of
//     Receive (copystack was 40 % of BenchmarkLocalAsk's CPU).

// drainBatch tells a shard to apply the requests queued for it.
type drainBatch struct{}

// batchQueue holds the requests queued for one shard. posted is true while
// a drainBatch is in the shard's mailbox or being handled; the handler
// clears it, under mu, only when it found the queue empty, so a request is
// never left without a drain coming.
type batchQueue struct {
	mu      sync.Mutex
	pending []*request
	spare   []*request // the previous batch's array, handed back empty
	posted  bool
	_       [64]byte // keep shards' locks on their own cache lines
}

// add queues req and reports whether the caller must post a drainBatch.
func (q *batchQueue) add(req *request) (post bool) {
	q.mu.Lock()
	q.pending = append(q.pending, req)
	post = !q.posted
	q.posted = true
	q.mu.Unlock()
	return post
}

// take returns the queued requests, or nil after clearing posted when there
// are none. The returned slice is the actor's until it hands it back with
// the next take.
func (q *batchQueue) take(done []*request) []*request {
	q.mu.Lock()
	defer q.mu.Unlock()
	if done != nil {
		q.spare = done[:0]
	}
	if len(q.pending) == 0 {
		q.posted = false
		return nil
	}
	batch := q.pending
	q.pending = q.spare
	q.spare = nil
	return batch
}

// maxBatchRounds bounds how many batches one drainBatch message applies
// before the shard posts itself another, so a sweep tick queued meanwhile
// runs between them.
const maxBatchRounds = 4

// applyBatch applies the queued requests, in order, until the queue is
// empty or maxBatchRounds batches were applied; it reports whether requests
// are still queued (posted stays set: the caller posts the next drain).
func (a *shard) applyBatch() (more bool) {
	var batch []*request
	for range maxBatchRounds {
		if batch = a.q.take(batch); batch == nil {
			return false
		}
		for i, m := range batch {
			batch[i] = nil // m belongs to its caller once answered
			a.apply(m)
		}
	}
	a.q.mu.Lock()
	a.q.spare = batch[:0]
	more = len(a.q.pending) > 0
	if !more {
		a.q.posted = false
	}
	a.q.mu.Unlock()
	return more
}

// apply runs one request's op and answers its caller.
func (a *shard) apply(m *request) {
	a.st.Now, a.st.Partition, a.st.refused = a.clock(), m.partition, false
	m.panicked = !a.safely(m.op, func() { m.op.Apply(&a.st) })
	m.refused = a.st.refused
	m.done <- struct{}{}
}

// pinnedDispatcher runs a mailbox on one long-lived goroutine. protoactor
// schedules a mailbox only when it moves from idle to running, so at most
// one run is waiting at any time; the buffer lets Schedule return at once.
type pinnedDispatcher struct {
	work chan func()
	quit chan struct{}
	once sync.Once
}

func newPinnedDispatcher() *pinnedDispatcher {
	d := &pinnedDispatcher{work: make(chan func(), 4), quit: make(chan struct{})}
	go d.run()
	return d
}

func (d *pinnedDispatcher) run() {
	for {
		select {
		case fn := <-d.work:
			fn()
		case <-d.quit:
			return
		}
	}
}

// Schedule implements actor.Dispatcher.
func (d *pinnedDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	case <-d.quit:
	}
}

// Throughput implements actor.Dispatcher: messages between yields, as
// protoactor's default.
func (d *pinnedDispatcher) Throughput() int { return 300 }

func (d *pinnedDispatcher) stop() { d.once.Do(func() { close(d.quit) }) }

// AskAll runs ops[i] on the shard that owns parts[i], like Ask for each,
// but queues every op before waiting for any: ops on different shards run
// at the same time and the caller waits once for the slowest rather than
// once per op. Ops on one shard run in the order given. errs[i] receives
// op i's error (nil: it ran and its result fields are set); all share one
// bound, timeout.
func (s *System) AskAll(parts []int, ops []Op, errs []error, timeout time.Duration) {
	select {
	case <-s.stop:
		for i := range ops {
			errs[i] = ErrStopped
		}
		return
	default:
	}
	var local [32]*request
	reqs := local[:0]
	for i, op := range ops {
		req := s.reqs.Get().(*request)
		req.op, req.partition = op, parts[i]
		reqs = append(reqs, req)
		sh := parts[i] % len(s.pids)
		if s.queues[sh].add(req) {
			s.as.Root.Send(s.pids[sh], drainBatch{})
		}
	}
	// Asks to idle shards ran on this goroutine while it queued them: take
	// those answers without arming a timer.
	answered := 0
	for i, req := range reqs {
		select {
		case <-req.done:
			errs[i] = s.finish(req)
			reqs[i] = nil
			answered++
		default:
		}
	}
	if answered == len(reqs) {
		return
	}
	t, _ := s.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(timeout)
	} else {
		t.Reset(timeout)
	}
	expired := false
	for i, req := range reqs {
		if req == nil {
			continue
		}
		if !expired {
			select {
			case <-req.done:
				errs[i] = s.finish(req)
				continue
			case <-t.C:
				expired = true
			}
		}
		// Past the bound: take an answer already there, abandon the rest.
		select {
		case <-req.done:
			errs[i] = s.finish(req)
		default:
			errs[i] = ErrTimeout
		}
	}
	if !expired {
		t.Stop()
	}
	s.timers.Put(t)
}

// finish reads an answered request's outcome and returns it to the pool.
func (s *System) finish(req *request) error {
	panicked, refused := req.panicked, req.refused
	req.op, req.panicked, req.refused = nil, false, false
	s.reqs.Put(req)
	if panicked {
		return ErrOpPanicked
	}
	if refused {
		return ErrTableFull
	}
	return nil
}

// ShardOf is the index of the shard that owns partition p.
func (s *System) ShardOf(p int) int { return p % len(s.pids) }
