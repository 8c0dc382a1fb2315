package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/trustd/trustd/platform/catalog"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// ErrLeaving is returned by Leave when a leave is already under way.
var ErrLeaving = errors.New("cluster: this node is already leaving")

// ErrLeaveForced is returned by Leave when its bound (the context's
// deadline, or leaveBound) cut a step short: the node still left gossip,
// but a hand-off, the peers' ring update, the leadership transfer or its
// removal from Raft may not have completed.
var ErrLeaveForced = errors.New("cluster: leave did not finish within its bound; forced")

// leaveBound bounds a Leave whose context has no deadline.
const leaveBound = 30 * time.Second

// Leave takes this node out of the cluster gracefully:
//
//  1. drain: gossip state Draining, so every ring (this node's at once)
//     drops it, and hand this node's partitions to their new owners;
//  2. wait (bounded) until the other members' rings no longer hold it;
//  3. hand Raft leadership over if this node has it;
//  4. leave gossip, after which the leader removes it from Raft; wait
//     (bounded) for that removal, then stop gossip.
//
// Every step waits within the context's deadline (leaveBound when it has
// none); when the bound ends a step early the node still leaves gossip
// (its own bound, 2 s), logs what it skipped and returns ErrLeaveForced.
// The caller closes the node afterwards.
func (c *Cluster) Leave(ctx context.Context) error {
	if !c.leaving.CompareAndSwap(false, true) {
		return ErrLeaving
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, leaveBound)
		defer cancel()
	}
	start := time.Now()
	c.state.Store(int32(Draining))
	if err := c.updateMeta(); err != nil {
		return err
	}
	if err := c.ml.UpdateNode(time.Second); err != nil {
		c.log.Warn("gossip of draining state incomplete", "err", err)
	}
	// The quorum records the drain; the ring that follows drops this node
	// and its partitions are handed to their new owners, who wait for that
	// hand-off before deciding (hold.go).
	if err := c.renewSync(ctx); err != nil {
		c.log.Warn("recording the drain through the quorum failed", "err", err)
	}
	c.syncRing()
	// state is on the successors before we go
	if !untilDone(ctx, func() error { c.handoffs.Wait(); return nil }, nil) {
		c.log.Error("leave: hand-off not finished within the leave bound; leaving without waiting for it")
	}
	c.waitPeersDropped(ctx)
	c.stopRenewing.Store(true)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	if _, err := c.cons.Apply(rctx, &catalog.RemoveNode{ID: c.cfg.NodeID, Epoch: c.epoch.Load()}); err != nil {
		c.log.Warn("removing this node's liveness record failed; the leader fences it once it lapses", "err", err)
	}
	cancel()

	r := c.cons.Raft()
	if ctx.Err() == nil && r.State() == raft.Leader && c.raftServers() > 1 {
		var err error
		if !untilDone(ctx, r.LeadershipTransfer().Error, &err) {
			c.log.Error("leave: leadership transfer not finished within the leave bound")
		} else if err != nil {
			c.log.Warn("leadership transfer failed", "err", err)
		}
	}
	if err := c.ml.Leave(2 * time.Second); err != nil {
		c.log.Warn("gossip leave incomplete", "err", err)
	}
	c.leftGossip.Store(true)
	c.waitRemovedFromRaft(ctx)
	if err := ctx.Err(); err != nil {
		c.log.Error("leave forced: its bound ended a step early", "took", time.Since(start).Round(time.Millisecond), "err", err)
		return fmt.Errorf("%w (after %v): %w", ErrLeaveForced, time.Since(start).Round(time.Millisecond), err)
	}
	c.log.Info("left the cluster", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// untilDone runs f and waits for it until ctx ends; false: ctx ended first
// (f goes on running). f's error is stored in *err when err is not nil.
func untilDone(ctx context.Context, f func() error, err *error) bool {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case e := <-done:
		if err != nil {
			*err = e
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// requestedLeave runs a leave a peer or the admin API asked for, then the
// OnLeave hook (the node shuts down).
func (c *Cluster) requestedLeave() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Leave(ctx); err != nil {
		if errors.Is(err, ErrLeaving) {
			return
		}
		c.log.Error("leave failed", "err", err)
	}
	c.mu.Lock()
	f := c.onLeave
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// RequestLeave makes node id ("" or this node's id: this node) leave
// gracefully. It returns once the leave has started.
func (c *Cluster) RequestLeave(id string) error {
	if id == "" || id == c.cfg.NodeID {
		if c.leaving.Load() {
			return ErrLeaving
		}
		if len(c.Members()) <= 1 {
			return ErrLastMember
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.requestedLeave()
		}()
		return nil
	}
	for _, m := range c.Members() {
		if m.ID == id {
			_, err := c.trans.call(m.PeerAddr, pathLeave, leaveRequest(), nil, 2*time.Second)
			return err
		}
	}
	return fmt.Errorf("%w: %s", ErrUnknownNode, id)
}

// ErrLastMember is returned by RequestLeave for the only member: the
// cluster would be left with no node and no Raft quorum. Stop the node
// instead.
var ErrLastMember = errors.New("cluster: the last member cannot leave; stop the node instead")

// ErrUnknownNode is returned for a node id that is not a live member.
var ErrUnknownNode = errors.New("cluster: no live member with that id")

func (c *Cluster) waitPeersDropped(ctx context.Context) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		holding := false
		for _, m := range c.Members() {
			if m.ID == c.cfg.NodeID {
				continue
			}
			st, err := c.peerStatus(m.PeerAddr, 500*time.Millisecond)
			if err == nil && slices.Contains(st.RingMembers, c.cfg.NodeID) {
				holding = true
				break
			}
		}
		if !holding {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) waitRemovedFromRaft(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if !c.inRaft() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.log.Warn("still in the raft configuration after leaving; the leader will remove it")
}

func (c *Cluster) inRaft() bool {
	f := c.cons.Raft().GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == c.cfg.NodeID {
			return true
		}
	}
	return false
}

func (c *Cluster) raftServers() int {
	f := c.cons.Raft().GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	return len(f.Configuration().Servers)
}

func (c *Cluster) peerStatus(addr string, timeout time.Duration) (*clusterpb.NodeStatus, error) {
	out, err := c.trans.call(addr, pathStatus, nil, nil, timeout)
	if err != nil {
		return nil, err
	}
	return c.formats.decodeStatus(out, c.log)
}
