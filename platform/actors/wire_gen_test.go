package actors

import (
	"bytes"
	"os"
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/actors/internal/wiregen"
	"github.com/trustd/trustd/platform/proto/actorpb"
)

// TestWireGenIsUpToDate fails when an op's directive or wire tags changed
// without `go generate ./platform/actors/`.
func TestWireGenIsUpToDate(t *testing.T) {
	want, err := wiregen.Generate(".", "../../platform/proto/actorpb")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(wiregen.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./platform/actors/", wiregen.Output)
	}
	want, err = wiregen.GenerateReference(".", "../../platform/proto/actorpb")
	if err != nil {
		t.Fatal(err)
	}
	if got, err = os.ReadFile(wiregen.RefOutput); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./platform/actors/", wiregen.RefOutput)
	}
}

func appendPB(b []byte, m gproto.Message) ([]byte, error) {
	return gproto.MarshalOptions{}.MarshalAppend(b, m)
}

// The decoders a wire tag names still refuse what no honest peer sends.
func TestWireDecodersRefuseOutOfRange(t *testing.T) {
	short, _ := appendPB(nil, &actorpb.ClaimIdempotency{Key: "k", Fingerprint: []byte{1, 2, 3}})
	if err := (&ClaimIdempotency{}).UnmarshalOp(short); err == nil {
		t.Error("a 3-byte idempotency fingerprint was accepted")
	}
	state, _ := appendPB(nil, &actorpb.BreakerPeekResult{State: 7})
	if err := (&BreakerPeek{}).UnmarshalResult(state); err == nil {
		t.Error("breaker state 7 was accepted")
	}
	reason, _ := appendPB(nil, &actorpb.BreakerAdmitResult{Reason: 200})
	if err := (&BreakerAdmit{}).UnmarshalResult(reason); err == nil {
		t.Error("admission reason 200 was accepted")
	}
	fb, _ := appendPB(nil, &actorpb.BreakerFeedbackResult{State: 3})
	if err := (&BreakerFeedback{}).UnmarshalResult(fb); err == nil {
		t.Error("feedback state 3 was accepted")
	}
	many, _ := appendPB(nil, &actorpb.Activity{Key: "k", MaxMembers: 1 << 40})
	a := &Activity{}
	if err := a.UnmarshalOp(many); err != nil || a.MaxMembers != MaxActivityMembers {
		t.Errorf("max members from the wire: %d, %v; want clamped to %d", a.MaxMembers, err, MaxActivityMembers)
	}
}
