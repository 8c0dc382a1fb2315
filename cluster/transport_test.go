package cluster

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

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

// A peer of the previous version answers 404 to frames: asks still reach
// it, one per request.
func TestAPeerWithoutFramesGetsOneAskPerRequest(t *testing.T) {
	p := mustNewPair(t)
	srv := p.b.Ring().Members[1]
	tr := p.a.fwd.(*Transport)
	// Point b's address at a listener that refuses frames and passes
	// single asks on to b.
	old := NewTransport("k", nil)
	legacy := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == pathAsks {
			ctx.Error("no such peer operation", fasthttp.StatusNotFound)
			return
		}
		out, err := old.call(srv.PeerAddr, string(ctx.Path()), ctx.PostBody(), nil, time.Second)
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetBody(out)
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = legacy.Serve(ln) }()
	t.Cleanup(func() { _ = legacy.Shutdown() })
	members := p.a.Ring().Members
	members[1].PeerAddr = ln.Addr().String()
	p.a.SetRing(NewRing(9, members, "a"))
	key := p.keyOwnedBy("b")
	for i := range 3 {
		op := &actors.Reserve{Key: key, Bucket: ratelimit.BucketConfig{Capacity: 10, RefillAmount: 1, RefillInterval: 1 << 62}, Cost: 1}
		if err := p.a.Ask(key, op); err != nil || !op.OK || op.Remaining != int64(9-i) {
			t.Fatalf("ask %d through a legacy peer: ok=%v remaining=%d err=%v", i, op.OK, op.Remaining, err)
		}
	}
	if frames, _ := tr.Frames(); frames != 1 {
		t.Fatalf("%d frames sent; want 1 (refused), then single asks", frames)
	}
}

// A node whose ring just shrank to itself alone (every peer looked dead:
// a starved node can see that while its peers serve) refuses single use
// for a grace period rather than deciding a first use without a replica.
func TestANodeLeftAloneAMomentAgoRefusesSingleUse(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	exp := time.Now().Add(time.Minute).UnixNano()
	p.a.SetRing(NewRing(5, p.a.Ring().Members[:1], "a"))
	op := &actors.Consume{ID: key, Expires: exp}
	if err := p.a.Ask(key, op); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("consume alone right after the peers vanished: first=%v err=%v, want unavailable", op.First, err)
	}
	seen := &actors.Seen{ID: key}
	if err := p.a.AskLocal(Partition(key), seen); err != nil || seen.Used {
		t.Fatalf("the refused consume left a use: used=%v err=%v", seen.Used, err)
	}
	// Soft state is not single use: a bucket still answers.
	if err := p.a.Ask(key, &actors.Reserve{Key: key, Bucket: ratelimit.BucketConfig{Capacity: 1, RefillAmount: 1, RefillInterval: 1}, Cost: 1}); err != nil {
		t.Fatalf("reserve alone: %v", err)
	}
	// After the grace, a node alone is a single node.
	p.a.soloSince.Store(time.Now().Add(-soloGrace - time.Second).UnixNano())
	op = &actors.Consume{ID: key, Expires: exp}
	if err := p.a.Ask(key, op); err != nil || !op.First {
		t.Fatalf("consume alone after the grace: first=%v err=%v", op.First, err)
	}
}
