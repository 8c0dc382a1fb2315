package cluster

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// TestAppendAskIsProto: the hand-coded ask envelope is byte for byte what
// proto.Marshal writes for the same clusterpb.Ask, after whatever b held,
// and askMsg.decode reads it back.
func TestAppendAskIsProto(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 4))
	kinds := []string{"", "bucket.reserve", "marker.seen", "é/kind", "\xff"}
	for i := range 2000 {
		ask := &clusterpb.Ask{
			Epoch:     []uint64{0, 1, r.Uint64(), math.MaxUint64}[r.IntN(4)],
			Partition: []uint32{0, 1, r.Uint32N(1024), math.MaxUint32}[r.IntN(4)],
			Kind:      kinds[r.IntN(len(kinds))],
			Replica:   r.IntN(2) == 0,
			Format:    AskFormat,
		}
		if r.IntN(2) == 0 {
			ask.Trace = make([]byte, traceLen)
			for j := range ask.Trace {
				ask.Trace[j] = byte(r.Uint32())
			}
		}
		if n := r.IntN(3); n > 0 {
			ask.Op = make([]byte, r.IntN(200*n))
			for j := range ask.Op {
				ask.Op[j] = byte(r.Uint32())
			}
		}
		prefix := []byte{byte(i), 0x7f}
		got, err := appendAsk(bytes.Clone(prefix), ask.Epoch, ask.Partition, ask.Kind, ask.Op, ask.Replica, ask.Trace)
		want, werr := gproto.Marshal(ask)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%v: appendAsk err %v, proto.Marshal err %v", ask, err, werr)
		}
		if err != nil {
			continue
		}
		if !bytes.Equal(got, append(prefix, want...)) {
			t.Fatalf("%v:\n appendAsk %x\n proto     %x", ask, got[len(prefix):], want)
		}
		var a askMsg
		if !a.decode(got[len(prefix):]) || a.epoch != ask.Epoch || a.partition != uint64(ask.Partition) ||
			string(a.kind) != ask.Kind || !bytes.Equal(a.op, ask.Op) || a.replica != ask.Replica ||
			!bytes.Equal(a.trace, ask.Trace) {
			t.Fatalf("%v: decodes as %+v", ask, a)
		}
	}
}
