package actors

import "fmt"

// The wire side of ops. An op whose key may be owned by another node
// implements WireOp, so the cluster can carry it there and carry its
// result back; the cluster never interprets either. Its encodings are
// protobuf messages of package proto/actorpb, so every byte that crosses a
// node has a schema.

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

// wireOps constructs a wire op by kind. Adding a cross-node op is one line
// here and its encoding next to the op.
var wireOps = map[string]func() WireOp{
	"marker.consume": func() WireOp { return &Consume{} },
	"marker.seen":    func() WireOp { return &Seen{} },
	"bucket.reserve": func() WireOp { return &Reserve{} },
	"bucket.refund":  func() WireOp { return &Refund{} },

	"velocity.count_hit":  func() WireOp { return &CountHit{} },
	"idempotency.claim":   func() WireOp { return &ClaimIdempotency{} },
	"assessment.put":      func() WireOp { return &PutAssessment{} },
	"assessment.get":      func() WireOp { return &GetAssessment{} },
	"assessment.annotate": func() WireOp { return &AnnotateAssessment{} },
	"reputation.label":    func() WireOp { return &LabelSubject{} },
	"reputation.get":      func() WireOp { return &SubjectLabel{} },

	"redeem":             func() WireOp { return &Redeem{} },
	"challenge_rate.hit": func() WireOp { return &Hit{} },
	"verification.get":   func() WireOp { return &GetVerification{} },

	"lease.reserve": func() WireOp { return &LeaseReserve{} },
	"lease.renew":   func() WireOp { return &LeaseRenew{} },
	"lease.release": func() WireOp { return &LeaseRelease{} },
	"lease.usage":   func() WireOp { return &LeaseUsage{} },

	"breaker.admit":    func() WireOp { return &BreakerAdmit{} },
	"breaker.feedback": func() WireOp { return &BreakerFeedback{} },
	"breaker.peek":     func() WireOp { return &BreakerPeek{} },

	"account.activity": func() WireOp { return &Activity{} },
}

// NewWireOp returns an empty op of kind, ready for UnmarshalOp.
func NewWireOp(kind string) (WireOp, error) {
	mk, ok := wireOps[kind]
	if !ok {
		return nil, fmt.Errorf("actors: unknown op kind %q", kind)
	}
	return mk(), nil
}
