package cluster

import (
	"sync"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// Holding a partition. A node decides for a partition it owns under its
// ring only once every node that could still decide for it under an older
// ring has provably stopped, and the previous owner's state is here:
//
//   - barrier: every other live member (ready or draining, unfenced) has
//     installed a ring at least as new (its status probe says so), or the
//     quorum fenced it meanwhile. A member that cannot be asked is waited
//     for until it answers or is fenced (TTL+margin at most: it stopped
//     renewing, so its right lapses and the leader fences it);
//   - hand-off: the partition's owner in the ring before this one (the
//     catalog keeps it) handed its state off for this epoch or a later
//     one, or its right has provably lapsed (fenced, restarted under a new
//     epoch, or removed), in which case what must survive it is on its
//     replica, which is this node (the rendezvous runner-up).
//
// A partition owned without a break under contiguous rings stays held.
// Until a partition is held its asks answer unavailable; after a planned
// change that lasts one status round trip and one hand-off.

// holdNeed is what a gained partition waits for besides the barrier: the
// hand-off of its previous owner ("" when none is due).
type holdNeed struct {
	from      string
	fromEpoch uint64
}

// planHold marks held, in next, the partitions this node keeps without a
// break, and returns the owned ones that must wait.
func (c *Cluster) planHold(cat *catalog.Catalog, cur, next *Ring) map[int]holdNeed {
	if next.Self < 0 || next.Members[next.Self].Epoch != c.epoch.Load() {
		return nil // not a member under this node's current epoch: owns nothing
	}
	prev := ringFromCatalog(cat.PrevRing, c.cfg.NodeID)
	contiguous := cur != nil && cur.Epoch == cat.PrevRing.Index
	pending := map[int]holdNeed{}
	for p := 0; p < Partitions; p++ {
		if !next.OwnsLocally(p) {
			continue
		}
		if contiguous && cur.OwnsLocally(p) && cur.Held(p) {
			next.hold(p)
			continue
		}
		var need holdNeed
		if o := prev.Owner(p); o >= 0 && o != prev.Self {
			m := prev.Members[o]
			need = holdNeed{from: m.ID, fromEpoch: m.Epoch}
		}
		pending[p] = need
	}
	return pending
}

// lapsed reports whether a member's right under epoch has provably ended.
func lapsed(cat *catalog.Catalog, id string, epoch uint64) bool {
	r := cat.Nodes[id]
	return r == nil || r.Fenced || r.Epoch != epoch
}

// startHold resolves the pending partitions of next in the background.
func (c *Cluster) startHold(next *Ring, pending map[int]holdNeed) {
	if len(pending) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.resolveHold(next, pending)
	}()
}

// holdPoll is how often a waiting hold is re-examined.
const holdPoll = 25 * time.Millisecond

func (c *Cluster) resolveHold(next *Ring, pending map[int]holdNeed) {
	started := time.Now()
	passed := map[string]bool{} // members that installed next or later
	for {
		if c.router.Ring() != next {
			return // superseded: the next ring plans again
		}
		cat := c.cons.Catalog()
		if c.barrier(cat, next.Epoch, passed) {
			for p, need := range pending {
				if need.from == "" || need.from == c.cfg.NodeID || c.handedOffAt(need.from) >= next.Epoch || lapsed(cat, need.from, need.fromEpoch) {
					next.hold(p)
					delete(pending, p)
				}
			}
			if len(pending) == 0 {
				c.log.Info("holding every partition of the ring", "epoch", next.Epoch, "waited", time.Since(started).Round(time.Millisecond))
				return
			}
		}
		select {
		case <-c.stop:
			return
		case <-time.After(holdPoll):
		}
	}
}

// barrier reports whether every other member that may still decide under
// an older ring has installed epoch or later, or has lapsed. passed keeps
// the members already confirmed across rounds.
func (c *Cluster) barrier(cat *catalog.Catalog, epoch uint64, passed map[string]bool) bool {
	type target struct{ id, addr string }
	var todo []target
	for id, r := range cat.Nodes {
		if id != c.cfg.NodeID && !r.Fenced && r.State != catalog.NodeJoining && !passed[id] {
			todo = append(todo, target{id, r.PeerAddr})
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	for _, t := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.peerStatus(t.addr, 300*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && st.RingEpoch >= epoch {
				passed[t.id] = true
				return
			}
			ok = false
		}()
	}
	wg.Wait()
	return ok
}

// handedOffAt is the newest ring epoch for which member id handed its
// state off to this node.
func (c *Cluster) handedOffAt(id string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handedOff[id]
}
