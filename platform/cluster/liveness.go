package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/trustd/trustd/platform/catalog"
)

// Liveness: who may own partitions is settled through the Raft quorum
// (platform/catalog/nodes.go), not by each node's gossip view.
//
//   - Every node renews its liveness record through Raft every
//     RenewInterval. A renewal that applied gives the node the right to
//     decide as an owner until TTL after the moment it was sent (its own
//     monotonic clock); the Router refuses owner decisions past that
//     (Router.Live). A node cut off from the quorum (partitioned, paused,
//     its Raft stuck) therefore stops deciding within TTL.
//   - The leader fences a node whose renewals it has not seen applied for
//     TTL+FenceMargin. A renewal is applied on the leader after it was
//     sent, so by then the node's right has lapsed on its own clock (clock
//     rates may differ by the margin; clock offsets do not matter: nothing
//     compares two nodes' clocks).
//   - Every node computes its ring from the replicated members (ready and
//     unfenced), numbered by the log index at which the set changed.
//     Partitions a node gains are decided only once their previous owners
//     have provably stopped (hold.go).
//
// Cost: after a crash (or a cut) the node's partitions are unavailable for
// about TTL+FenceMargin (4.65 s by default), until the fence commits.

// Liveness timings. TTL must outlast a Raft leader election (1-2 s with
// hashicorp/raft's defaults) so that an election alone does not make every
// node lapse.
const (
	DefaultRenewInterval = 500 * time.Millisecond
	DefaultLivenessTTL   = 4 * time.Second
)

// fenceMargin is how much longer than the TTL the leader waits before
// fencing: it covers clock-rate differences and the delay of noticing an
// applied renewal (the catalog is polled every watchInterval).
func fenceMargin(ttl time.Duration) time.Duration { return ttl/10 + 250*time.Millisecond }

// watchInterval is how often the catalog is checked for ring changes and
// renewals.
const watchInterval = 20 * time.Millisecond

