package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/proto/actorpb"
)

// The wire side of the lease ops (lease.go), and the hand-off
// of lease sets to a partition's new owner on a planned move (join or
// leave). Lease sets live on their owner only: a crashed owner's holders
// are lost and their slots come back at once on the successor, which is
// the documented trade-off of soft state; fencing tokens stay increasing
// because a rebuilt set starts at the clock in microseconds.

// Replicated implements Exporter: lease sets live on their owner only.
func (t *leaseTable) Replicated() bool { return false }

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
	sets.emit()
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
