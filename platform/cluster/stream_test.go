package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// mustNodeTLS issues mutual-TLS identities of one test CA for ids.
func mustNodeTLS(tb testing.TB, ids ...string) map[string]*mtls.Config {
	tb.Helper()
	ca, err := mtls.CreateCA("test", time.Hour, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]*mtls.Config{}
	for _, id := range ids {
		p, err := mtls.CreateNodeCert(ca, mtls.NodeRequest{NodeID: id}, time.Now())
		if err != nil {
			tb.Fatal(err)
		}
		if out[id], err = mtls.New(ca.Cert, p); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// tlsNode is a router and its peer listener over mutual TLS, as
// cluster.Start sets them up, without gossip or Raft.
type tlsNode struct {
	r     *Router
	c     *Cluster
	tr    *Transport
	addr  string
	ring  func(epoch uint64, self string) *Ring
	owner *tlsNode
}

// mustNewTLSPair is a sender "a" and an owner "b" over mutual TLS with
// streams advertised.
func mustNewTLSPair(tb testing.TB) (a, b *tlsNode) {
	tb.Helper()
	ids := mustNodeTLS(tb, "a", "b")
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
	ring := func(epoch uint64, self string) *Ring { return NewRing(epoch, members, self) }
	mk := func(i int) *tlsNode {
		id, other := members[i].ID, members[1-i].PeerAddr
		sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
		tb.Cleanup(sys.Stop)
		tr := NewTransport("k", ids[id].Client())
		tr.SetNodeID(id)
		tr.Advertise(other, StreamVersion)
		r := NewRouter(ring(1, id), sys, tr, 2*time.Second)
		c := &Cluster{router: r, token: peerToken("k"), trans: tr, log: slog.New(slog.DiscardHandler),
			cfg: Config{ServerTLS: ids[id].Server()}}
		ln := tls.NewListener(lns[i], c.cfg.ServerTLS)
		srv := c.newPeerServer()
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(ln) }()
		tb.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close(); c.streamSrv.close(); <-done })
		tb.Cleanup(tr.Close)
		return &tlsNode{r: r, c: c, tr: tr, addr: members[i].PeerAddr, ring: ring}
	}
	return mk(0), mk(1)
}

func keyOwnedIn(r *Ring, id string) string {
	for k := 0; ; k++ {
		key := fmt.Sprintf("key-%d", k)
		if r.Members[r.Owner(Partition(key))].ID == id {
			return key
		}
	}
}