// renewLoop keeps this node's liveness record current. It stops renewing
// once the node has left the ring for good (Leave).
func (c *Cluster) renewLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.RenewInterval)
	defer t.Stop()
	for {
		if !c.stopRenewing.Load() {
			if err := c.renew(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				c.log.Debug("liveness renewal failed", "err", err)
			}
		}
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// renew writes one liveness renewal and, once it applied, extends this
// node's right to decide. A fenced epoch is replaced by a new one (the node
// comes back as joining and says ready again at once: applying its own
// rejoin means its catalog has caught up to it).
func (c *Cluster) renew() error {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	sent := time.Now()
	// An attempt is bounded well inside the TTL: one renewal stuck behind
	// a leader that just died must not use up the whole right, the next
	// attempts reach the new leader.
	ctx, cancel := context.WithTimeout(context.Background(), renewAttempt(c.cfg))
	defer cancel()
	epoch := c.epoch.Load()
	hb := &catalog.NodeHeartbeat{ID: c.cfg.NodeID, Epoch: epoch, Rejoin: epoch == 0, State: c.State().String(),
		APIAddr: c.cfg.APIAddr, PeerAddr: c.cfg.AdvertisePeer, RaftAddr: c.cfg.RaftAddr}
	v, err := c.cons.Apply(ctx, hb)
	if errors.Is(err, catalog.ErrFenced) {
		c.log.Warn("liveness epoch fenced by the quorum; rejoining under a new epoch", "epoch", epoch)
		hb.Epoch, hb.Rejoin = 0, true
		if v, err = c.cons.Apply(ctx, hb); err == nil && c.State() != Joining {
			// the rejoin applied here, so this node's catalog has caught
			// up to it: say its state under the new epoch at once
			hb.Epoch, hb.Rejoin = v.(uint64), false
			sent = time.Now()
			v, err = c.cons.Apply(ctx, hb)
		}
	}
	if err != nil {
		return err
	}
	got, _ := v.(uint64)
	c.epoch.Store(got)
	// the ring of what just applied first: a rejoin must not be decided
	// under a ring that still lists this node's previous epoch
	c.syncRing()
	c.router.renew(sent.Add(c.cfg.LivenessTTL))
	return nil
}

// renewAttempt bounds one renewal: twice the interval, at most a third of
// the TTL.
func renewAttempt(cfg Config) time.Duration {
	return min(2*cfg.RenewInterval, cfg.LivenessTTL/3)
}

// renewSync renews at once (a state change must be in the replicated
// record before the caller goes on), retrying while the quorum has no
// leader (an election, or a node just added to Raft) for a bound.
func (c *Cluster) renewSync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, renewSyncBound)
	defer cancel()
	for {
		err := c.renew()
		if err == nil {
			return nil
		}
		select {
		case <-c.stop:
			return err
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// renewSyncBound bounds a state change's wait for the quorum.
const renewSyncBound = 20 * time.Second

// watchLoop follows the replicated membership: it installs each new ring
// and, on the leader, fences nodes whose renewals stopped.
func (c *Cluster) watchLoop() {
	defer c.wg.Done()
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	var lastIndex uint64
	seen := map[string]beat{}
	lastFence := time.Time{}
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		cat := c.cons.Catalog()
		if cat.Index != lastIndex {
			lastIndex = cat.Index
			c.syncRing()
			now := time.Now()
			for id, r := range cat.Nodes {
				if b, ok := seen[id]; !ok || b.index != r.Beat || b.epoch != r.Epoch {
					seen[id] = beat{index: r.Beat, epoch: r.Epoch, at: now}
				}
			}
			for id := range seen {
				if cat.Nodes[id] == nil {
					delete(seen, id)
				}
			}
		}
		if c.cons.Raft().State() != raft.Leader || time.Since(lastFence) < 250*time.Millisecond {
			continue
		}
		lastFence = time.Now()
		c.fenceLapsed(cat, seen)
	}
}

// beat is when this node saw a member's renewal applied.
type beat struct {
	index, epoch uint64
	at           time.Time
}

// fenceLapsed fences, on the leader, every unfenced member whose last
// renewal this node saw applied longer than TTL+margin ago. "Saw" starts
// no earlier than this node's own observation, so a leader that just took
// over (or restarted) waits a full TTL before fencing anyone.
func (c *Cluster) fenceLapsed(cat *catalog.Catalog, seen map[string]beat) {
	limit := c.cfg.LivenessTTL + fenceMargin(c.cfg.LivenessTTL)
	inRaft := map[string]bool{}
	if f := c.cons.Raft().GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			inRaft[string(s.ID)] = true
		}
	}
	for id, r := range cat.Nodes {
		if id == c.cfg.NodeID {
			continue
		}
		if r.Fenced {
			// reaped from Raft (reconcile.go): its record goes too, so the
			// table holds the nodes of the cluster, not every id it had
			if !inRaft[id] {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = c.cons.Apply(ctx, &catalog.RemoveNode{ID: id, Epoch: r.Epoch})
				cancel()
			}
			continue
		}
		b, ok := seen[id]
		if !ok || time.Since(b.at) <= limit {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := c.cons.Apply(ctx, &catalog.FenceNode{ID: id, Epoch: r.Epoch})
		cancel()
		if err != nil {
			c.log.Warn("fencing a lapsed node failed", "node_id", id, "err", err)
			continue
		}
		if done, _ := v.(bool); done {
			c.log.Warn("fenced a node whose liveness lapsed", "node_id", id, "epoch", r.Epoch, "silent_for", time.Since(b.at).Round(time.Millisecond))
		}
	}
}

// ringFromCatalog builds the ring of the replicated members.
func ringFromCatalog(rs catalog.RingState, self string) *Ring {
	ms := make([]Member, len(rs.Members))
	for i, m := range rs.Members {
		ms[i] = Member{ID: m.ID, Epoch: m.Epoch, APIAddr: m.APIAddr, PeerAddr: m.PeerAddr, RaftAddr: m.RaftAddr}
	}
	return NewRing(rs.Index, ms, self)
}

// syncRing installs the ring of the applied catalog if it is newer than the
// router's, deciding which owned partitions are held at once and starting
// the wait for the others (hold.go) and the hand-off of lost ones.
func (c *Cluster) syncRing() *Ring {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	cat := c.cons.Catalog()
	cur := c.router.Ring()
	if cur != nil && cat.Ring.Index <= cur.Epoch {
		return cur
	}
	next := ringFromCatalog(cat.Ring, c.cfg.NodeID)
	pending := c.planHold(cat, cur, next)
	if !c.router.publish(next) {
		return c.router.Ring()
	}
	c.log.Info("ring changed", "epoch", next.Epoch, "members", len(next.Members), "owns", next.Share()[c.cfg.NodeID], "waiting", len(pending))
	c.rememberPeers()
	c.startHold(next, pending)
	if cur != nil && len(cur.Members) > 0 {
		c.wg.Add(1)
		c.handoffs.Add(1)
		go func() {
			defer c.wg.Done()
			defer c.handoffs.Done()
			c.handoff(cur, next)
		}()
	}
	return next
}
