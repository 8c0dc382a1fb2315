package actors

import (
	"errors"
	"fmt"
)

//go:generate go run ./internal/wiregen/cmd/wiregen

// The wire side of ops. An op whose key may be owned by another node
// implements WireOp, so the cluster can carry it there and carry its
// result back; the cluster never interprets either. Its encodings are
// protobuf messages of package platform/proto/actorpb, so every byte that crosses a
// node has a schema. The codecs are not proto's reflection, though:
// wiregen writes them with protowire, byte for byte what proto.Marshal
// writes, accepting and refusing what proto.Unmarshal does (the
// differential test and FuzzWireDecode in wire_diff_test.go hold them to
// that), so a forwarded op costs no reflection on either node.

// WireOp is an Op that can cross nodes. Append* encode and Unmarshal*
// decode; inputs and result fields travel separately, so a forwarded op
// runs on its owner exactly as it would have run locally.
type WireOp interface {
	Op
	// OpKind names the op in the registry; it never changes once shipped.
	OpKind() string
	// AppendOp appends the encoded inputs to b.
	AppendOp(b []byte) ([]byte, error)
	// UnmarshalOp sets the inputs from data.
	UnmarshalOp(data []byte) error
	// AppendResult appends the encoded result fields to b.
	AppendResult(b []byte) ([]byte, error)
	// UnmarshalResult sets the result fields from data.
	UnmarshalResult(data []byte) error
}

// Replicated is a WireOp whose effect must also reach the partition's
// replica before the caller gets an answer, so that a replay after the
// owner dies is still refused by its successor (the replica).
type Replicated interface {
	WireOp
	// ReplicaOp returns the op to run on the replica after this op ran on
	// the owner, or nil when there is nothing to replicate (a replay the
	// owner already refused).
	ReplicaOp() WireOp
	// MergeReplica folds the replica's outcome into this op's result: for
	// a marker, a use the replica already knew is not a first use.
	MergeReplica(replica WireOp)
	// Revert returns the op that undoes this op's effect on the owner when
	// the replica could not confirm, or nil.
	Revert() Op
}

// Adopter is a Replicated op whose owner takes over the replica's state
// when the replica knew better: after MergeReplica, the router applies
// Adopt's op (if any) on the owner before answering.
type Adopter interface {
	Replicated
	Adopt() Op
}

// The five WireOp methods of every op, and the registry of kinds
// (wireOps), are generated into wire_gen.go by internal/wiregen from a
// directive on the op type and tags on its fields:
//
//	//actors:wire lease.renew LeaseRef Flag
//	type LeaseRenew struct {
//		Key  string `wire:"op"`
//		Held bool   `wire:"result" wirename:"Yes"`
//	}
//
// Adding a cross-node op is therefore: the op (with its directive and
// tags), its actorpb messages in platform/proto/shardops.proto, and `go generate
// ./platform/actors/`. A mapping that is not a plain field or scalar conversion is
// a small function next to the op's other wire code (wirevia, wireenc,
// wiredec); see the package documentation of internal/wiregen.

// Errors of the generated codecs, where proto would say the same.
var (
	errWireUTF8  = errors.New("actors: wire: string field contains invalid UTF-8")
	errWireField = errors.New("actors: wire: invalid field number")
)

// NewWireOpOf is NewWireOp of a kind read off the wire, without making a
// string of it.
func NewWireOpOf(kind []byte) (WireOp, error) {
	mk, ok := wireOps[string(kind)]
	if !ok {
		return nil, fmt.Errorf("actors: unknown op kind %q", kind)
	}
	return mk(), nil
}

// NewWireOp returns an empty op of kind, ready for UnmarshalOp.
func NewWireOp(kind string) (WireOp, error) {
	mk, ok := wireOps[kind]
	if !ok {
		return nil, fmt.Errorf("actors: unknown op kind %q", kind)
	}
	return mk(), nil
}
