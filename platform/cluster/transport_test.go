package cluster

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Many callers forwarding to one owner at once: every ask is answered with
// its own result, the bucket admits exactly its capacity, and the asks
// travel in fewer frames (HTTP requests, or writes to the stream) than
// there are asks. The HTTP frames are what a node of the previous build
// sends, so this build serves them as it always did.
func TestConcurrentForwardedAsksCoalesceAndStayExact(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mk      func(testing.TB) *pair
		streams uint64
	}{
		{"in HTTP frames (a peer without streams)", mustNewPairHTTP, 0},
		{"over a peer stream", mustNewPair, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.mk(t)
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
			tr := p.a.fwd.(*Transport)
			frames, asks := tr.Frames()
			if asks != callers*each || frames >= asks {
				t.Fatalf("%d asks in %d frames: want all %d asks, coalesced", asks, frames, callers*each)
			}
			if opened := tr.StreamStats().Opened; opened != tt.streams {
				t.Fatalf("%d streams opened, want %d", opened, tt.streams)
			}
			t.Logf("%d asks in %d frames (%.1f per frame)", asks, frames, float64(asks)/float64(frames))
		})
	}
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

// An owner decides only while its liveness right (renewed through the
// quorum) stands and only for partitions it holds: a node cut off from
// the quorum, or one that gained a partition a moment ago, answers
// unavailable and leaves no use behind.
func TestAnOwnerDecidesOnlyWhileLiveAndHolding(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("a")
	exp := time.Now().Add(time.Minute).UnixNano()
	consume := func() (*actors.Consume, error) {
		op := &actors.Consume{ID: key, Expires: exp}
		return op, p.a.Ask(key, op)
	}
	// lapsed: the last renewal's right ended a moment ago
	p.a.renew(time.Now().Add(-time.Millisecond))
	if op, err := consume(); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errLapsed) {
		t.Fatalf("consume with a lapsed liveness: first=%v err=%v, want unavailable (lapsed)", op.First, err)
	}
	seen := &actors.Seen{ID: key}
	if err := p.a.AskLocal(Partition(key), seen); err != nil || seen.Used {
		t.Fatalf("the refused consume left a use: used=%v err=%v", seen.Used, err)
	}
	// renewed, but under a ring whose partitions are not held yet
	p.a.renew(time.Now().Add(time.Minute))
	unheld := NewRing(p.a.Ring().Epoch+1, p.a.Ring().Members, "a")
	if !p.a.publish(unheld) {
		t.Fatal("newer ring not installed")
	}
	if op, err := consume(); !errors.Is(err, errNotHeld) {
		t.Fatalf("consume of a partition not yet held: first=%v err=%v, want unavailable (not held)", op.First, err)
	}
	unheld.hold(Partition(key))
	if op, err := consume(); err != nil || !op.First {
		t.Fatalf("consume once held and live: first=%v err=%v", op.First, err)
	}
}
