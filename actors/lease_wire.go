package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/proto/actorpb"
)

// The wire side of the concurrency-lease ops (lease.go), and the hand-off
// of lease sets to a partition's new owner on a planned move (join or
// leave). Lease sets live on their owner only: a crashed owner's holders
// are lost and their slots come back at once on the successor, which is
// the documented trade-off of soft state; fencing tokens stay increasing
// because a rebuilt set starts at the clock in microseconds.

// OpKind implements WireOp.
func (*LeaseReserve) OpKind() string { return "lease.reserve" }

// AppendOp implements WireOp.
func (o *LeaseReserve) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseReserve{Key: o.Key, LeaseId: o.LeaseID, Capacity: int64(o.Capacity), Expires: o.Expires})
}

// UnmarshalOp implements WireOp.
func (o *LeaseReserve) UnmarshalOp(data []byte) error {
	var m actorpb.LeaseReserve
	err := gproto.Unmarshal(data, &m)
	o.Key, o.LeaseID, o.Capacity, o.Expires = m.Key, m.LeaseId, int(m.Capacity), m.Expires
	return err
}

// AppendResult implements WireOp.
func (o *LeaseReserve) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseReserveResult{Granted: o.Granted, Existing: o.Existing, Fence: o.Fence,
		HeldUntil: o.HeldUntil, InUse: int64(o.InUse), RetryAfter: o.RetryAfter})
}

// UnmarshalResult implements WireOp.
func (o *LeaseReserve) UnmarshalResult(data []byte) error {
	var m actorpb.LeaseReserveResult
	err := gproto.Unmarshal(data, &m)
	o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = m.Granted, m.Existing, m.Fence, m.HeldUntil, int(m.InUse), m.RetryAfter
	return err
}

// OpKind implements WireOp.
func (*LeaseRenew) OpKind() string { return "lease.renew" }

// AppendOp implements WireOp.
func (o *LeaseRenew) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseRef{Key: o.Key, LeaseId: o.LeaseID, Fence: o.Fence, Expires: o.Expires})
}

// UnmarshalOp implements WireOp.
func (o *LeaseRenew) UnmarshalOp(data []byte) error {
	var m actorpb.LeaseRef
	err := gproto.Unmarshal(data, &m)
	o.Key, o.LeaseID, o.Fence, o.Expires = m.Key, m.LeaseId, m.Fence, m.Expires
	return err
}

// AppendResult implements WireOp.
func (o *LeaseRenew) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.Flag{Yes: o.Held})
}

// UnmarshalResult implements WireOp.
func (o *LeaseRenew) UnmarshalResult(data []byte) error {
	var m actorpb.Flag
	err := gproto.Unmarshal(data, &m)
	o.Held = m.Yes
	return err
}

// OpKind implements WireOp.
func (*LeaseRelease) OpKind() string { return "lease.release" }

// AppendOp implements WireOp.
func (o *LeaseRelease) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseRef{Key: o.Key, LeaseId: o.LeaseID, Fence: o.Fence})
}

// UnmarshalOp implements WireOp.
func (o *LeaseRelease) UnmarshalOp(data []byte) error {
	var m actorpb.LeaseRef
	err := gproto.Unmarshal(data, &m)
	o.Key, o.LeaseID, o.Fence = m.Key, m.LeaseId, m.Fence
	return err
}

// AppendResult implements WireOp.
func (o *LeaseRelease) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.Flag{Yes: o.Released})
}

// UnmarshalResult implements WireOp.
func (o *LeaseRelease) UnmarshalResult(data []byte) error {
	var m actorpb.Flag
	err := gproto.Unmarshal(data, &m)
	o.Released = m.Yes
	return err
}

// OpKind implements WireOp.
func (*LeaseUsage) OpKind() string { return "lease.usage" }

// AppendOp implements WireOp.
func (o *LeaseUsage) AppendOp(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseRef{Key: o.Key})
}

// UnmarshalOp implements WireOp.
func (o *LeaseUsage) UnmarshalOp(data []byte) error {
	var m actorpb.LeaseRef
	err := gproto.Unmarshal(data, &m)
	o.Key = m.Key
	return err
}

// AppendResult implements WireOp.
func (o *LeaseUsage) AppendResult(b []byte) ([]byte, error) {
	return appendPB(b, &actorpb.LeaseUsageResult{InUse: int64(o.InUse), Fence: o.Fence})
}

// UnmarshalResult implements WireOp.
func (o *LeaseUsage) UnmarshalResult(data []byte) error {
	var m actorpb.LeaseUsageResult
	err := gproto.Unmarshal(data, &m)
	o.InUse, o.Fence = int(m.InUse), m.Fence
	return err
}

// Replicated implements Exporter: lease sets live on their owner only.
func (t *leaseTable) Replicated() bool { return false }

// Export implements Exporter.
func (t *leaseTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := map[int32]*actorpb.LeaseTable{}
	for k, s := range t.m {
		if !in(int(s.partition)) {
			continue
		}
		tb := sets[s.partition]
		if tb == nil {
			tb = &actorpb.LeaseTable{}
			sets[s.partition] = tb
		}
		e := &actorpb.LeaseEntry{Key: k, Fence: s.fence, Touched: s.touched, Partition: uint32(s.partition)}
		for id, h := range s.holders {
			e.Holders = append(e.Holders, &actorpb.LeaseHolder{LeaseId: id, Expires: h.expires, Fence: h.fence})
		}
		tb.Entries = append(tb.Entries, e)
	}
	for p, tb := range sets {
		if b, err := gproto.Marshal(tb); err == nil {
			out(int(p), b)
		}
	}
}

// Import implements Exporter. A set the new owner already holds (a
// grant that raced the hand-off) takes the union of both sets' live
// holders, the newer grant of one lease id, and the larger fence, so no
// holding is lost and no fencing token repeats. The union may briefly
// exceed capacity; new grants wait until it is back under.
func (t *leaseTable) Import(data []byte, now int64) error {
	var tb actorpb.LeaseTable
	if err := gproto.Unmarshal(data, &tb); err != nil {
		return err
	}
	for _, e := range tb.Entries {
		s := t.m[e.Key]
		if s == nil {
			s = &leaseSet{holders: make(map[string]leaseHolder, len(e.Holders)), partition: int32(e.Partition)}
			t.m[e.Key] = s
		}
		s.fence = max(s.fence, e.Fence)
		s.touched = max(s.touched, e.Touched)
		for _, h := range e.Holders {
			if h.Expires <= now {
				continue
			}
			if cur, ok := s.holders[h.LeaseId]; ok && cur.fence >= h.Fence {
				continue
			}
			s.holders[h.LeaseId] = leaseHolder{expires: h.Expires, fence: h.Fence}
		}
		s.nextExpiry = s.earliest()
	}
	return nil
}
