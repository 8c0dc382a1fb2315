package cluster

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/ratelimit"
)

// Many callers forwarding to one owner at once: every ask is answered with
// its own result, the bucket admits exactly its capacity, and the asks
// travel in fewer frames than there are asks.
func TestConcurrentForwardedAsksCoalesceAndStayExact(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	const capacity, callers, each = 500, 64, 20
	cfg := ratelimit.BucketConfig{Capacity: capacity, RefillAmount: 1, RefillInterval: 1 << 62}
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				op := &actors.Reserve{Key: key, Bucket: cfg, Cost: 1}
				if err := p.a.Ask(key, op); err != nil {
					t.Error(err)
					return
				}
				if op.OK {
					allowed.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != capacity || refused.Load() != callers*each-capacity {
		t.Fatalf("allowed %d, refused %d; want exactly %d of %d", allowed.Load(), refused.Load(), capacity, callers*each)
	}
	frames, asks := p.a.fwd.(*Transport).Frames()
	if asks != callers*each || frames >= asks {
		t.Fatalf("%d asks in %d frames: want all %d asks, coalesced", asks, frames, callers*each)
	}
	t.Logf("%d asks in %d frames (%.1f per frame)", asks, frames, float64(asks)/float64(frames))
}

// BenchmarkAskForwardedConcurrent is BenchmarkAskForwardedParallel with 64
// callers, about what a node under load has in flight.
func BenchmarkAskForwardedConcurrent(b *testing.B) {
	p := mustNewPair(b)
	key := p.keyOwnedBy("b")
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := &actors.Seen{ID: key}
		for pb.Next() {
			if err := p.a.Ask(key, op); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
