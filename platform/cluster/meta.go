package cluster

import (
	"fmt"

	"github.com/hashicorp/memberlist"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// NodeState is where a node is in its life in the cluster. Only Ready
// nodes own partitions; a Joining node is catching up on Raft, a Draining
// one is handing its partitions over before it leaves.
type NodeState int

// The node states, as gossiped.
const (
	Joining  NodeState = NodeState(clusterpb.NodeState_NODE_STATE_JOINING)
	Ready    NodeState = NodeState(clusterpb.NodeState_NODE_STATE_READY)
	Draining NodeState = NodeState(clusterpb.NodeState_NODE_STATE_DRAINING)
)

func (s NodeState) String() string {
	switch s {
	case Joining:
		return "joining"
	case Ready:
		return "ready"
	case Draining:
		return "draining"
	}
	return fmt.Sprintf("state-%d", int(s))
}

// Meta is the metadata every node gossips about itself. It is keyed by
// ID, never by address: several nodes may share a host, and a node keeps
// its ID across restarts and address changes.
type Meta struct {
	ID       string
	APIAddr  string
	PeerAddr string
	RaftAddr string
	State    NodeState
	Version  string
	Formats  Formats // what the node reads; zero from builds before versions
	// PeerStream is the peer stream protocol version the node serves (0:
	// none, a build of the previous version).
	PeerStream uint32
}

// Member returns the ring's view of the node.
func (m Meta) Member() Member {
	return Member{ID: m.ID, APIAddr: m.APIAddr, PeerAddr: m.PeerAddr, RaftAddr: m.RaftAddr}
}

// Encode returns the gossip form of m; it fails when it exceeds memberlist's
// metadata limit (512 bytes), which only absurdly long addresses reach.
func (m Meta) Encode() ([]byte, error) {
	b, err := gproto.Marshal(&clusterpb.NodeMeta{Id: m.ID, ApiAddr: m.APIAddr, PeerAddr: m.PeerAddr,
		RaftAddr: m.RaftAddr, State: clusterpb.NodeState(m.State), Version: m.Version, Formats: m.Formats.pb(), PeerStream: m.PeerStream})
	if err != nil {
		return nil, err
	}
	if len(b) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("cluster: node metadata is %d bytes, over the %d-byte limit", len(b), memberlist.MetaMaxSize)
	}
	return b, nil
}

// DecodeMeta parses gossiped metadata.
func DecodeMeta(b []byte) (Meta, error) {
	var pb clusterpb.NodeMeta
	if err := gproto.Unmarshal(b, &pb); err != nil {
		return Meta{}, fmt.Errorf("cluster: undecodable node metadata: %w", err)
	}
	if pb.Id == "" {
		return Meta{}, fmt.Errorf("cluster: node metadata without an id")
	}
	return Meta{ID: pb.Id, APIAddr: pb.ApiAddr, PeerAddr: pb.PeerAddr, RaftAddr: pb.RaftAddr,
		State: NodeState(pb.State), Version: pb.Version, Formats: formatsOf(pb.Formats), PeerStream: pb.PeerStream}, nil
}
