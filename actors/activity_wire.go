package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/proto/actorpb"
)

// The wire side of Activity (activity.go): one actorpb message each way.

// OpKind implements WireOp.
func (*Activity) OpKind() string { return "account.activity" }

// AppendOp implements WireOp.
func (o *Activity) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.Activity{Key: o.Key, Member: o.Member, Record: o.Record, Failed: o.Failed,
		Succeeded: o.Succeeded, WindowNs: o.WindowNs, RetainNs: o.RetainNs, MaxMembers: int64(o.MaxMembers)})
}

// UnmarshalOp implements WireOp.
func (o *Activity) UnmarshalOp(data []byte) error {
	var m actorpb.Activity
	if err := gproto.Unmarshal(data, &m); err != nil {
		return err
	}
	o.Key, o.Member, o.Record, o.Failed, o.Succeeded = m.Key, m.Member, m.Record, m.Failed, m.Succeeded
	o.WindowNs, o.RetainNs = m.WindowNs, m.RetainNs
	o.MaxMembers = int(min(max(m.MaxMembers, 0), MaxActivityMembers))
	return nil
}

// AppendResult implements WireOp.
func (o *Activity) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.ActivityResult{Failures: o.Failures, Distinct: int64(o.Distinct), Seen: o.Seen, Known: o.Known})
}

// UnmarshalResult implements WireOp.
func (o *Activity) UnmarshalResult(data []byte) error {
	var m actorpb.ActivityResult
	err := gproto.Unmarshal(data, &m)
	o.Failures, o.Distinct, o.Seen, o.Known = m.Failures, int(m.Distinct), m.Seen, m.Known
	return err
}