// Asks to a peer that advertises streams travel over one mutually
// authenticated connection, many in flight at once, each answered with
// its own result; a replicated use goes owner → replica over the owner's
// own stream back.
func TestForwardedAsksShareOneStreamOverMutualTLS(t *testing.T) {
	a, b := mustNewTLSPair(t)
	key := keyOwnedIn(a.r.Ring(), "b")
	const capacity, callers, each = 300, 32, 20
	cfg := ratelimit.BucketConfig{Capacity: capacity, RefillAmount: 1, RefillInterval: 1 << 62}
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				op := &actors.Reserve{Key: key, Bucket: cfg, Cost: 1}
				if err := a.r.Ask(key, op); err != nil {
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
	exp := time.Now().Add(time.Minute).UnixNano()
	use := &actors.Consume{ID: key, Expires: exp}
	if err := a.r.Ask(key, use); err != nil || !use.First {
		t.Fatalf("replicated first use through the stream: first=%v err=%v", use.First, err)
	}
	seen := &actors.Seen{ID: key}
	if err := a.r.AskLocal(Partition(key), seen); err != nil || !seen.Used {
		t.Fatalf("the replica (a) does not hold the use: %v", err)
	}
	st := a.tr.StreamStats()
	frames, asks := a.tr.Frames()
	if st.Opened != 1 || a.tr.Dials() != 1 || b.tr.StreamStats().Served != 1 {
		t.Fatalf("a opened %d streams in %d dials, b served %d; want one stream", st.Opened, a.tr.Dials(), b.tr.StreamStats().Served)
	}
	if asks != callers*each+1 || frames >= asks {
		t.Fatalf("%d asks in %d writes: want all %d, coalesced", asks, frames, callers*each+1)
	}
	if bs := b.tr.StreamStats(); bs.Opened != 1 {
		t.Fatalf("the owner opened %d streams for the replica ask, want 1", bs.Opened)
	}
	t.Logf("%d asks in %d writes (%.1f per write)", asks, frames, float64(asks)/float64(frames))
}

// rawUpgrade dials addr with cl and sends an upgrade request with the
// given node claim and version; it returns the status and the open
// connection (for 101).
func rawUpgrade(t *testing.T, addr string, cl *tls.Config, claim, version string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, cl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := "GET " + pathStream + " HTTP/1.1\r\nHost: peer\r\nConnection: Upgrade\r\nUpgrade: " + streamUpgrade + "\r\n" +
		peerTokenHeader + ": " + peerToken("k") + "\r\n"
	if claim != "" {
		req += peerNodeHeader + ": " + claim + "\r\n"
	}
	if version != "" {
		req += streamHeader + ": " + version + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := nethttp.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, conn, br
}

// The stream is opened only by an authenticated request: the claimed node
// id must be the certificate's (and a stream must claim one), and the
// version must be one this node speaks; a frame of another version closes
// the stream. Each refusal of a version is counted.
func TestAStreamIsRefusedWithoutTheRightIdentityOrVersion(t *testing.T) {
	a, b := mustNewTLSPair(t)
	ids := mustNodeTLS(t, "a")
	other := ids["a"].Client() // a certificate of another CA
	tests := []struct {
		name           string
		cl             *tls.Config
		claim, version string
		want           int
	}{
		{"the certificate's own id and version 1 are upgraded", a.tr.tls, "a", "1", 101},
		{"a claim of another node's id is refused", a.tr.tls, "b", "1", 403},
		{"no claim is refused for a stream", a.tr.tls, "", "1", 403},
		{"an unknown version is refused and counted", a.tr.tls, "a", "2", 400},
		{"no version is refused and counted", a.tr.tls, "a", "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _, _ := rawUpgrade(t, b.addr, tt.cl, tt.claim, tt.version); got != tt.want {
				t.Fatalf("status %d, want %d", got, tt.want)
			}
		})
	}
	if n := b.tr.StreamStats().VersionRefused; n != 2 {
		t.Fatalf("%d version refusals counted, want 2", n)
	}
	t.Run("a certificate of another CA gets no handshake", func(t *testing.T) {
		conn, err := tls.Dial("tcp", b.addr, other)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Fatal("a stranger's certificate was accepted")
		}
	})
	t.Run("a frame of an unknown version closes the stream", func(t *testing.T) {
		code, conn, br := rawUpgrade(t, b.addr, a.tr.tls, "a", "1")
		if code != 101 {
			t.Fatalf("upgrade %d", code)
		}
		before := b.tr.StreamStats().VersionRefused
		f := appendFrame(nil, frameAsk, 1, nil, nil)
		f[4] = StreamVersion + 1
		if _, err := conn.Write(f); err != nil {
			t.Fatal(err)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Fatal("the stream answered a frame of an unknown version")
		}
		if n := b.tr.StreamStats().VersionRefused; n != before+1 {
			t.Fatalf("%d version refusals, want %d", n, before+1)
		}
	})
}

