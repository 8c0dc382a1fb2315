package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// NodeStatus is one node as operators see it.
type NodeStatus struct {
	NodeID   string
	APIAddr  string
	PeerAddr string
	RaftAddr string
	// State is joining, ready or draining for live members, failed for a
	// Raft server that gossip no longer sees.
	State string
	// RaftRole is leader, voter, nonvoter or none.
	RaftRole string
	// Partitions is how many partitions the node owns in this node's ring.
	Partitions int
	// Health is ok when the node answered its status probe, else
	// unreachable.
	Health       string
	LastIndex    uint64
	AppliedIndex uint64
	RingEpoch    uint64
}

// Status is the cluster as this node sees it.
type Status struct {
	NodeID    string
	Leader    string
	RingEpoch uint64
	Nodes     []NodeStatus
}

func (c *Cluster) localStatus() *clusterpb.NodeStatus {
	r := c.cons.Raft()
	ring := c.router.Ring()
	st := &clusterpb.NodeStatus{Id: c.cfg.NodeID, RaftState: r.State().String(), LastIndex: r.LastIndex(),
		AppliedIndex: r.AppliedIndex(), RingEpoch: ring.Epoch, State: clusterpb.NodeState(c.State()), Format: StatusFormat}
	for _, m := range ring.Members {
		st.RingMembers = append(st.RingMembers, m.ID)
	}
	return st
}

// Status gathers the cluster's state: members from gossip and the Raft
// configuration, ownership from this node's ring, and each node's own
// report over the peer transport (bounded by timeout; a node that does not
// answer is unreachable).
func (c *Cluster) Status(ctx context.Context, timeout time.Duration) Status {
	r := c.cons.Raft()
	ring := c.router.Ring()
	_, leader := r.LeaderWithID()
	out := Status{NodeID: c.cfg.NodeID, Leader: string(leader), RingEpoch: ring.Epoch}
	roles := map[string]string{}
	raftAddrs := map[string]string{}
	if f := r.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			role := "voter"
			if s.Suffrage != raft.Voter {
				role = "nonvoter"
			}
			if s.ID == leader {
				role = "leader"
			}
			roles[string(s.ID)] = role
			raftAddrs[string(s.ID)] = string(s.Address)
		}
	}
	share := ring.Share()
	seen := map[string]bool{}
	for _, m := range c.Members() {
		seen[m.ID] = true
		ns := NodeStatus{NodeID: m.ID, APIAddr: m.APIAddr, PeerAddr: m.PeerAddr, RaftAddr: m.RaftAddr,
			State: m.State.String(), RaftRole: roleOr(roles, m.ID), Partitions: share[m.ID], Health: "ok"}
		out.Nodes = append(out.Nodes, ns)
	}
	for id := range roles {
		if !seen[id] {
			out.Nodes = append(out.Nodes, NodeStatus{NodeID: id, RaftAddr: raftAddrs[id], State: "failed",
				RaftRole: roles[id], Health: "unreachable"})
		}
	}
	var wg sync.WaitGroup
	for i := range out.Nodes {
		ns := &out.Nodes[i]
		if ns.PeerAddr == "" {
			continue
		}
		if ns.NodeID == c.cfg.NodeID {
			l := c.localStatus()
			ns.LastIndex, ns.AppliedIndex, ns.RingEpoch = l.LastIndex, l.AppliedIndex, l.RingEpoch
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.peerStatus(ns.PeerAddr, timeout)
			if err != nil || ctx.Err() != nil {
				ns.Health = "unreachable"
				return
			}
			ns.LastIndex, ns.AppliedIndex, ns.RingEpoch = st.LastIndex, st.AppliedIndex, st.RingEpoch
		}()
	}
	wg.Wait()
	slices.SortFunc(out.Nodes, func(a, b NodeStatus) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}

func roleOr(roles map[string]string, id string) string {
	if r, ok := roles[id]; ok {
		return r
	}
	return "none"
}
