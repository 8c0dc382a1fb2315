package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Peer streams (issue "Speed, round two"): asks to a peer that advertises
// them (NodeMeta.peer_stream) travel over one long-lived connection per
// peer instead of one HTTP request per frame. The connection is an HTTP
// upgrade of an authenticated request on the peer listener (GET
// /peer/v1/stream), so mutual TLS, the cluster-key token and the node-id
// claim are checked exactly as for every other peer request before a byte
// of a frame is read; the claim is required for a stream.
//
// On the sender, per peer (streamPeer): at most one connection (stream),
// dialled on demand by one goroutine through the transport's dial
// back-off (no background redial: a peer nobody asks is never dialled);
// every ask gets a request id and a slot out of maxStreamInflight (a full
// stream makes the next caller wait for a slot within its own timeout);
// callers append their frame to a shared buffer and one writer goroutine
// writes everything queued in one Write (one syscall for many frames
// under load); one reader goroutine matches answers to asks by id. An ask
// whose caller timed out gives its slot back at once; its late answer is
// dropped. When the connection breaks every ask waiting on it is answered
// ErrUnavailable, exactly once (whoever removes an ask from the pending
// table answers it: the reader, the failure, or nobody when the caller
// abandoned it first), and the next ask dials again. An ask is never sent
// twice: a caller's retry is the caller's decision, as over HTTP.
//
// A peer that answers the upgrade 404 (a build without streams) or
// refuses its version gets HTTP frames for legacyRetry before the next try.

// pathStream is the upgrade request that opens a peer stream.
const pathStream = "/peer/v1/stream"

// streamHeader carries the stream protocol version in the upgrade request
// and its answer.
const streamHeader = "X-Trustd-Stream"

// streamUpgrade is the Upgrade token of a peer stream.
const streamUpgrade = "trustd-peer-stream"

// maxStreamInflight bounds the asks waiting for an answer on one stream.
const maxStreamInflight = 1024

// streamWriteTimeout bounds one write to a stream; past it the stream is
// broken (the peer stopped reading).
const streamWriteTimeout = 5 * time.Second

// streamBufSize is the read buffer of a stream (both ends).
const streamBufSize = 64 << 10

var (
	// errNoStream is a peer that does not open streams (404: a build of
	// the previous version) or refused this build's version.
	errNoStream = errors.New("cluster: peer does not open streams of this version")
	// errStreamRefused is an upgrade the peer refused (authentication).
	errStreamRefused = fmt.Errorf("%w: peer refused the stream", ErrUnavailable)
	// errNotAdvertised is a stream dropped because its peer stopped
	// advertising streams (it was replaced by an older build).
	errNotAdvertised = fmt.Errorf("%w: peer no longer advertises streams", ErrUnavailable)
)

// StreamStats counts what the peer streams of a transport did (both the
// sending and the serving end).
type StreamStats struct {
	// Opened is streams this node opened to peers.
	Opened uint64
	// Broken is streams that ended with an error (asks waiting on them
	// answered unavailable) rather than by Forget or Close.
	Broken uint64
	// Fallbacks is upgrades a peer answered 404 or refused the version
	// of: that peer got HTTP frames for a minute.
	Fallbacks uint64
	// VersionRefused is handshakes and frames of an unknown protocol
	// version, sent or received (the stream was refused or closed).
	VersionRefused uint64
	// Late is answers that arrived after their caller gave up.
	Late uint64
	// Served is streams peers opened to this node.
	Served uint64
}

type streamCounters struct {
	opened, broken, fallbacks, versionRefused, late, served atomic.Uint64
}

// StreamStats reports the counters of the peer streams.
func (t *Transport) StreamStats() StreamStats {
	c := &t.sc
	return StreamStats{Opened: c.opened.Load(), Broken: c.broken.Load(), Fallbacks: c.fallbacks.Load(),
		VersionRefused: c.versionRefused.Load(), Late: c.late.Load(), Served: c.served.Load()}
}

// SetLogger sets where the transport logs (streams refused, broken).
func (t *Transport) SetLogger(l *slog.Logger) {
	if l != nil {
		t.log.Store(l)
	}
}

