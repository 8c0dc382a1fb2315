package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/actors"
)

// ErrUnavailable is returned when the owner of a key cannot answer within
// the bound. Callers map it to their operation's degraded behaviour (a
// rate-limit policy's fail-open or fail-closed; identity and trust fail
// closed).
var ErrUnavailable = errors.New("cluster: owner of the key is unavailable")

// ErrNotWire is joined to ErrUnavailable when an op owned by another node
// does not implement actors.WireOp and so cannot be carried there.
var ErrNotWire = errors.New("cluster: op cannot cross nodes (no actors.WireOp)")

// Forwarder carries an op to the shard of another node. The cluster's peer
// transport implements it; a single node has none. With replica set the
// receiver applies op as the partition's replica: locally, without
// ownership checks and without replicating further.
type Forwarder interface {
	Forward(m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error
}

// Router is the only way a handler reaches per-key state: Ask finds the
// owner of the key under the current ring and runs the op there.
//
// Ownership is fenced by the ring epoch: a forwarded ask carries the
// sender's epoch, and an owner that does not own the partition under its
// own newer ring answers misdirected; the sender then refreshes its ring
// and retries once. An op that implements actors.Replicated is applied on
// the owner and then on the partition's replica before the answer.
type Router struct {
	ring    atomic.Pointer[Ring]
	seen    atomic.Uint64 // highest ring epoch seen from any peer
	local   *actors.System
	fwd     Forwarder
	timeout time.Duration
	refresh atomic.Pointer[func(atLeast uint64) *Ring]
	// tracer is nil while tracing is off (SetTracer; platform/cluster/trace.go):
	// every traced path is behind one nil check.
	tracer trace.Tracer

	// Liveness (platform/cluster/liveness.go): when leased is set, this node
	// decides as owner only before validUntil, the end of the right its
	// last renewal applied through the Raft quorum gave it, in nanoseconds
	// of the monotonic clock since base. A node cut off from the quorum
	// therefore stops deciding by itself, whatever its gossip view says.
	leased     atomic.Bool
	validUntil atomic.Int64
	base       time.Time
}

// errLapsed is why a node whose liveness right has lapsed refuses to
// decide: it cannot tell whether the quorum has moved its partitions.
var errLapsed = errors.New("cluster: this node's liveness lapsed (no renewal through the Raft quorum); it decides nothing until it renews")

// errNotHeld is why a new owner refuses to decide before the previous
// owners of the partition have provably stopped (platform/cluster/hold.go).
var errNotHeld = errors.New("cluster: partition gained a moment ago; waiting for its previous owner to stop and hand off")

// NewRouter routes over ring, running locally owned ops on local. fwd may be
// nil while the ring has only this node.
func NewRouter(ring *Ring, local *actors.System, fwd Forwarder, timeout time.Duration) *Router {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	r := &Router{local: local, fwd: fwd, timeout: timeout, base: time.Now()}
	r.ring.Store(ring.holdAll())
	return r
}

// SingleNode returns a router over a ring of one member, this node.
func SingleNode(nodeID string, local *actors.System, timeout time.Duration) *Router {
	return NewRouter(NewRing(1, []Member{{ID: nodeID}}, nodeID), local, nil, timeout)
}

// Ring returns the current ring.
func (r *Router) Ring() *Ring { return r.ring.Load() }

// Local is the node's own shard system.
func (r *Router) Local() *actors.System { return r.local }

// Timeout is the bound of one ask.
func (r *Router) Timeout() time.Duration { return r.timeout }

// SetRing swaps in a new ring whose owned partitions this node may
// decide for at once (tests' fixed rings); rings with an older epoch are
// ignored.
func (r *Router) SetRing(next *Ring) { r.publish(next.holdAll()) }

// publish swaps in next as it is (held bits and all) unless the router
// already has a ring as new; it reports whether next was installed.
func (r *Router) publish(next *Ring) bool {
	for {
		cur := r.ring.Load()
		if cur != nil && next.Epoch <= cur.Epoch {
			return false
		}
		if r.ring.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// renew extends this node's right to decide until until (a monotonic
// instant), and turns the liveness gate on.
func (r *Router) renew(until time.Time) {
	ns := int64(until.Sub(r.base))
	for {
		cur := r.validUntil.Load()
		if ns <= cur || r.validUntil.CompareAndSwap(cur, ns) {
			break
		}
	}
	r.leased.Store(true)
}

// Live reports whether this node may decide as an owner now: its last
// renewal through the quorum has not lapsed (always, without liveness).
func (r *Router) Live() bool {
	return !r.leased.Load() || int64(time.Since(r.base)) < r.validUntil.Load()
}

// SetRefresher installs the membership's "rebuild the ring now" hook,
// used when a peer reports a newer epoch. It returns the ring to use.
func (r *Router) SetRefresher(f func(atLeast uint64) *Ring) { r.refresh.Store(&f) }

// Observe records an epoch seen from a peer (a peer ahead of this node in
// applying the membership; reported in the cluster status).
func (r *Router) Observe(epoch uint64) {
	for {
		cur := r.seen.Load()
		if epoch <= cur || r.seen.CompareAndSwap(cur, epoch) {
			return
		}
	}
}

// Seen is the highest epoch observed from peers.
func (r *Router) Seen() uint64 { return r.seen.Load() }

func (r *Router) refreshed(atLeast uint64) *Ring {
	if f := r.refresh.Load(); f != nil {
		return (*f)(atLeast)
	}
	return r.ring.Load()
}

// Ask runs op on the shard that owns key, wherever it lives.
func (r *Router) Ask(key string, op actors.Op) error {
	return r.AskPartition(Partition(key), op)
}

// AskPartition runs op on the owner of partition p.
func (r *Router) AskPartition(p int, op actors.Op) error {
	return r.askPartition(context.Background(), p, op)
}

// AskContext is Ask for a caller that has a request context: when
// tracing is on and ctx carries a span, a forwarded ask is a child span
// of it and the owner's span continues the same trace (platform/cluster/trace.go).
// ctx does not bound the ask (the router's timeout does).
func (r *Router) AskContext(ctx context.Context, key string, op actors.Op) error {
	return r.askPartition(ctx, Partition(key), op)
}

func (r *Router) askPartition(ctx context.Context, p int, op actors.Op) error {
	ring := r.ring.Load()
	for attempt := 0; ; attempt++ {
		owner := ring.Owner(p)
		if owner < 0 {
			return ErrUnavailable
		}
		if owner == ring.Self {
			return r.own(ctx, ring, p, op)
		}
		w, ok := op.(actors.WireOp)
		if !ok {
			return errors.Join(ErrUnavailable, fmt.Errorf("%w: %T", ErrNotWire, op))
		}
		if r.fwd == nil {
			return ErrUnavailable
		}
		var err error
		if r.tracer != nil {
			err = r.forwardTraced(ctx, ring.Members[owner], ring.Epoch, p, w, false, r.timeout)
		} else {
			err = r.fwd.Forward(ring.Members[owner], ring.Epoch, p, w, false, r.timeout)
		}
		if err == nil {
			return nil
		}
		// errors.As's target is allocated here, not on every ask
		var mis *MisdirectedError
		if errors.As(err, &mis) && attempt == 0 {
			r.Observe(mis.Epoch)
			ring = r.refreshed(mis.Epoch)
			continue
		}
		return errors.Join(ErrUnavailable, err)
	}
}

// own runs op as the owner of p under ring: locally, then on the replica
// when op is Replicated. ctx is the request's (or the forwarded ask's)
// context, for the replica ask's span.
func (r *Router) own(ctx context.Context, ring *Ring, p int, op actors.Op) error {
	if err := r.mayDecide(ring, p, op); err != nil {
		return err
	}
	if err := r.askLocal(p, op); err != nil {
		return err
	}
	rep, ok := op.(actors.Replicated)
	if !ok {
		return nil
	}
	ri := ring.Replica(p)
	if ri < 0 || ri == ring.Self {
		return nil
	}
	rop := rep.ReplicaOp()
	if rop == nil {
		return nil
	}
	if r.fwd == nil {
		return r.unreplicated(p, rep, ErrUnavailable)
	}
	var err error
	if r.tracer != nil {
		err = r.forwardTraced(ctx, ring.Members[ri], ring.Epoch, p, rop, true, r.timeout/2)
	} else {
		err = r.fwd.Forward(ring.Members[ri], ring.Epoch, p, rop, true, r.timeout/2)
	}
	if err != nil {
		return r.unreplicated(p, rep, err)
	}
	rep.MergeReplica(rop)
	if a, ok := op.(actors.Adopter); ok {
		if fix := a.Adopt(); fix != nil {
			return r.askLocal(p, fix)
		}
	}
	return nil
}

// mayDecide is the owner's right to run op for p under ring: it holds the
// partition and its liveness has not lapsed. It hands the op the ring's
// epoch when the op needs one.
func (r *Router) mayDecide(ring *Ring, p int, op actors.Op) error {
	if !ring.Held(p) {
		return errors.Join(ErrUnavailable, errNotHeld)
	}
	if !r.Live() {
		return errors.Join(ErrUnavailable, errLapsed)
	}
	if e, ok := op.(actors.Epoched); ok {
		e.SetEpoch(ring.Epoch)
	}
	return nil
}

// unreplicated undoes the owner's half of an op its replica did not
// confirm, so the answer is "unavailable" rather than a use that only
// one node remembers.
func (r *Router) unreplicated(p int, op actors.Replicated, err error) error {
	if rev := op.Revert(); rev != nil {
		_ = r.askLocal(p, rev)
	}
	return errors.Join(ErrUnavailable, fmt.Errorf("cluster: replica did not confirm: %w", err))
}

// Serve runs an op that a peer forwarded here. As replica it is applied
// locally; as owner it is fenced by the ring epoch: when this node does
// not own p it answers a MisdirectedError with its epoch, after first
// catching up with membership if the sender's ring is newer than its own.
func (r *Router) Serve(epoch uint64, p int, op actors.WireOp, replica bool) (uint64, error) {
	return r.serve(context.Background(), epoch, p, op, replica)
}

// serve is Serve within ctx (the owner's span of a traced ask).
func (r *Router) serve(ctx context.Context, epoch uint64, p int, op actors.WireOp, replica bool) (uint64, error) {
	ring, err := r.fence(epoch, p, replica)
	switch {
	case err != nil:
		return ring.Epoch, err
	case replica:
		return ring.Epoch, r.askLocal(p, op)
	}
	return ring.Epoch, r.own(ctx, ring, p, op)
}

// fence is Serve's ownership check: the ring to serve p under, or a
// MisdirectedError when this node does not own p (a replica ask is
// always served).
func (r *Router) fence(epoch uint64, p int, replica bool) (*Ring, error) {
	r.Observe(epoch)
	ring := r.ring.Load()
	if replica {
		return ring, nil
	}
	if !ring.OwnsLocally(p) && epoch >= ring.Epoch {
		ring = r.refreshed(epoch)
	}
	if !ring.OwnsLocally(p) {
		return ring, &MisdirectedError{Epoch: ring.Epoch}
	}
	return ring, nil
}

// ServeTogether is Serve for the asks of one peer frame whose ops need no
// replica (not actors.Replicated, or asked as the replica): each is
// fenced as Serve fences it, and those this node serves are queued on
// their shards together and waited for once (actors.System.AskAll). An
// op that does need its replica is served alone, as Serve would.
// epochs[i] receives the epoch to answer with, errs[i] the error.
func (r *Router) ServeTogether(asks []FramedAsk, epochs []uint64, errs []error) {
	sc := togetherScratch.Get().(*serveScratch)
	defer togetherScratch.Put(sc)
	parts, ops, idx := sc.parts[:0], sc.ops[:0], sc.idx[:0]
	for i, a := range asks {
		ring, err := r.fence(a.Epoch, a.Partition, a.Replica)
		epochs[i], errs[i] = ring.Epoch, err
		if _, rep := a.Op.(actors.Replicated); err == nil && rep && !a.Replica {
			errs[i] = r.own(context.Background(), ring, a.Partition, a.Op) // needs its replica: alone
			continue
		}
		if err == nil && !a.Replica {
			err = r.mayDecide(ring, a.Partition, a.Op)
			errs[i] = err
		}
		if err == nil {
			parts, ops, idx = append(parts, a.Partition), append(ops, a.Op), append(idx, i)
		}
	}
	lerrs := append(sc.errs[:0], make([]error, len(ops))...)
	if len(ops) > 0 {
		r.local.AskAll(parts, ops, lerrs, r.timeout)
	}
	for j, i := range idx {
		if lerrs[j] != nil {
			errs[i] = errors.Join(ErrUnavailable, lerrs[j])
		}
	}
	clear(ops)
	clear(lerrs)
	sc.parts, sc.ops, sc.idx, sc.errs = parts, ops, idx, lerrs
}

type serveScratch struct {
	parts []int
	ops   []actors.Op
	idx   []int
	errs  []error
}

var togetherScratch = sync.Pool{New: func() any { return new(serveScratch) }}

// FramedAsk is one ask of a peer frame, for ServeTogether.
type FramedAsk struct {
	Epoch     uint64
	Partition int
	Op        actors.Op
	Replica   bool
}

// AskLocal runs op on this node's shard for partition p regardless of the
// ring (hand-off imports, tests).
func (r *Router) AskLocal(p int, op actors.Op) error { return r.askLocal(p, op) }

func (r *Router) askLocal(p int, op actors.Op) error {
	if err := r.local.Ask(p, op, r.timeout); err != nil {
		return errors.Join(ErrUnavailable, err)
	}
	return nil
}

// AskAll runs ops[i] on the owner of keys[i] and puts its error in
// errs[i]. The ops this node owns and that need no replica are queued on
// their shards together and waited for once (actors.System.AskAll); the
// others run one after another as Ask runs them.
func (r *Router) AskAll(keys []string, ops []actors.Op, errs []error) {
	ring := r.ring.Load()
	var pbuf [8]int
	var obuf [8]actors.Op
	var ibuf [8]int
	var ebuf [8]error
	parts, lops, idx := pbuf[:0], obuf[:0], ibuf[:0]
	for i, op := range ops {
		p := Partition(keys[i])
		if _, rep := op.(actors.Replicated); !rep && ring.Owner(p) == ring.Self {
			parts, lops, idx = append(parts, p), append(lops, op), append(idx, i)
			continue
		}
		errs[i] = r.AskPartition(p, op)
	}
	if len(lops) == 0 {
		return
	}
	lerrs := ebuf[:0]
	for range lops {
		lerrs = append(lerrs, nil)
	}
	r.local.AskAll(parts, lops, lerrs, r.timeout)
	for j, i := range idx {
		if err := lerrs[j]; err != nil {
			errs[i] = errors.Join(ErrUnavailable, err)
		} else {
			errs[i] = nil
		}
	}
}

// AskTogether runs op, once, on the local shard that owns every key of
// keys, when this node owns them all under the current ring and one shard
// holds them; ok is false (and nothing ran) otherwise. op must need no
// replica (actors.ReserveAll).
func (r *Router) AskTogether(keys []string, parts []int, op actors.Op) (ok bool, err error) {
	ring := r.ring.Load()
	shard := -1
	for i, k := range keys {
		p := Partition(k)
		parts[i] = p
		if ring.Owner(p) != ring.Self {
			return false, nil
		}
		if s := r.local.ShardOf(p); shard < 0 {
			shard = s
		} else if s != shard {
			return false, nil
		}
	}
	if shard < 0 {
		return false, nil
	}
	return true, r.askLocal(parts[0], op)
}
