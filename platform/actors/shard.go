package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// An Op is one unit of work on state owned by a shard. Apply runs inside the
// shard actor, so it may read and write the shard's State without locks, but
// it must not block, perform I/O or keep references to State after
// returning. An Op carries its own inputs and writes its results into its
// own fields; the caller reads them once Ask returns nil.
type Op interface {
	Apply(st *State)
}

// Kind names one kind of state a shard holds. Every kind has a slot in State;
// the kinds are declared together so that adding one is a one-line change.
type Kind uint8

// The kinds of state a shard holds.
const (
	KindMarker Kind = iota
	KindBucket
	KindQuota
	KindLease
	KindBreaker
	KindVelocity
	KindAssessment
	KindIdempotency
	KindSession
	KindNonce
	KindReputation
	KindRedeem
	KindChallengeRate
	KindVerification
	KindActivity
	numKinds = 16
)

// Sweeper is implemented by slot values that hold expiring entries. The
// shard calls Sweep every second from inside the actor with a budget: the
// most entries to visit (0 or less: all). Every lookup checks expiry
// itself, so sweeping only reclaims memory; a bounded sweep keeps a table
// of millions of entries from stalling its shard (Go starts each map walk
// at a random place, so successive bounded sweeps cover the whole table).
type Sweeper interface {
	Sweep(now int64, budget int)
}

// sweepBudget is how many entries of one table a shard visits per second:
// a few milliseconds of work, and a table of 10 million entries is walked
// about every ten minutes.
const sweepBudget = 16384

// State is the state one shard owns. It is only ever touched from inside
// the shard's actor.
type State struct {
	// Now is the shard clock in Unix nanoseconds, set before every Apply so
	// that all ops of a message see one instant.
	Now int64
	// Partition is the partition of the op being applied, so that tables
	// whose entries move with their partition (Exporter) can record it.
	Partition int
	slots     [numKinds]any
	// maxKeys bounds every table (0: unbounded); refused is set by Room
	// when an op found its table full, and fails the op's request.
	maxKeys int
	refused bool
}

// Room reports whether a table of kind k holding n keys may take one more.
// When it may not, the op's request fails closed with ErrTableFull: a
// full table of single-use markers must refuse new work, never evict a
// live marker (that would let a replay through).
func (st *State) Room(k Kind, n int) bool {
	if st.maxKeys > 0 && n >= st.maxKeys {
		st.refused = true
		return false
	}
	return true
}

// Sizer is implemented by tables that can report how many keys they hold,
// for the held-keys metric.
type Sizer interface {
	Len() int
}

// Slot returns the shard's table for kind k, creating it with mk on first use.
func Slot[T any](st *State, k Kind, mk func() *T) *T {
	if v := st.slots[k]; v != nil {
		return v.(*T)
	}
	t := mk()
	st.slots[k] = t
	return t
}

// Clock returns the current time in Unix nanoseconds. Tests inject their own.
type Clock func() int64

// WallClock is the real clock.
func WallClock() int64 { return time.Now().UnixNano() }

// ErrTimeout is returned by Ask when the shard did not answer within the
// bound; the op may still run later and its result must be ignored.
var ErrTimeout = errors.New("actors: shard did not answer in time")

// ErrStopped is returned by Ask after the system was stopped.
var ErrStopped = errors.New("actors: system stopped")

// ErrOpPanicked is returned by Ask when the op panicked. The request fails
// closed (callers answer 503 or take their degraded behaviour); the shard
// recovered and kept its state, so single-use markers stay consumed.
var ErrOpPanicked = errors.New("actors: op panicked; it was not completed")

// ErrTableFull is returned by Ask when the op needed a new key in a table
// that holds Config.MaxKeysPerTable keys already.
var ErrTableFull = errors.New("actors: the shard's table is full")

// request is one ask, queued for its shard (batch.go) and applied inside the
// shard actor. The reply travels through done, a channel carried in the
// request: no futures on the hot path.
type request struct {
	op        Op
	partition int
	panicked  bool
	refused   bool
	done      chan struct{}
}

type sweepTick struct{}

// System is a fixed set of shard actors on one node.
type System struct {
	as      *actor.ActorSystem
	pids    []*actor.PID
	queues  []batchQueue
	workers []*pinnedDispatcher
	clock   Clock
	reqs    sync.Pool
	timers  sync.Pool
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	log     *slog.Logger
	panics  atomic.Uint64
	// held[shard][kind] is the number of keys each table held at the last
	// sweep, published by the shard for the metric.
	held []([numKinds]atomic.Int64)
}

// DefaultMaxKeysPerTable bounds a table of one shard: with 8 shards, 8
// million keys of one kind per node, a few hundred MB at most.
const DefaultMaxKeysPerTable = 1 << 20

// HeldKeys returns, per kind, the keys held across shards at the last
// sweep.
func (s *System) HeldKeys() [numKinds]int64 {
	var out [numKinds]int64
	for i := range s.held {
		for k := range out {
			out[k] += s.held[i][k].Load()
		}
	}
	return out
}

