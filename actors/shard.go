package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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

// A shard is one State and the right to touch it: a one-slot channel used
// as a lock with a bounded wait. The op runs on the asking goroutine while
// it holds the slot, so a local ask costs no goroutine switch and no wake
// (it used to be a protoactor message to a mailbox goroutine and a reply
// through a channel: two wakes per ask, most of the cost of a check at
// low rates). Ops on one shard still run one at a time, in full, which is
// all the exactness of check-and-consume needs.
type shard struct {
	slot chan struct{}
	st   State
	held *[numKinds]atomic.Int64
}

// System is a fixed set of shards on one node.
type System struct {
	shards  []*shard
	clock   Clock
	timers  sync.Pool
	stop    chan struct{}
	stopped chan struct{}
	closed  atomic.Bool
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
		clock:   clock,
		log:     logger,
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.held = make([][numKinds]atomic.Int64, cfg.Shards)
	for i := 0; i < cfg.Shards; i++ {
		s.shards = append(s.shards, &shard{slot: make(chan struct{}, 1), held: &s.held[i], st: State{maxKeys: cfg.MaxKeysPerTable}})
	}
	go s.sweepLoop(cfg.SweepEvery)
	return s
}

// Shards is the number of shards.
func (s *System) Shards() int { return len(s.shards) }

// ShardOf is the shard index partition maps to: two partitions with the
// same index share one State, so one op may touch keys of both.
func (s *System) ShardOf(partition int) int { return partition % len(s.shards) }

// Ask runs op on the shard that owns partition, waiting up to timeout for
// the shard to be free. A nil error means op ran and its result fields are
// set; ErrTimeout means it did not run.
func (s *System) Ask(partition int, op Op, timeout time.Duration) error {
	if s.closed.Load() {
		return ErrStopped
	}
	sh := s.shards[partition%len(s.shards)]
	select {
	case sh.slot <- struct{}{}:
	default:
		if err := s.wait(sh, timeout); err != nil {
			return err
		}
	}
	st := &sh.st
	st.Now, st.Partition, st.refused = s.clock(), partition, false
	ok := s.run(op, st)
	refused := st.refused
	<-sh.slot
	if !ok {
		return ErrOpPanicked
	}
	if refused {
		return ErrTableFull
	}
	return nil
}

// wait takes sh's slot when another op holds it: a few yields first (ops
// are short), then a bounded park.
func (s *System) wait(sh *shard, timeout time.Duration) error {
	for range 4 {
		runtime.Gosched()
		select {
		case sh.slot <- struct{}{}:
			return nil
		default:
		}
	}
	t, _ := s.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(timeout)
	} else {
		t.Reset(timeout)
	}
	defer func() { t.Stop(); s.timers.Put(t) }()
	select {
	case sh.slot <- struct{}{}:
		return nil
	case <-t.C:
		return ErrTimeout
	case <-s.stop:
		return ErrStopped
	}
}

// run runs op on st and reports whether it returned normally. A panic must not escape: the op's request fails
// closed instead, and the bug is logged and counted; the shard keeps its
// state (forgetting single-use markers would accept replays).
func (s *System) run(op Op, st *State) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.log.Error("actors: recovered a panic; the request fails closed and the shard keeps its state",
				"op", fmt.Sprintf("%T", op), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			ok = false
		}
	}()
	op.Apply(st)
	return true
}

// Stop stops the sweeps. Asks after Stop fail with ErrStopped; an ask
// already running finishes.
func (s *System) Stop() {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		<-s.stopped
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
			for _, sh := range s.shards {
				select {
				case sh.slot <- struct{}{}:
				case <-s.stop:
					return
				}
				s.sweep(sh)
				<-sh.slot
			}
		}
	}
}

// sweep collects expired entries of every table of sh (holding its slot)
// and publishes the held-keys counts.
func (s *System) sweep(sh *shard) {
	now := s.clock()
	for _, v := range sh.st.slots {
		if sw, ok := v.(Sweeper); ok {
			sh.st.Now = now
			s.run(sweepOp{sw}, &sh.st)
		}
	}
	for k, v := range sh.st.slots {
		if sz, ok := v.(Sizer); ok {
			sh.held[k].Store(int64(sz.Len()))
		}
	}
}

// sweepOp runs one table's bounded sweep under the panic guard.
type sweepOp struct{ sw Sweeper }

func (o sweepOp) Apply(st *State) { o.sw.Sweep(st.Now, sweepBudget) }

// Panics is how many ops (and sweeps) panicked since start.
func (s *System) Panics() uint64 { return s.panics.Load() }
