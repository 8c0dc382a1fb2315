package cluster

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/actors"
)

// ErrUnavailable is returned when the owner of a key cannot answer within
// the bound. Callers map it to their operation's degraded behaviour (a
// rate-limit policy's fail-open or fail-closed; identity and trust fail
// closed).
var ErrUnavailable = errors.New("cluster: owner of the key is unavailable")

// Forwarder carries an op to the shard of another node. The cluster's peer
// transport implements it; a single node has none.
type Forwarder interface {
	Forward(m Member, epoch uint64, partition int, op actors.Op, timeout time.Duration) error
}

// Router is the only way a handler reaches per-key state: Ask finds the
// owner of the key under the current ring and runs the op there.
type Router struct {
	ring    atomic.Pointer[Ring]
	local   *actors.System
	fwd     Forwarder
	timeout time.Duration
}

// NewRouter routes over ring, running locally owned ops on local. fwd may be
// nil while the ring has only this node.
func NewRouter(ring *Ring, local *actors.System, fwd Forwarder, timeout time.Duration) *Router {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	r := &Router{local: local, fwd: fwd, timeout: timeout}
	r.ring.Store(ring)
	return r
}

// SingleNode returns a router over a ring of one member, this node.
func SingleNode(nodeID string, local *actors.System, timeout time.Duration) *Router {
	return NewRouter(NewRing(1, []Member{{ID: nodeID}}, nodeID), local, nil, timeout)
}

// Ring returns the current ring.
func (r *Router) Ring() *Ring { return r.ring.Load() }

// SetRing swaps in a new ring; rings with an older epoch are ignored.
func (r *Router) SetRing(next *Ring) {
	for {
		cur := r.ring.Load()
		if cur != nil && next.Epoch <= cur.Epoch {
			return
		}
		if r.ring.CompareAndSwap(cur, next) {
			return
		}
	}
}

// Ask runs op on the shard that owns key, wherever it lives.
func (r *Router) Ask(key string, op actors.Op) error {
	return r.AskPartition(Partition(key), op)
}

// AskPartition runs op on the owner of partition p.
func (r *Router) AskPartition(p int, op actors.Op) error {
	ring := r.ring.Load()
	owner := ring.Owner(p)
	if owner < 0 {
		return ErrUnavailable
	}
	if owner == ring.Self {
		return r.askLocal(p, op)
	}
	if r.fwd == nil {
		return ErrUnavailable
	}
	if err := r.fwd.Forward(ring.Members[owner], ring.Epoch, p, op, r.timeout); err != nil {
		return errors.Join(ErrUnavailable, err)
	}
	return nil
}

// AskLocal runs op on this node's shard for partition p regardless of the
// ring; the peer transport uses it for asks forwarded here.
func (r *Router) AskLocal(p int, op actors.Op) error { return r.askLocal(p, op) }

func (r *Router) askLocal(p int, op actors.Op) error {
	if err := r.local.Ask(p, op, r.timeout); err != nil {
		return errors.Join(ErrUnavailable, err)
	}
	return nil
}
