package cluster

import (
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// A node gossips the peer stream version it serves; the metadata of a
// node of the previous build has none, which reads as 0 (HTTP frames).
func TestNodeMetaCarriesThePeerStreamVersion(t *testing.T) {
	m := Meta{ID: "n1", PeerAddr: "127.0.0.1:7001", State: Ready, Version: "v", PeerStream: StreamVersion}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, m)
	}
	old, _ := gproto.Marshal(&clusterpb.NodeMeta{Id: "n0", PeerAddr: "127.0.0.1:7000", State: clusterpb.NodeState_NODE_STATE_READY})
	if got, err := DecodeMeta(old); err != nil || got.PeerStream != 0 {
		t.Fatalf("metadata without the field: %+v, %v; want peer stream 0", got, err)
	}
}
