package catalog

import (
	"errors"
	"slices"
	"strings"
)

// Cluster membership as the Raft quorum decides it (the ownership protocol
// of platform/cluster/DESIGN.md, "Ownership under faults"). Gossip detects failures;
// this table says who may own partitions:
//
//   - every node renews its record with a heartbeat command every second;
//     a renewal names the node's liveness epoch, and one applied gives the
//     node the right to decide for its partitions for the liveness TTL from
//     the moment it sent the renewal (measured on its own monotonic clock);
//   - the leader fences a node whose renewals stopped for longer than the
//     TTL (measured from when the leader applied the last one): from then
//     the node's epoch is dead, it cannot renew, and its partitions move;
//   - a fenced or restarted node comes back with a new epoch, joining, and
//     turns ready again once it has caught up.
//
// The ring is computed from the ready, unfenced records: every node derives
// the same ring from the same log prefix, and the ring's epoch is the log
// index at which its member set last changed, so epochs are comparable
// across nodes without a Lamport clock.

// ErrFenced is returned by a heartbeat that names an epoch the quorum has
// ended: the node must rejoin under a new epoch before it owns anything.
var ErrFenced = errors.New("catalog: node liveness epoch fenced")

// Node states as the membership table records them.
const (
	NodeJoining  = "joining"
	NodeReady    = "ready"
	NodeDraining = "draining"
)

// NodeRecord is one node's entry in the replicated membership.
type NodeRecord struct {
	ID       string `json:"id"`
	Epoch    uint64 `json:"epoch"`
	State    string `json:"state"`
	Fenced   bool   `json:"fenced,omitempty"`
	APIAddr  string `json:"api_addr,omitempty"`
	PeerAddr string `json:"peer_addr,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"`
	// Beat is the log index of the node's last applied renewal.
	Beat uint64 `json:"beat"`
}

// InRing reports whether the node may own partitions.
func (r *NodeRecord) InRing() bool { return r.State == NodeReady && !r.Fenced }

// RingMember is a member of the replicated ring: a node id with the
// liveness epoch it owns partitions under.
type RingMember struct {
	ID       string `json:"id"`
	Epoch    uint64 `json:"epoch"`
	APIAddr  string `json:"api_addr,omitempty"`
	PeerAddr string `json:"peer_addr,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"`
}

// RingState is the member set of the ring as of a log index.
type RingState struct {
	Index   uint64       `json:"index"`
	Members []RingMember `json:"members,omitempty"`
}

// MaxNodes bounds the membership table: only cluster members write it (the
// peer transport and Raft are mutually authenticated), but a bug must not
// grow it without bound either.
const MaxNodes = 256

func (tx *Tx) nodes() map[string]*NodeRecord {
	tx.ringTouched = true
	return Writable(tx, "nodes", &tx.next.Nodes)
}

// NodeHeartbeat renews a node's liveness under Epoch, with its current
// state and addresses. Epoch 0, or Rejoin, asks for a new epoch: the node
// is (re)starting, or learnt it was fenced; the record starts over as
// joining whatever State says, so it owns nothing before it has caught up
// and said ready under the new epoch.
type NodeHeartbeat struct {
	ID       string `json:"id"`
	Epoch    uint64 `json:"epoch"`
	Rejoin   bool   `json:"rejoin,omitempty"`
	State    string `json:"state"`
	APIAddr  string `json:"api_addr,omitempty"`
	PeerAddr string `json:"peer_addr,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"`
}

func (*NodeHeartbeat) Kind() string { return "node.heartbeat" }

// Apply returns the epoch the node now holds (uint64).
func (c *NodeHeartbeat) Apply(tx *Tx) (any, error) {
	if c.ID == "" || len(c.ID) > 128 {
		return nil, errors.New("catalog: heartbeat without a valid node id")
	}
	switch c.State {
	case NodeJoining, NodeReady, NodeDraining:
	default:
		return nil, errors.New("catalog: heartbeat with an unknown node state")
	}
	cur := tx.next.Nodes[c.ID]
	if cur == nil && len(tx.next.Nodes) >= MaxNodes {
		return nil, errors.New("catalog: membership table full")
	}
	next := NodeRecord{ID: c.ID, State: c.State, APIAddr: c.APIAddr, PeerAddr: c.PeerAddr, RaftAddr: c.RaftAddr, Beat: tx.index}
	switch {
	case c.Epoch == 0 || c.Rejoin:
		next.Epoch = 1
		if cur != nil {
			next.Epoch = cur.Epoch + 1
		}
		next.State = NodeJoining
	case cur == nil || cur.Epoch != c.Epoch || cur.Fenced:
		return nil, ErrFenced
	default:
		next.Epoch = cur.Epoch
		if cur.State == NodeDraining && next.State != NodeDraining {
			// a draining node never comes back under the same epoch
			next.State = NodeDraining
		}
	}
	tx.nodes()[c.ID] = &next
	return next.Epoch, nil
}

// FenceNode ends a node's liveness epoch. The leader applies it once the
// node's renewals have stopped for longer than the liveness TTL, so the
// node's right to decide has lapsed before its partitions move. A fence
// naming an epoch that is no longer current does nothing.
type FenceNode struct {
	ID    string `json:"id"`
	Epoch uint64 `json:"epoch"`
}

func (*FenceNode) Kind() string { return "node.fence" }

// Apply returns whether the fence took effect.
func (c *FenceNode) Apply(tx *Tx) (any, error) {
	cur := tx.next.Nodes[c.ID]
	if cur == nil || cur.Epoch != c.Epoch || cur.Fenced {
		return false, nil
	}
	next := *cur
	next.Fenced = true
	tx.nodes()[c.ID] = &next
	return true, nil
}

// RemoveNode drops a node's record: after a graceful leave (the node
// drained and handed off first) or when a fenced node is reaped.
type RemoveNode struct {
	ID string `json:"id"`
	// Epoch, when set, removes the record only at that epoch.
	Epoch uint64 `json:"epoch,omitempty"`
}

func (*RemoveNode) Kind() string { return "node.remove" }

func (c *RemoveNode) Apply(tx *Tx) (any, error) {
	cur := tx.next.Nodes[c.ID]
	if cur == nil || (c.Epoch != 0 && cur.Epoch != c.Epoch) {
		return false, nil
	}
	delete(tx.nodes(), c.ID)
	return true, nil
}

// membershipKinds are the commands BeginMembership may apply.
var membershipKinds = map[string]bool{"node.heartbeat": true, "node.fence": true, "node.remove": true}

// IsMembership reports whether a command kind only changes membership.
func IsMembership(kind string) bool { return membershipKinds[kind] }

// ringMembers is the ring's member set under the current records.
func ringMembers(nodes map[string]*NodeRecord) []RingMember {
	var out []RingMember
	for _, r := range nodes {
		if r.InRing() {
			out = append(out, RingMember{ID: r.ID, Epoch: r.Epoch, APIAddr: r.APIAddr, PeerAddr: r.PeerAddr, RaftAddr: r.RaftAddr})
		}
	}
	slices.SortFunc(out, func(a, b RingMember) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// commitRing moves the ring forward when the commands of a transaction
// changed its member set: the previous ring is kept, so a node that gains a
// partition knows whose right must end first.
func (tx *Tx) commitRing(index uint64) {
	if !tx.ringTouched {
		return
	}
	m := ringMembers(tx.next.Nodes)
	if slices.Equal(m, tx.next.Ring.Members) {
		return
	}
	tx.next.PrevRing = tx.next.Ring
	tx.next.Ring = RingState{Index: index, Members: m}
}
