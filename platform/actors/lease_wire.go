package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/actorpb"
)

// The hand-off of lease sets (lease.go). Lease sets are replicated state:
// grants, renewals and releases reach the partition's replica before the
// answer, so a lease table moves to a partition's new owner and is copied
// to a new replica, like single-use markers. The per-partition fence
// floor (the last fence of sets evicted while idle) travels with it.

// Replicated implements Exporter: lease sets also live on the replica.
func (t *leaseTable) Replicated() bool { return true }

// Export implements Exporter.
func (t *leaseTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := newPartitionSets(in, out, func() *actorpb.LeaseTable { return &actorpb.LeaseTable{} })
	for k, s := range t.m {
		tb, ok := sets.of(s.partition)
		if !ok {
			continue
		}
		e := &actorpb.LeaseEntry{Key: k, Fence: s.fence, Touched: s.touched, Partition: uint32(s.partition)}
		for id, h := range s.holders {
			e.Holders = append(e.Holders, &actorpb.LeaseHolder{LeaseId: id, Expires: h.expires, Fence: h.fence})
		}
		tb.Entries = append(tb.Entries, e)
	}
	for p, f := range t.floor {
		if tb, ok := sets.of(p); ok {
			tb.FenceFloor, tb.Partition = f, uint32(p)
		}
	}
	sets.emit()
}

// Import implements Exporter. A set the receiver already holds (a grant
// that raced the hand-off, or the replica's own copy) takes the union of
// both sets' live holders, the newer grant (higher fence) of one lease
// id, and the larger last fence, so no holding is lost and no fencing
// token repeats; the partition's fence floor keeps the larger. The union
// may briefly exceed capacity; new grants wait until it is back under.
func (t *leaseTable) Import(data []byte, now int64) error {
	var tb actorpb.LeaseTable
	if err := gproto.Unmarshal(data, &tb); err != nil {
		return err
	}
	for _, e := range tb.Entries {
		s := t.m[e.Key]
		if s == nil {
			p := int32(e.Partition)
			s = &leaseSet{holders: make(map[string]leaseHolder, len(e.Holders)), partition: p, fence: t.floor[p]}
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
			s.fence = max(s.fence, h.Fence)
		}
		s.nextExpiry = s.earliest()
	}
	if tb.FenceFloor > 0 {
		t.raiseFloor(int32(tb.Partition), tb.FenceFloor)
	}
	return nil
}