// A node of the previous build advertises no stream and has no upgrade
// path (404): asks to it travel in HTTP frames, and one advertised by
// mistake falls back after one refused upgrade.
func TestAPeerWithoutStreamsGetsHTTPFrames(t *testing.T) {
	p := mustNewPair(t)
	srv := p.b.Ring().Members[1]
	tr := p.a.fwd.(*Transport)
	old := NewTransport("k", nil)
	var upgrades atomic.Int64
	legacy := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == pathStream {
			upgrades.Add(1)
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
	ask := func(i int) {
		t.Helper()
		op := &actors.Reserve{Key: key, Bucket: ratelimit.BucketConfig{Capacity: 10, RefillAmount: 1, RefillInterval: 1 << 62}, Cost: 1}
		if err := p.a.Ask(key, op); err != nil || !op.OK || op.Remaining != int64(9-i) {
			t.Fatalf("ask %d through a peer without streams: ok=%v remaining=%d err=%v", i, op.OK, op.Remaining, err)
		}
	}
	ask(0) // not advertised: an HTTP frame, no upgrade tried
	if upgrades.Load() != 0 {
		t.Fatalf("%d upgrades tried to a peer that advertises none", upgrades.Load())
	}
	tr.Advertise(ln.Addr().String(), StreamVersion) // advertised by mistake
	ask(1)
	ask(2)
	if upgrades.Load() != 1 || tr.StreamStats().Fallbacks != 1 {
		t.Fatalf("%d upgrades, %d fallbacks; want one refused upgrade, then HTTP frames", upgrades.Load(), tr.StreamStats().Fallbacks)
	}
	if frames, _ := tr.Frames(); frames != 3 {
		t.Fatalf("%d HTTP frames, want 3", frames)
	}
}

// fakeOwner is the serving end of a stream, by hand: it upgrades, answers
// the first asks it receives at once (Reserve: Remaining = Cost), holds
// the others, and once hold asks are held cuts the connection. Its
// second connection answers everything.
type fakeOwner struct {
	t      *testing.T
	ln     net.Listener
	answer int // asks answered before it starts holding
	hold   int
	// holdAll: every connection holds (not only the first)
	holdAll bool
	conns   atomic.Int64
	wg      sync.WaitGroup
}

func (o *fakeOwner) serve() {
	defer o.wg.Done()
	for {
		conn, err := o.ln.Accept()
		if err != nil {
			return
		}
		n := o.conns.Add(1)
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer conn.Close()
			r, ok := acceptStream(conn)
			if !ok {
				return
			}
			answered, held := 0, 0
			for {
				_, out, err := nextReserve(r)
				if err != nil {
					return
				}
				if (n == 1 || o.holdAll) && answered == o.answer {
					if held++; held == o.hold {
						return // cut with hold asks in flight
					}
					continue
				}
				answered++
				if _, err := conn.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// acceptStream is the serving end of a stream's upgrade, by hand: it
// reads the upgrade request and answers 101 when it is a stream of this
// version.
func acceptStream(conn net.Conn) (*frameReader, bool) {
	br := bufio.NewReader(conn)
	req, err := nethttp.ReadRequest(br)
	if err != nil || req.URL.Path != pathStream || req.Header.Get(streamHeader) != strconv.Itoa(StreamVersion) {
		return nil, false
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\n"+streamHeader+": 1\r\n\r\n"); err != nil {
		return nil, false
	}
	return &frameReader{br: br}, true
}

// nextReserve reads the next ask, a Reserve, and returns its request id
// and the answer frame a fake owner sends: allowed, Remaining = Cost.
func nextReserve(r *frameReader) (id uint64, out []byte, err error) {
	f, err := r.next()
	if err != nil {
		return 0, nil, err
	}
	var a askMsg
	var ans answer
	if !a.decode(f.payload) {
		return 0, nil, errFrameMalformed
	}
	op, ok := streamTestDecoder.decodeOp(&a, &ans)
	if !ok {
		return 0, nil, errFrameMalformed
	}
	res := op.(*actors.Reserve)
	res.OK, res.Remaining = true, res.Cost
	ans.result, _ = op.AppendResult(nil)
	return f.id, ans.appendTo(appendFrameHeader(nil, frameAnswer, f.id, ans.size())), nil
}

// The stream breaks with asks in flight: every ask is answered exactly
// once, the ones the owner answered with their own result and the others
// unavailable at once (not at their timeout); the slots come back, no
// answer is late, and the next ask opens a new stream.
func TestAStreamKilledMidFlightAnswersEveryPendingAskOnce(t *testing.T) {
	ids := mustNodeTLS(t, "a", "b")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ids["b"].Server())
	if err != nil {
		t.Fatal(err)
	}
	const asks, answered = 200, 50
	owner := &fakeOwner{t: t, ln: ln, answer: answered, hold: asks - answered}
	owner.wg.Add(1)
	go owner.serve()
	t.Cleanup(func() { ln.Close(); owner.wg.Wait() })
	tr := NewTransport("k", ids["a"].Client())
	tr.SetNodeID("a")
	t.Cleanup(tr.Close)
	m := Member{ID: "b", PeerAddr: ln.Addr().String()}
	tr.Advertise(m.PeerAddr, StreamVersion)

	const timeout = 20 * time.Second
	type outcome struct {
		cost      int64
		remaining int64
		err       error
	}
	results := make(chan outcome, asks*2)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := &actors.Reserve{Key: "k", Cost: int64(i + 1)}
			err := tr.Forward(m, 1, 1, op, false, timeout)
			results <- outcome{cost: op.Cost, remaining: op.Remaining, err: err}
		}()
	}
	wg.Wait()
	close(results)
	var values, unavailable int
	seen := map[int64]bool{}
	for r := range results {
		if seen[r.cost] {
			t.Fatalf("ask %d answered twice", r.cost)
		}
		seen[r.cost] = true
		switch {
		case r.err == nil && r.remaining == r.cost:
			values++
		case r.err == nil:
			t.Fatalf("ask %d got another ask's answer (%d)", r.cost, r.remaining)
		case errors.Is(r.err, ErrUnavailable) && !errors.Is(r.err, fasthttp.ErrTimeout):
			unavailable++
		default:
			t.Fatalf("ask %d: %v, want its value or unavailable", r.cost, r.err)
		}
	}
	if len(seen) != asks || values != answered || unavailable != asks-answered {
		t.Fatalf("%d asks answered: %d values, %d unavailable; want %d and %d", len(seen), values, unavailable, answered, asks-answered)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Fatalf("the pending asks waited %v: not failed at once", d)
	}
	st := tr.StreamStats()
	if st.Opened != 1 || st.Broken != 1 || st.Late != 0 {
		t.Fatalf("stats %+v: want one stream opened and broken, nothing late", st)
	}
	// the next ask dials a new stream (the second connection answers)
	op := &actors.Reserve{Key: "k", Cost: 7}
	if err := tr.Forward(m, 1, 1, op, false, timeout); err != nil || op.Remaining != 7 {
		t.Fatalf("ask after the break: remaining=%d err=%v", op.Remaining, err)
	}
	if st := tr.StreamStats(); st.Opened != 2 || tr.Dials() != 2 {
		t.Fatalf("after the break: %d streams in %d dials, want 2 and 2", st.Opened, tr.Dials())
	}
	sp := tr.streamFor(m.PeerAddr)
	sp.mu.Lock()
	s := sp.cur
	sp.mu.Unlock()
	if s == nil || len(s.slots) != 0 {
		t.Fatalf("the new stream holds %d slots with nothing in flight", len(s.slots))
	}
}

// An ask whose caller times out frees its slot at once, and its late
// answer is dropped by id; Forget fails every ask waiting on the stream
// with ErrPeerGone and stops dialling.
func TestStreamTimeoutsFreeTheirSlotAndForgetFailsTheRest(t *testing.T) {
	ids := mustNodeTLS(t, "a", "b")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ids["b"].Server())
	if err != nil {
		t.Fatal(err)
	}
	// answers nothing, ever, while the connection stays open
	owner := &fakeOwner{t: t, ln: ln, answer: 0, hold: 1 << 30, holdAll: true}
	owner.wg.Add(1)
	go owner.serve()
	t.Cleanup(func() { ln.Close(); owner.wg.Wait() })
	tr := NewTransport("k", ids["a"].Client())
	tr.SetNodeID("a")
	t.Cleanup(tr.Close)
	m := Member{ID: "b", PeerAddr: ln.Addr().String()}
	tr.Advertise(m.PeerAddr, StreamVersion)

	err = tr.Forward(m, 1, 1, &actors.Reserve{Key: "k", Cost: 1}, false, 300*time.Millisecond)
	if !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("an unanswered ask: %v, want a timeout", err)
	}
	// nothing came back since it left: the stream is broken, not left to
	// swallow the next asks
	if st := tr.StreamStats(); st.Broken != 1 {
		t.Fatalf("stats %+v: a silent stream was kept", st)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- tr.Forward(m, 1, 1, &actors.Reserve{Key: "k", Cost: 1}, false, 20*time.Second)
		}()
	}
	// wait until all 16 are in flight on the second stream
	deadline := time.Now().Add(10 * time.Second)
	for {
		sp := tr.streamFor(m.PeerAddr)
		sp.mu.Lock()
		s := sp.cur
		sp.mu.Unlock()
		if s != nil && len(s.slots) == 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the asks never got in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	tr.Forget(m.PeerAddr)
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrPeerGone) {
			t.Fatalf("an ask waiting on a forgotten peer: %v, want ErrPeerGone", err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Forget answered the waiting asks after %v", d)
	}
	dials := tr.Dials()
	if err := tr.Forward(m, 1, 1, &actors.Reserve{Key: "k"}, false, time.Second); !errors.Is(err, ErrPeerGone) || tr.Dials() != dials {
		t.Fatalf("an ask to a forgotten peer: %v after %d dials (was %d)", err, tr.Dials(), dials)
	}
}

// The answer of an owner that is not the owner any more travels back as
// misdirected over the stream, as over HTTP.
func TestMisdirectedAnswersTravelOverTheStream(t *testing.T) {
	a, b := mustNewTLSPair(t)
	key := keyOwnedIn(a.r.Ring(), "b")
	b.r.SetRing(NewRing(5, []Member{a.r.Ring().Members[0]}, "b"))
	err := a.r.Ask(key, &actors.Seen{ID: key})
	var mis *MisdirectedError
	if !errors.As(err, &mis) || mis.Epoch != 5 {
		t.Fatalf("err = %v, want misdirected with epoch 5", err)
	}
	if st := a.tr.StreamStats(); st.Opened != 1 {
		t.Fatalf("%+v: the ask did not use the stream", st)
	}
}

// streamTestDecoder decodes asks for the fake peers above as a node does.
var streamTestDecoder = &Cluster{log: slog.New(slog.DiscardHandler)}
