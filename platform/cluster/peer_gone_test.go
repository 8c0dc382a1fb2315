package cluster

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// mustNewPeer serves the peer listener of a one-node "cluster" b on
// loopback and returns its address and a stop function (idempotent).
func mustNewPeer(tb testing.TB) (addr string, stop func()) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	r := NewRouter(NewRing(1, []Member{{ID: "b", PeerAddr: ln.Addr().String()}}, "b"), sys, nil, time.Second)
	c := &Cluster{router: r, token: peerToken("k")}
	c.HandlePeer("ping", func([]byte) ([]byte, error) { return []byte("pong"), nil })
	srv := c.newPeerServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = srv.Shutdown()
			_ = ln.Close()
			<-done
			sys.Stop()
		})
	}
	tb.Cleanup(stop)
	return ln.Addr().String(), stop
}

const pathPing = pathExt + "ping"

func reserveOp(key string) *actors.Reserve {
	return &actors.Reserve{Key: key, Bucket: ratelimit.BucketConfig{Capacity: 1 << 20, RefillAmount: 1, RefillInterval: 1 << 62}, Cost: 1}
}

// askFor keeps 8 callers forwarding asks to m for d and returns how many
// failed and the slowest answer. want, when set, is what every failure
// must be.
func askFor(t *testing.T, tr *Transport, m Member, d time.Duration, want error) (failed int, slowest time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				start := time.Now()
				err := tr.Forward(m, 1, Partition("k"), reserveOp("k"), false, time.Second)
				took := time.Since(start)
				mu.Lock()
				switch {
				case err == nil:
					t.Error("an ask to a stopped peer succeeded")
				case want != nil && !errors.Is(err, want):
					t.Errorf("ask to a stopped peer: %v, want %v", err, want)
				default:
					failed++
				}
				slowest = max(slowest, took)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return failed, slowest
}

// Issue 23: after a member left, every node kept dialling its peer
// address in a tight loop (thousands of connections a second, for
// minutes): the pipelined client's worker redialled a refused address on
// its own. A member that is gone is dialled no more once forgotten, and
// asks to it fail at once with ErrUnavailable.
func TestAMemberThatLeftIsNotDialledAgain(t *testing.T) {
	addr, stop := mustNewPeer(t)
	tr := NewTransport("k", nil)
	defer tr.Close()
	b := Member{ID: "b", PeerAddr: addr}
	// Both kinds of client are connected: an ask frame and a call.
	if err := tr.Forward(b, 1, Partition("k"), reserveOp("k"), false, time.Second); err != nil {
		t.Fatalf("ask while b serves: %v", err)
	}
	if _, err := tr.call(addr, pathPing, nil, nil, time.Second); err != nil {
		t.Fatalf("status while b serves: %v", err)
	}
	stop()
	tr.Forget(addr)
	before := tr.Dials()
	n, slowest := askFor(t, tr, b, time.Second, ErrUnavailable)
	for range 100 {
		if _, err := tr.call(addr, pathPing, nil, nil, time.Second); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("call to a forgotten member: %v, want ErrUnavailable", err)
		}
	}
	time.Sleep(300 * time.Millisecond) // no worker of its own dials either
	if d := tr.Dials() - before; d != 0 {
		t.Fatalf("%d dials to a forgotten member, want none", d)
	}
	if n == 0 || slowest > 500*time.Millisecond { // the asks' bound is 1 s
		t.Fatalf("%d asks unavailable, slowest %v: want all failing fast", n, slowest)
	}
	t.Logf("%d asks to the forgotten member failed fast (slowest %v), 0 dials", n, slowest)

	// The member comes back at that address: it is dialled again.
	tr.Remember(addr)
	if _, err := tr.call(addr, pathPing, nil, nil, time.Second); err == nil {
		t.Fatal("call to a stopped peer succeeded")
	}
	if tr.Dials() == before {
		t.Fatal("a remembered address is not dialled")
	}
}

// An address nobody told the transport about (a stale ring, a member not
// yet declared dead) is backed off: callers asking in a loop cost a few
// dials, not one per ask, and nothing dials between asks.
func TestAnUnreachablePeerIsDialledWithBackoff(t *testing.T) {
	addr, stop := mustNewPeer(t)
	stop()
	tr := NewTransport("k", nil)
	defer tr.Close()
	if _, err := tr.call(addr, pathPing, nil, nil, time.Second); err == nil {
		t.Fatal("call to a stopped peer succeeded")
	}
	n, _ := askFor(t, tr, Member{ID: "b", PeerAddr: addr}, 1500*time.Millisecond, nil)
	d := tr.Dials()
	// 50+100+200+400+800 ms of back-off fill 1.5 s: 6 dials, give or take.
	if d > 9 || n == 0 {
		t.Fatalf("%d dials for %d failed asks over 1.5s, want a handful", d, n)
	}
	time.Sleep(500 * time.Millisecond)
	if d2 := tr.Dials(); d2 != d {
		t.Fatalf("%d dials while nobody asked", d2-d)
	}
	t.Logf("%d asks to an unreachable peer cost %d dials", n, d)
}

// Asks waiting on a member when it is declared gone (queued, or in the
// frame in flight to a peer that does not answer) fail at once with
// ErrUnavailable instead of waiting out their timeout.
func TestAsksWaitingOnAGoneMemberFailFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() { // accepts and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	tr := NewTransport("k", nil)
	defer tr.Close()
	b := Member{ID: "b", PeerAddr: ln.Addr().String()}
	errs := make(chan error, 16)
	for range cap(errs) {
		go func() { errs <- tr.Forward(b, 1, Partition("k"), reserveOp("k"), false, 10*time.Second) }()
	}
	time.Sleep(200 * time.Millisecond) // one frame in flight, the rest queued
	start := time.Now()
	tr.Forget(b.PeerAddr)
	for range cap(errs) {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrPeerGone) {
				t.Fatalf("waiting ask: %v, want ErrPeerGone (ErrUnavailable)", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("an ask waiting on a forgotten member did not fail fast")
		}
	}
	t.Logf("16 waiting asks failed %v after the member was forgotten", time.Since(start))
}