// KindNames names the kinds for metrics.
var KindNames = [numKinds]string{KindMarker: "marker", KindBucket: "bucket", KindQuota: "quota", KindLease: "lease",
	KindBreaker: "breaker", KindVelocity: "velocity", KindAssessment: "assessment", KindIdempotency: "idempotency",
	KindSession: "session", KindNonce: "nonce", KindReputation: "reputation", KindRedeem: "redeem",
	KindChallengeRate: "challenge_rate", KindVerification: "verification",
	KindActivity: "account_activity"}

// Config sizes a System.
type Config struct {
	// Shards is the number of shard actors; partitions map onto them.
	Shards int
	// SweepEvery is how often expiring entries are collected.
	SweepEvery time.Duration
	// MaxKeysPerTable bounds the keys of each table of each shard (0:
	// DefaultMaxKeysPerTable); an op that needs one more fails closed.
	MaxKeysPerTable int
	// Logger receives recovered panics of ops; nil discards them. The
	// actor runtime's own log lines are always discarded.
	Logger *slog.Logger
}

// NewSystem starts cfg.Shards shard actors.
func NewSystem(cfg Config, clock Clock) *System {
	if cfg.Shards <= 0 {
		cfg.Shards = 8
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Second
	}
	if clock == nil {
		clock = WallClock
	}
	if cfg.MaxKeysPerTable <= 0 {
		cfg.MaxKeysPerTable = DefaultMaxKeysPerTable
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &System{
		as:      actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) })),
		clock:   clock,
		log:     logger,
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.reqs.New = func() any { return &request{done: make(chan struct{}, 1)} }
	s.held = make([][numKinds]atomic.Int64, cfg.Shards)
	s.queues = make([]batchQueue, cfg.Shards)
	for i := 0; i < cfg.Shards; i++ {
		held, q := &s.held[i], &s.queues[i]
		w := newPinnedDispatcher()
		s.workers = append(s.workers, w)
		props := actor.PropsFromProducer(func() actor.Actor {
			return &shard{clock: clock, sys: s, held: held, q: q, st: State{maxKeys: cfg.MaxKeysPerTable}}
		}, actor.WithDispatcher(w), actor.WithMailbox(newCallerRunsMailbox))
		s.pids = append(s.pids, s.as.Root.Spawn(props))
	}
	go s.sweepLoop(cfg.SweepEvery)
	return s
}

// Shards is the number of shard actors.
func (s *System) Shards() int { return len(s.pids) }

// Ask runs op on the shard that owns partition and waits up to timeout for
// it to finish. A nil error means op ran and its result fields are set.
func (s *System) Ask(partition int, op Op, timeout time.Duration) error {
	select {
	case <-s.stop:
		return ErrStopped
	default:
	}
	req := s.reqs.Get().(*request)
	req.op, req.partition = op, partition
	i := partition % len(s.pids)
	if s.queues[i].add(req) {
		s.as.Root.Send(s.pids[i], drainBatch{})
	}
	select {
	case <-req.done: // the shard was idle: this goroutine ran the op
		return s.finish(req)
	default:
	}
	t, _ := s.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(timeout)
	} else {
		t.Reset(timeout)
	}
	select {
	case <-req.done:
		t.Stop()
		s.timers.Put(t)
		return s.finish(req)
	case <-t.C:
		// The shard may still run op and signal done later; the request is
		// abandoned rather than reused so that late signal lands nowhere.
		s.timers.Put(t)
		return ErrTimeout
	}
}

// Stop stops every shard actor. Asks after Stop fail with ErrStopped.
func (s *System) Stop() {
	s.once.Do(func() {
		close(s.stop)
		<-s.stopped
		for _, pid := range s.pids {
			_ = s.as.Root.StopFuture(pid).Wait()
		}
		s.as.Shutdown()
		for _, w := range s.workers {
			w.stop()
		}
	})
}

func (s *System) sweepLoop(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			for _, pid := range s.pids {
				s.as.Root.Send(pid, sweepTick{})
			}
		}
	}
}

// Panics is how many ops (and sweeps) panicked since start.
func (s *System) Panics() uint64 { return s.panics.Load() }

// shard is the actor. Its State is touched only from Receive.
type shard struct {
	clock Clock
	sys   *System
	held  *[numKinds]atomic.Int64
	q     *batchQueue
	st    State
}

func (a *shard) Receive(c actor.Context) {
	switch c.Message().(type) {
	case drainBatch:
		if a.applyBatch() {
			c.Send(c.Self(), drainBatch{})
		}
	case sweepTick:
		now := a.clock()
		for _, v := range a.st.slots {
			if sw, ok := v.(Sweeper); ok {
				a.safely(sw, func() { sw.Sweep(now, sweepBudget) })
			}
		}
		for k, v := range a.st.slots {
			if sz, ok := v.(Sizer); ok {
				a.held[k].Store(int64(sz.Len()))
			}
		}
	}
}

// safely runs f and reports whether it returned normally. A panic must not
// escape Receive: the actor runtime would restart the shard with empty
// state, forgetting every single-use marker (replays accepted) and every
// bucket. The op's own request fails closed instead, and the bug is logged
// and counted.
func (a *shard) safely(what any, f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			a.sys.panics.Add(1)
			a.sys.log.Error("actors: recovered a panic; the request fails closed and the shard keeps its state",
				"op", fmt.Sprintf("%T", what), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			ok = false
		}
	}()
	f()
	return true
}
