package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
)

// pair is two routers in one process that forward to each other over the
// real peer transport on loopback: a two-node cluster without gossip or
// Raft, for the router's own tests and benchmarks.
type pair struct {
	a, b   *Router
	ring   func(epoch uint64, selfID string) *Ring
	tb     testing.TB
	served []*fasthttp.Server
}

func mustNewPair(tb testing.TB) *pair {
	tb.Helper()
	return newPair(tb, true)
}

// mustNewPairHTTP is mustNewPair whose nodes do not advertise streams to
// each other: asks travel in HTTP frames, as to a node of the previous
// build.
func mustNewPairHTTP(tb testing.TB) *pair {
	tb.Helper()
	return newPair(tb, false)
}

func newPair(tb testing.TB, streams bool) *pair {
	tb.Helper()
	p := &pair{tb: tb}
	var members []Member
	var lns []net.Listener
	for _, id := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns = append(lns, ln)
		members = append(members, Member{ID: id, PeerAddr: ln.Addr().String()})
	}
	p.ring = func(epoch uint64, self string) *Ring { return NewRing(epoch, members, self) }
	mk := func(id string, ln net.Listener, other string) *Router {
		sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
		tb.Cleanup(sys.Stop)
		tr := NewTransport("k", nil)
		tr.SetNodeID(id)
		if streams {
			tr.Advertise(other, StreamVersion)
		}
		r := NewRouter(p.ring(1, id), sys, tr, time.Second)
		c := &Cluster{router: r, token: peerToken("k"), trans: tr, log: slog.New(slog.DiscardHandler)}
		srv := c.newPeerServer()
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(ln) }()
		tb.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close(); c.streamSrv.close(); <-done })
		tb.Cleanup(tr.Close)
		return r
	}
	p.a, p.b = mk("a", lns[0], members[1].PeerAddr), mk("b", lns[1], members[0].PeerAddr)
	return p
}

// keyOwnedBy returns a key that id owns.
func (p *pair) keyOwnedBy(id string) string {
	r := p.a.Ring()
	for k := 0; ; k++ {
		key := fmt.Sprintf("key-%d", k)
		if r.Members[r.Owner(Partition(key))].ID == id {
			return key
		}
	}
}

func TestForwardedAskRunsOnTheOwnerAndReplicates(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	exp := time.Now().Add(time.Minute).UnixNano()
	op := &actors.Consume{ID: key, Expires: exp}
	if err := p.a.Ask(key, op); err != nil || !op.First {
		t.Fatalf("first consume through a: first=%v err=%v", op.First, err)
	}
	// The owner (b) and the replica (a) both hold the marker now.
	for name, r := range map[string]*Router{"owner": p.b, "replica": p.a} {
		seen := &actors.Seen{ID: key}
		if err := r.AskLocal(Partition(key), seen); err != nil || !seen.Used {
			t.Fatalf("%s does not hold the marker: %v", name, err)
		}
	}
	op = &actors.Consume{ID: key, Expires: exp}
	if err := p.b.Ask(key, op); err != nil || op.First {
		t.Fatalf("replay through b: first=%v err=%v", op.First, err)
	}
}

func TestAMarkerTheReplicaAlreadyHoldsIsNotAFirstUse(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	exp := time.Now().Add(time.Minute).UnixNano()
	// a held the partition before (it is the replica now) and saw the use.
	if err := p.a.AskLocal(Partition(key), &actors.Consume{ID: key, Expires: exp}); err != nil {
		t.Fatal(err)
	}
	op := &actors.Consume{ID: key, Expires: exp}
	if err := p.b.Ask(key, op); err != nil || op.First {
		t.Fatalf("consume on the new owner: first=%v err=%v, want a refused replay", op.First, err)
	}
}

func TestAStaleSenderIsToldMisdirectedAndRetriesOnce(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	// b moves to a newer ring in which a owns everything; a still routes
	// to b under epoch 1 and has no way to refresh (no membership here).
	p.b.SetRing(NewRing(5, []Member{p.a.Ring().Members[0]}, "b"))
	err := p.a.Ask(key, &actors.Seen{ID: key})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable after a misdirected retry", err)
	}
	var mis *MisdirectedError
	if !errors.As(err, &mis) || mis.Epoch != 5 {
		t.Fatalf("err = %v, want the owner's epoch 5", err)
	}
	if p.a.Seen() != 5 {
		t.Fatalf("sender saw epoch %d, want 5", p.a.Seen())
	}
	// With a refresher the sender picks up the new ring and succeeds.
	p.a.SetRefresher(func(atLeast uint64) *Ring {
		p.a.SetRing(NewRing(atLeast+1, []Member{p.a.Ring().Members[0]}, "a"))
		return p.a.Ring()
	})
	p.a.SetRing(p.ring(2, "a"))
	if err := p.a.Ask(key, &actors.Seen{ID: key}); err != nil {
		t.Fatalf("after refresh: %v", err)
	}
}

func TestAnUnreachableReplicaFailsTheConsumeAndLeavesNoUse(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("a")
	// b's address now refuses connections.
	dead := p.a.Ring().Members
	dead[1].PeerAddr = "127.0.0.1:1"
	p.a.SetRing(NewRing(9, dead, "a"))
	exp := time.Now().Add(time.Minute).UnixNano()
	op := &actors.Consume{ID: key, Expires: exp}
	if err := p.a.Ask(key, op); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	seen := &actors.Seen{ID: key}
	if err := p.a.AskLocal(Partition(key), seen); err != nil || seen.Used {
		t.Fatalf("owner kept an unconfirmed use: used=%v err=%v", seen.Used, err)
	}
}

func TestAPeerWithoutTheClusterKeyIsRefused(t *testing.T) {
	p := mustNewPair(t)
	stranger := NewTransport("wrong key", nil)
	m := p.b.Ring().Members[1]
	err := stranger.Forward(m, 1, 0, &actors.Seen{ID: "x"}, false, time.Second)
	if !errors.Is(err, ErrPeerRefused) {
		t.Fatalf("err = %v, want ErrPeerRefused", err)
	}
}

func BenchmarkAskLocal(b *testing.B) {
	p := mustNewPair(b)
	key := p.keyOwnedBy("a")
	op := &actors.Seen{ID: key}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.a.Ask(key, op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAskForwarded(b *testing.B) {
	p := mustNewPair(b)
	key := p.keyOwnedBy("b")
	op := &actors.Seen{ID: key}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.a.Ask(key, op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAskForwardedParallel(b *testing.B) {
	p := mustNewPair(b)
	key := p.keyOwnedBy("b")
	b.ReportAllocs()
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
	b.StopTimer()
	if frames, asks := p.a.fwd.(*Transport).Frames(); frames > 0 {
		b.ReportMetric(float64(asks)/float64(frames), "asks/frame")
	}
}