func (t *Transport) logger() *slog.Logger {
	if l := t.log.Load(); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// Advertise records the peer stream version the member at addr gossips
// (0: none, HTTP frames only). Asks to addr use a stream from now on when
// version is at least 1; a peer that stops advertising (replaced by an
// older build) has its stream closed, the asks on it answered
// unavailable.
func (t *Transport) Advertise(addr string, version uint32) {
	if addr == "" {
		return
	}
	t.mu.Lock()
	sp := t.streams[addr]
	switch {
	case version >= 1 && sp == nil && t.usable(addr) == nil:
		t.streams[addr] = &streamPeer{t: t, addr: addr}
		sp = nil
	case version == 0 && sp != nil:
		delete(t.streams, addr)
	default:
		sp = nil
	}
	t.mu.Unlock()
	if sp != nil {
		sp.close(errNotAdvertised)
	}
}

// streamPeer is the stream side of one peer address.
type streamPeer struct {
	t      *Transport
	addr   string
	mu     sync.Mutex
	cur    *stream       // the open stream, nil between connections
	dial   chan struct{} // closed when the dial in progress ends; nil when none
	err    error         // why the last dial failed
	closed error         // Forget, Close or no longer advertised
	legacy time.Time     // the peer refused the upgrade: HTTP frames until then
}

// streamFor returns the peer's stream side, nil when asks to addr go in
// HTTP frames.
func (t *Transport) streamFor(addr string) *streamPeer {
	t.mu.RLock()
	sp := t.streams[addr]
	t.mu.RUnlock()
	return sp
}

// get returns the peer's open stream, dialling one when there is none,
// waiting until expired fires at most. errNoStream: use HTTP frames.
func (sp *streamPeer) get(expired <-chan time.Time) (*stream, error) {
	sp.mu.Lock()
	if sp.closed != nil {
		sp.mu.Unlock()
		return nil, sp.closed
	}
	if s := sp.cur; s != nil {
		sp.mu.Unlock()
		return s, nil
	}
	if time.Now().Before(sp.legacy) {
		sp.mu.Unlock()
		return nil, errNoStream
	}
	ch := sp.dial
	if ch == nil {
		ch = make(chan struct{})
		sp.dial = ch
		// The dial runs on its own goroutine: a TLS handshake may take
		// longer than the ask's bound, and the next asks wait for the
		// same connection rather than dial their own.
		go sp.connect(ch)
	}
	sp.mu.Unlock()
	select {
	case <-ch:
	case <-expired:
		return nil, fmt.Errorf("%w: %s: connecting the peer stream", fasthttp.ErrTimeout, sp.addr)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case sp.closed != nil:
		return nil, sp.closed
	case sp.cur != nil:
		return sp.cur, nil
	case time.Now().Before(sp.legacy):
		return nil, errNoStream
	}
	return nil, sp.err
}

// connect dials a stream and installs it, or records why it failed.
func (sp *streamPeer) connect(ch chan struct{}) {
	conn, br, err := sp.t.dialStream(sp.addr)
	sp.mu.Lock()
	defer close(ch)
	defer sp.mu.Unlock()
	sp.dial = nil
	if err != nil {
		sp.err = err
		if errors.Is(err, errNoStream) {
			sp.legacy = time.Now().Add(legacyRetry)
			sp.t.sc.fallbacks.Add(1)
			sp.t.logger().Warn("peer opens no stream of this version; sending it HTTP frames for a minute",
				"peer", sp.addr, "err", err)
		}
		return
	}
	if sp.closed != nil {
		_ = conn.Close()
		return
	}
	sp.t.sc.opened.Add(1)
	sp.cur = newStream(sp, conn, br)
}

// dropped forgets s once it broke, so the next ask dials again.
func (sp *streamPeer) dropped(s *stream) {
	sp.mu.Lock()
	if sp.cur == s {
		sp.cur = nil
	}
	sp.mu.Unlock()
}

// close stops the peer's streams for good: the open one fails its asks
// with err, and later asks fail with err at once.
func (sp *streamPeer) close(err error) {
	sp.mu.Lock()
	if sp.closed == nil {
		sp.closed = err
	}
	s := sp.cur
	sp.cur = nil
	sp.mu.Unlock()
	if s != nil {
		s.fail(err, false)
	}
}

// dialStream opens a connection to addr (dial back-off and TLS as every
// peer connection) and upgrades it to a stream.
func (t *Transport) dialStream(addr string) (net.Conn, *bufio.Reader, error) {
	conn, err := t.dial(addr)
	if err != nil {
		return nil, nil, err
	}
	br, err := t.upgrade(conn, addr)
	if err != nil {
		_ = conn.Close()
		if !errors.Is(err, errNoStream) {
			// A refused or broken handshake backs the address off like a
			// failed dial, so a peer that refuses is not asked in a loop.
			t.dialed(addr, err)
		}
		return nil, nil, err
	}
	return conn, br, nil
}

// upgrade sends the upgrade request on conn and reads its answer.
func (t *Transport) upgrade(conn net.Conn, addr string) (*bufio.Reader, error) {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	req := make([]byte, 0, 256)
	req = append(req, "GET "+pathStream+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: Upgrade\r\nUpgrade: "+streamUpgrade+"\r\n"...)
	req = append(req, streamHeader+": "+strconv.Itoa(StreamVersion)+"\r\n"...)
	if t.token != "" {
		req = append(req, peerTokenHeader+": "+t.token+"\r\n"...)
	}
	if t.node != "" {
		req = append(req, peerNodeHeader+": "+t.node+"\r\n"...)
	}
	req = append(req, "\r\n"...)
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("%w: %s: stream upgrade: %v", ErrUnavailable, addr, err)
	}
	br := bufio.NewReaderSize(conn, streamBufSize)
	resp, err := nethttp.ReadResponse(br, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: stream upgrade answer: %v", ErrUnavailable, addr, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	switch {
	case resp.StatusCode == nethttp.StatusSwitchingProtocols:
	case resp.StatusCode == nethttp.StatusNotFound:
		return nil, fmt.Errorf("%w: %s answered the upgrade %d (a build without streams)", errNoStream, addr, resp.StatusCode)
	case resp.StatusCode == nethttp.StatusBadRequest && resp.Header.Get(streamHeader) != "":
		t.sc.versionRefused.Add(1)
		return nil, fmt.Errorf("%w: %s speaks version %s, refused %d: %s", errNoStream, addr,
			resp.Header.Get(streamHeader), StreamVersion, body)
	default:
		return nil, fmt.Errorf("%w: %s: %d %s", errStreamRefused, addr, resp.StatusCode, body)
	}
	if v := resp.Header.Get(streamHeader); v != strconv.Itoa(StreamVersion) {
		t.sc.versionRefused.Add(1)
		t.logger().Warn("peer accepted a stream of an unknown version; closing it", "peer", addr, "version", v)
		return nil, fmt.Errorf("%w: %s accepted version %q, this node speaks %d", errNoStream, addr, v, StreamVersion)
	}
	_ = conn.SetDeadline(time.Time{})
	return br, nil
}

// pendingRef is an ask waiting on a stream: the pooled pendingAsk and the
// use of it that waits.
type pendingRef struct {
	p   *pendingAsk
	gen uint64
}

// stream is one open connection to a peer. mu guards the pending table
// and the write buffer together, so that an ask is registered and queued
// in one step and a failure stops both at once.
type stream struct {
	sp    *streamPeer
	conn  net.Conn
	slots chan struct{} // one token per ask waiting for its answer

	mu      sync.Mutex
	pending map[uint64]pendingRef
	next    uint64 // the last request id
	wbuf    []byte // frames queued for the writer
	wasks   int    // asks in wbuf: the last wasks request ids, in order
	spare   []byte
	err     error // why the stream ended; set once

	wake     chan struct{}
	done     chan struct{}
	lastRead atomic.Int64 // unix nanoseconds of the last frame read

	// unacked is the first request id of the last write while none of its
	// answers has arrived (0: none outstanding); acked tells the writer
	// the reader cleared it.
	unacked atomic.Uint64
	acked   chan struct{}
}

func newStream(sp *streamPeer, conn net.Conn, br *bufio.Reader) *stream {
	s := &stream{sp: sp, conn: conn, slots: make(chan struct{}, maxStreamInflight),
		pending: map[uint64]pendingRef{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
		acked: make(chan struct{}, 1)}
	s.lastRead.Store(time.Now().UnixNano())
	sp.t.streamWG.Add(2)
	go s.write()
	go s.read(&frameReader{br: br})
	return s
}

// ask sends p on s and waits for its answer until expired fires. It
// returns whether p was answered (p.out / p.err); false with the error
// when it was not sent, or abandoned (then p must never be reused:
// abandoned is true).
func (s *stream) ask(p *pendingAsk, expired <-chan time.Time) (answered, abandoned bool, err error) {
	select {
	case s.slots <- struct{}{}:
	default:
		select {
		case s.slots <- struct{}{}:
		case <-expired:
			return false, false, fmt.Errorf("%w: %s: %d asks in flight on the peer stream", fasthttp.ErrTimeout, s.sp.addr, maxStreamInflight)
		case <-s.done:
			return false, false, s.failure()
		}
	}
	sent := time.Now().UnixNano()
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		<-s.slots
		return false, false, err
	}
	s.next++
	id := s.next
	s.pending[id] = pendingRef{p: p, gen: p.gen}
	first := len(s.wbuf) == 0
	s.wbuf = appendFrame(s.wbuf, frameAsk, id, nil, p.body)
	s.wasks++
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	select {
	case <-p.done:
		return true, false, nil
	case <-expired:
	}
	if !p.state.CompareAndSwap(p.gen<<2|askWaiting, p.gen<<2|askAbandoned) {
		<-p.done // answered meanwhile
		return true, false, nil
	}
	s.mu.Lock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok {
		<-s.slots
	}
	if s.lastRead.Load() < sent {
		// Nothing at all came back since this ask left: the peer (or the
		// path to it) is stuck, and a connection that only a TCP
		// retransmission timeout would end must not swallow the next asks
		// too. Break it; the next ask dials again.
		s.fail(fmt.Errorf("%w: %s: no answer on the peer stream within %v", ErrUnavailable, s.sp.addr,
			time.Duration(time.Now().UnixNano()-sent)), true)
	}
	return false, true, fmt.Errorf("%w: %s", fasthttp.ErrTimeout, s.sp.addr)
}

// failure is why s ended.
func (s *stream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// streamLinger bounds how long the writer holds queued asks back while
// its previous write is unanswered.
const streamLinger = 500 * time.Microsecond

// write is the stream's writer: it writes everything queued in one Write.
//
// Like TCP's Nagle algorithm, it does not write while its previous write
// is still unanswered (for at most streamLinger): asks that arrive during
// the peer's round trip then share one write, one TLS record and one
// wake-up on each end, instead of a write each. An ask on an idle stream
// is written at once: nothing is outstanding then.
func (s *stream) write() {
	defer s.sp.t.streamWG.Done()
	t := s.sp.t
	linger := time.NewTimer(t.linger)
	linger.Stop()
	defer linger.Stop()
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		select {
		case <-s.acked: // a stale signal: what it acknowledged is answered
		default:
		}
		if s.unacked.Load() != 0 {
			linger.Reset(t.linger)
			select {
			case <-s.acked:
			case <-linger.C:
			case <-s.done:
				return
			}
			linger.Stop()
		} else {
			// As the HTTP sender did: let the checks already runnable
			// queue their asks first.
			runtime.Gosched()
		}
		s.mu.Lock()
		if len(s.wbuf) == 0 {
			// A wake-up whose frames an earlier write took already. The
			// buffers are not swapped: the spare is the buffer queued
			// into, and swapping would hand the next write the buffer
			// callers are appending to.
			s.mu.Unlock()
			continue
		}
		b, n, first := s.wbuf, s.wasks, s.next-uint64(s.wasks)+1
		s.wbuf, s.wasks = s.spare[:0], 0
		s.mu.Unlock()
		s.unacked.Store(first)
		// Counted before the write: its answers can settle the asks, and
		// a caller read the counters, before Write returns here.
		t.frames.Add(1)
		t.asks.Add(uint64(n))
		_ = s.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := s.conn.Write(b)
		if err != nil {
			s.fail(fmt.Errorf("%w: %s: peer stream write: %v", ErrUnavailable, s.sp.addr, err), true)
			return
		}
		s.mu.Lock()
		s.spare = b[:0]
		s.mu.Unlock()
	}
}

// read is the stream's reader: it hands each answer to the ask with its
// id.
func (s *stream) read(r *frameReader) {
	defer s.sp.t.streamWG.Done()
	t := s.sp.t
	for {
		f, err := r.next()
		if err == nil && f.kind != frameAnswer {
			err = fmt.Errorf("%w: kind %d from the serving end", errFrameMalformed, f.kind)
		}
		if err != nil {
			if errors.Is(err, errFrameVersion) {
				t.sc.versionRefused.Add(1)
				t.logger().Warn("peer stream frame of an unknown protocol version; closing the stream",
					"peer", s.sp.addr, "err", err)
			}
			s.fail(fmt.Errorf("%w: %s: peer stream: %v", ErrUnavailable, s.sp.addr, err), true)
			return
		}
		s.lastRead.Store(time.Now().UnixNano())
		if u := s.unacked.Load(); u != 0 && f.id >= u && s.unacked.CompareAndSwap(u, 0) {
			select {
			case s.acked <- struct{}{}:
			default:
			}
		}
		s.mu.Lock()
		ref, ok := s.pending[f.id]
		delete(s.pending, f.id)
		s.mu.Unlock()
		if !ok {
			t.sc.late.Add(1) // its caller gave up
			continue
		}
		<-s.slots
		ref.p.settle(ref.gen, f.payload, nil, false)
	}
}

// fail ends s: the connection closes and every ask waiting on it is
// answered err, once. broken counts it as a broken stream (not one that
// Forget or Close ended).
func (s *stream) fail(err error, broken bool) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	pend := s.pending
	s.pending = nil
	s.mu.Unlock()
	close(s.done)
	// Closing a TLS connection writes an alert, which may wait on a peer
	// that stopped reading; fail runs in memberlist's callback (Forget)
	// and on callers' goroutines, so the close is a goroutine's. The
	// reader is still running (it ends on this close), so the wait group
	// is above zero here.
	s.sp.t.streamWG.Add(1)
	go func() {
		defer s.sp.t.streamWG.Done()
		_ = s.conn.Close()
	}()
	s.sp.dropped(s)
	if broken {
		s.sp.t.sc.broken.Add(1)
		s.sp.t.logger().Info("peer stream broken; its asks answered unavailable", "peer", s.sp.addr,
			"asks", len(pend), "err", err)
	}
	for _, ref := range pend {
		<-s.slots
		ref.p.settle(ref.gen, nil, err, false)
	}
}
