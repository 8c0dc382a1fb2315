package cluster

import (
	"crypto/tls"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

// gatedOwner is the serving end of a stream that answers only when told:
// every ask it reads is reported on got, and a receive on release answers
// every ask read so far (Reserve: Remaining = Cost).
type gatedOwner struct {
	t       *testing.T
	ln      net.Listener
	got     chan uint64
	release chan struct{}
	wg      sync.WaitGroup
}

func newGatedOwner(t *testing.T, cfg *tls.Config) *gatedOwner {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := &gatedOwner{t: t, ln: ln, got: make(chan uint64, 1024), release: make(chan struct{})}
	o.wg.Add(1)
	go o.serve()
	t.Cleanup(func() { ln.Close(); close(o.release); o.wg.Wait() })
	return o
}

func (o *gatedOwner) serve() {
	defer o.wg.Done()
	conn, err := o.ln.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	r, ok := acceptStream(conn)
	if !ok {
		return
	}
	var mu sync.Mutex
	var held [][]byte // answer frames not yet written
	o.wg.Add(1)
	go func() { // the answering half
		defer o.wg.Done()
		for range o.release {
			mu.Lock()
			out := held
			held = nil
			mu.Unlock()
			for _, f := range out {
				if _, err := conn.Write(f); err != nil {
					return
				}
			}
		}
	}()
	for {
		id, out, err := nextReserve(r)
		if err != nil {
			return
		}
		mu.Lock()
		held = append(held, out)
		mu.Unlock()
		o.got <- id
	}
}

// receive waits for n asks to reach the owner.
func (o *gatedOwner) receive(n int, within time.Duration) {
	o.t.Helper()
	deadline := time.After(within)
	for range n {
		select {
		case <-o.got:
		case <-deadline:
			o.t.Fatalf("the owner did not receive %d asks within %v", n, within)
		}
	}
}

// lingerPair is a transport (linger set) with a stream to a gated owner.
func lingerPair(t *testing.T, linger time.Duration) (*Transport, Member, *gatedOwner) {
	ids := mustNodeTLS(t, "a", "b")
	owner := newGatedOwner(t, ids["b"].Server())
	tr := NewTransport("k", ids["a"].Client())
	tr.linger = linger
	tr.SetNodeID("a")
	t.Cleanup(tr.Close)
	m := Member{ID: "b", PeerAddr: owner.ln.Addr().String()}
	tr.Advertise(m.PeerAddr, StreamVersion)
	return tr, m, owner
}

// forwardAsync forwards a Reserve of cost c and reports its outcome.
func forwardAsync(tr *Transport, m Member, c int64, out chan<- error) {
	go func() {
		op := &actors.Reserve{Key: "k", Cost: c}
		err := tr.Forward(m, 1, 1, op, false, 20*time.Second)
		if err == nil && op.Remaining != c {
			err = strconv.ErrRange // another ask's answer
		}
		out <- err
	}()
}

// While a stream's last write is unanswered, the asks that arrive wait and
// then leave together in one write (Nagle's rule): fewer writes, TLS
// records and wake-ups per ask on both ends under load. An ask on an idle
// stream leaves at once.
func TestAStreamHoldsAsksBackWhileItsLastWriteIsUnanswered(t *testing.T) {
	tr, m, owner := lingerPair(t, time.Minute)
	out := make(chan error, 16)

	start := time.Now()
	forwardAsync(tr, m, 1, out)
	owner.receive(1, 10*time.Second) // idle: written at once, not after a minute
	const more = 9
	for c := range more {
		forwardAsync(tr, m, int64(c+2), out)
	}
	// every ask is queued behind the unanswered first
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := tr.streamFor(m.PeerAddr)
		s.mu.Lock()
		cur := s.cur
		s.mu.Unlock()
		cur.mu.Lock()
		queued := cur.wasks
		cur.mu.Unlock()
		if queued == more {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d asks queued, want %d", queued, more)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if frames, asks := tr.Frames(); frames != 1 || asks != 1 {
		t.Fatalf("%d asks in %d writes while the first was unanswered, want 1 in 1", asks, frames)
	}
	owner.release <- struct{}{} // the first answer frees the rest
	owner.receive(more, 10*time.Second)
	if frames, asks := tr.Frames(); frames != 2 || asks != 1+more {
		t.Fatalf("%d asks in %d writes, want %d in 2", asks, frames, 1+more)
	}
	owner.release <- struct{}{}
	for range 1 + more {
		if err := <-out; err != nil {
			t.Fatal(err)
		}
	}
	// answered, so idle again: the next ask leaves at once
	forwardAsync(tr, m, 11, out)
	owner.receive(1, 10*time.Second)
	owner.release <- struct{}{}
	if err := <-out; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v: an ask waited for the linger bound", d)
	}
}

// An owner that leaves a write unanswered holds the next asks back only
// for the linger bound, not until it answers.
func TestAStreamsLingerIsBounded(t *testing.T) {
	const linger = 100 * time.Millisecond
	tr, m, owner := lingerPair(t, linger)
	out := make(chan error, 2)
	forwardAsync(tr, m, 1, out)
	owner.receive(1, 10*time.Second)
	sent := time.Now()
	forwardAsync(tr, m, 2, out)
	owner.receive(1, 10*time.Second) // while the first is still unanswered
	if d := time.Since(sent); d < linger/2 {
		t.Fatalf("the second ask left after %v, before the linger (%v)", d, linger)
	}
	owner.release <- struct{}{}
	for range 2 {
		if err := <-out; err != nil {
			t.Fatal(err)
		}
	}
}
