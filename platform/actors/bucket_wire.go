package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/platform/proto/actorpb"
)

// The wire side of the rate-limit ops (bucket.go): Reserve and Refund
// cross nodes as actorpb messages, and a bucket table hands its entries
// to a partition's new owner, which keeps the more restrictive of two
// states for one key.

func bucketConfigPB(c ratelimit.BucketConfig) *actorpb.BucketConfig {
	return &actorpb.BucketConfig{Capacity: c.Capacity, RefillAmount: c.RefillAmount, RefillInterval: c.RefillInterval}
}

func bucketConfigOf(c *actorpb.BucketConfig) ratelimit.BucketConfig {
	return ratelimit.BucketConfig{Capacity: c.GetCapacity(), RefillAmount: c.GetRefillAmount(), RefillInterval: c.GetRefillInterval()}
}

// Replicated implements Exporter: buckets live on their owner only; a
// bucket lost with its owner restarts full (the documented trade-off).
func (t *bucketTable) Replicated() bool { return false }

// Export implements Exporter.
func (t *bucketTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := newPartitionSets(in, out, func() *actorpb.BucketSet { return &actorpb.BucketSet{} })
	for k, e := range t.m {
		s, ok := sets.of(e.partition)
		if !ok {
			continue
		}
		s.Entries = append(s.Entries, &actorpb.BucketEntry{Key: k, Cfg: bucketConfigPB(e.cfg), Tokens: e.b.Tokens, Last: e.b.Last,
			QuotaStart: e.q.Start, QuotaUsed: e.q.Used, Window: uint32(e.window), Partition: uint32(e.partition)})
	}
	sets.emit()
}

// Import implements Exporter: an entry the new owner already holds keeps
// the fewer tokens and, in the same quota window, the larger use, so a
// hand-off never mints capacity.
func (t *bucketTable) Import(data []byte, now int64) error {
	var s actorpb.BucketSet
	if err := gproto.Unmarshal(data, &s); err != nil {
		return err
	}
	for _, in := range s.Entries {
		e := &bucketEntry{b: ratelimit.Bucket{Tokens: in.Tokens, Last: in.Last}, cfg: bucketConfigOf(in.Cfg),
			q: ratelimit.Quota{Start: in.QuotaStart, Used: in.QuotaUsed}, window: ratelimit.Window(in.Window), partition: int32(in.Partition)}
		cur, ok := t.m[in.Key]
		if !ok {
			t.m[in.Key] = e
			continue
		}
		if e.b.Tokens < cur.b.Tokens {
			cur.b = e.b
		}
		if e.q.Start == cur.q.Start && e.q.Used > cur.q.Used {
			cur.q.Used = e.q.Used
		} else if e.q.Start > cur.q.Start {
			cur.q = e.q
		}
	}
	return nil
}
