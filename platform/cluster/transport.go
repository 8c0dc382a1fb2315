package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// The peer transport: node-to-node requests over fasthttp clients per
// peer. Measured on these machines a fasthttp round trip costs a fraction
// of protoactor remote's, with one allocation, so the cluster carries its
// own few message types this way. Every body is a platform/proto/clusterpb message.
//
// A peer that is gone costs nothing (issue 23): every client dials on the
// caller's goroutine (plain HostClients, no background worker; fasthttp's
// PipelineClient redials a refused address in a loop of its own, for
// ever, which is what kept thousands of dials a second going to a member
// that had left), a failed dial backs the address off (dialBackoff), and
// the cluster tells the transport when a member leaves or dies (Forget):
// its queue and connections are closed, the asks waiting on it fail at
// once with ErrUnavailable, and no later ask to that address dials until
// the member is seen again (Remember).
//
// Asks to a peer that advertises streams (Advertise, from its gossiped
// NodeMeta.peer_stream) travel over one long-lived connection instead of
// HTTP frames (stream.go); the HTTP frames below serve every other peer
// (a node of the previous build) and calls.

// Paths of the peer listener. They are cluster-internal and never part of
// the public contract.
const (
	pathAsk     = "/peer/v1/ask"
	pathAsks    = "/peer/v1/asks"
	pathApply   = "/peer/v1/apply"
	pathHandoff = "/peer/v1/handoff"
	pathStatus  = "/peer/v1/status"
	pathLeave   = "/peer/v1/leave"
)

// dialTimeout bounds connecting to a peer; an ask's own timeout bounds
// the rest.
const dialTimeout = 500 * time.Millisecond

// Dial back-off: after a failed dial an address is not dialled again for
// minDialBackoff, doubling with every further failure up to
// maxDialBackoff; a successful dial resets it. Calls in between fail at
// once (errDialBackoff), so an unreachable address costs at most one
// connection attempt per maxDialBackoff however many asks target it.
const (
	minDialBackoff = 50 * time.Millisecond
	maxDialBackoff = 2 * time.Second
)

// errDialBackoff is a call to an address whose last dial failed a moment
// ago.
var errDialBackoff = fmt.Errorf("%w: peer unreachable a moment ago; not dialling again yet", ErrUnavailable)

// ErrPeerGone is a call or ask to the address of a member that left or
// died (Transport.Forget). It wraps ErrUnavailable.
var ErrPeerGone = fmt.Errorf("%w: the peer is no longer a member", ErrUnavailable)

// errTransportClosed is a call or ask after Close.
var errTransportClosed = fmt.Errorf("%w: transport closed", ErrUnavailable)

// quietLogger drops the pipeline client's own log lines: every failure
// reaches the caller as an error.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// peerTokenHeader carries the token derived from the cluster key.
const peerTokenHeader = "X-Trustd-Peer"

// MisdirectedError is what an owner answers when, under its newer ring,
// it does not own the partition asked for.
type MisdirectedError struct {
	Epoch uint64
}

func (e *MisdirectedError) Error() string {
	return fmt.Sprintf("cluster: misdirected ask (owner's ring epoch %d)", e.Epoch)
}

// ErrPeerRefused is returned when a peer answered with an error status.
var ErrPeerRefused = errors.New("cluster: peer refused the request")

// peerToken derives the token peers present from the cluster key; an
// empty key means no token (a cluster on a trusted network only).
func peerToken(key string) string {
	if key == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("trustd peer transport v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// Transport is the client side of the peer transport. It implements
// Forwarder.
type Transport struct {
	token   string
	node    string      // this node's id, claimed in every request (SetNodeID)
	tls     *tls.Config // nil: plain TCP (loopback-only clusters)
	mu      sync.RWMutex
	clients map[string]*fasthttp.HostClient // calls, by peer address
	queues  map[string]*peerQueue           // by peer address
	hosts   map[string]*fasthttp.HostClient // frames, by peer address
	gone    map[string]bool                 // addresses of members that left or died
	streams map[string]*streamPeer          // peers that advertise streams (Advertise), by address
	closed  bool
	pending sync.Pool
	timers  sync.Pool
	// frames and asks count what the peer queues sent (Frames).
	frames, asks atomic.Uint64
	gens         atomic.Uint64 // numbers the uses of pooled pendingAsks

	sc       streamCounters
	streamWG sync.WaitGroup // the streams' readers and writers
	linger   time.Duration  // streamLinger; tests lengthen it
	log      atomic.Pointer[slog.Logger]

	dialMu  sync.Mutex
	backoff map[string]*dialState // addresses whose last dial failed
	dials   atomic.Uint64         // connection attempts (Dials)
}

// dialState is an address's dial back-off.
type dialState struct {
	fails int
	until time.Time
}

// Frames reports how many ask frames this transport sent and how many
// asks they carried.
func (t *Transport) Frames() (frames, asks uint64) { return t.frames.Load(), t.asks.Load() }

// Dials reports how many connections this transport has tried to open.
func (t *Transport) Dials() uint64 { return t.dials.Load() }

// NewTransport returns a transport that presents the token derived from
// clusterKey and, when clientTLS is set, dials peers over mutual TLS with
// it (see platform/cluster/mtls).
func NewTransport(clusterKey string, clientTLS *tls.Config) *Transport {
	t := &Transport{token: peerToken(clusterKey), tls: clientTLS, clients: map[string]*fasthttp.HostClient{},
		queues: map[string]*peerQueue{}, hosts: map[string]*fasthttp.HostClient{}, gone: map[string]bool{},
		streams: map[string]*streamPeer{}, backoff: map[string]*dialState{}, linger: streamLinger}
	t.pending.New = func() any { return &pendingAsk{done: make(chan struct{}, 1)} }
	return t
}

// SetNodeID makes every request claim node id: a peer refuses a request
// whose claim differs from the id its client certificate names.
func (t *Transport) SetNodeID(id string) { t.node = id }

// client returns the client for calls to addr, or an error when addr is
// a member that is gone or the transport is closed. Calls are occasional
// (status probes, forwarded writes, hand-offs, leave requests, extension
// operations, asks to a peer without frames), so a HostClient with a few
// connections serves them; it dials on the caller's goroutine and keeps
// no worker that could redial on its own.
func (t *Transport) client(addr string) (*fasthttp.HostClient, error) {
	return t.hostClient(t.clients, addr, 16)
}

// frameClient is client for ask frames (one sender per peer, so two
// connections suffice).
func (t *Transport) frameClient(addr string) (*fasthttp.HostClient, error) {
	return t.hostClient(t.hosts, addr, 2)
}

func (t *Transport) hostClient(m map[string]*fasthttp.HostClient, addr string, conns int) (*fasthttp.HostClient, error) {
	t.mu.RLock()
	c, err := m[addr], t.usable(addr)
	t.mu.RUnlock()
	if err != nil || c != nil {
		return c, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(addr); err != nil {
		return nil, err
	}
	if c = m[addr]; c == nil {
		c = &fasthttp.HostClient{
			Addr:                          addr,
			Name:                          "trustd-peer",
			MaxConns:                      conns,
			MaxConnWaitTimeout:            time.Second,
			ReadTimeout:                   5 * time.Second,
			WriteTimeout:                  5 * time.Second,
			MaxIdleConnDuration:           time.Minute,
			Dial:                          t.dial,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
		}
		m[addr] = c
	}
	return c, nil
}

// usable reports why addr may not be called, if it may not. t.mu is held.
func (t *Transport) usable(addr string) error {
	switch {
	case t.closed:
		return errTransportClosed
	case t.gone[addr]:
		return ErrPeerGone
	}
	return nil
}

// Forget is told that the member at addr left or died: its ask queue
// stops and every ask waiting on it (queued or in the frame in flight)
// fails at once with ErrPeerGone, its idle connections close, and calls
// and asks to addr fail without dialling until Remember(addr).
func (t *Transport) Forget(addr string) {
	if addr == "" {
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.gone[addr] = true
	q, rq := t.queues[addr], t.queues[replicaQueue(addr)]
	delete(t.queues, addr)
	delete(t.queues, replicaQueue(addr))
	cs := []*fasthttp.HostClient{t.clients[addr], t.hosts[addr]}
	delete(t.clients, addr)
	delete(t.hosts, addr)
	sp := t.streams[addr]
	delete(t.streams, addr)
	t.mu.Unlock()
	if sp != nil {
		sp.close(ErrPeerGone) // answers without blocking; the close of the connection is a goroutine's
	}
	for _, q := range []*peerQueue{q, rq} {
		if q != nil {
			q.close(ErrPeerGone) // answers without blocking
		}
	}
	// Forget runs in memberlist's event callback: closing connections (a
	// TLS close writes an alert) happens off it.
	go func() {
		for _, c := range cs {
			if c != nil {
				c.CloseIdleConnections()
			}
		}
	}()
	t.dialMu.Lock()
	delete(t.backoff, addr)
	t.dialMu.Unlock()
}

// Remember is told that addr is a live member's again (it rejoined, or
// a new member took the address): calls and asks to it dial again.
func (t *Transport) Remember(addr string) {
	t.mu.RLock()
	g := t.gone[addr]
	t.mu.RUnlock()
	if !g {
		return
	}
	t.mu.Lock()
	delete(t.gone, addr)
	t.mu.Unlock()
}

// dial connects to a peer and, over TLS, completes the handshake within
// the dial timeout, so a peer that is not a cluster member fails here.
func (t *Transport) dial(addr string) (net.Conn, error) {
	if err := t.mayDial(addr); err != nil {
		return nil, err
	}
	c, err := t.dialPeer(addr)
	t.dialed(addr, err)
	return c, err
}

// mayDial counts a connection attempt to addr, or refuses it while addr
// is backed off.
func (t *Transport) mayDial(addr string) error {
	t.dialMu.Lock()
	defer t.dialMu.Unlock()
	if st := t.backoff[addr]; st != nil && time.Now().Before(st.until) {
		return fmt.Errorf("%w: %s (%d failed dials)", errDialBackoff, addr, st.fails)
	}
	t.dials.Add(1)
	return nil
}

// dialed records the outcome of a dial: a failure backs addr off for
// twice as long as the previous one (minDialBackoff…maxDialBackoff), a
// success clears it.
func (t *Transport) dialed(addr string, err error) {
	t.dialMu.Lock()
	defer t.dialMu.Unlock()
	if err == nil {
		delete(t.backoff, addr)
		return
	}
	st := t.backoff[addr]
	if st == nil {
		st = &dialState{}
		t.backoff[addr] = st
	}
	d := minDialBackoff << min(st.fails, 8)
	st.fails++
	st.until = time.Now().Add(min(d, maxDialBackoff))
}

func (t *Transport) dialPeer(addr string) (net.Conn, error) {
	c, err := fasthttp.DialTimeout(addr, dialTimeout)
	if err != nil || t.tls == nil {
		return c, err
	}
	// The handshake gets its own, longer bound: on a loaded node a TLS
	// handshake can take longer than reaching the peer does, and a
	// refused handshake would fail every ask queued on this connection.
	tc := tls.Client(c, t.tls)
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// handshakeTimeout bounds the TLS handshake with a peer.
const handshakeTimeout = 5 * time.Second

// peerRequest makes req a POST of body to path on addr, with this node's
// cluster token and node-id claim.
func (t *Transport) peerRequest(req *fasthttp.Request, addr, path string, body []byte) {
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(path)
	req.Header.SetHost(addr)
	if t.token != "" {
		req.Header.Set(peerTokenHeader, t.token)
	}
	if t.node != "" {
		req.Header.Set(peerNodeHeader, t.node)
	}
	req.SetBodyRaw(body)
}

// call POSTs body to path on addr and returns the answer body, copied
// into dst. It fails on a transport error or a non-200 status.
func (t *Transport) call(addr, path string, body []byte, dst []byte, timeout time.Duration) ([]byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	t.peerRequest(req, addr, path, body)
	c, err := t.client(addr)
	if err != nil {
		return dst, err
	}
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return dst, err
	}
	if sc := resp.StatusCode(); sc != fasthttp.StatusOK {
		return dst, fmt.Errorf("%w: %s %s: %d %s", ErrPeerRefused, addr, path, sc, resp.Body())
	}
	return append(dst, resp.Body()...), nil
}

// callFrame is call for ask frames. Their only sender is the peer's
// queue goroutine with one frame in flight, so a plain client that writes
// and reads on the calling goroutine serves it: no writer and reader
// goroutines to wake per frame, as the pipeline client has.
func (t *Transport) callFrame(addr string, body, dst []byte, timeout time.Duration) ([]byte, error) {
	c, err := t.frameClient(addr)
	if err != nil {
		return dst, err
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	t.peerRequest(req, addr, pathAsks, body)
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return dst, err
	}
	if sc := resp.StatusCode(); sc == fasthttp.StatusNotFound {
		return dst, errNoFrames
	} else if sc != fasthttp.StatusOK {
		return dst, fmt.Errorf("%w: %s %s: %d %s", ErrPeerRefused, addr, pathAsks, sc, resp.Body())
	}
	return append(dst, resp.Body()...), nil
}

// errNoFrames is a peer of the previous version: it has no /peer/v1/asks.
var errNoFrames = errors.New("cluster: peer does not take ask frames")

// legacyRetry is how long a queue sends one ask per request to a peer
// that refused frames before trying a frame again (a rolling upgrade).
const legacyRetry = time.Minute

// Forward implements Forwarder: one Ask, one Answer. Asks to one peer
// travel in frames (see peerQueue): an ask made while no frame to that
// peer is in flight leaves at once; asks made while one is in flight wait
// for it and leave together in the next.
func (t *Transport) Forward(m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error {
	return t.forward(nil, m, epoch, partition, op, replica, timeout)
}

// ForwardTrace implements TraceForwarder: Forward with the sender's
// encoded trace context in the ask (platform/cluster/trace.go).
func (t *Transport) ForwardTrace(trace []byte, m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error {
	return t.forward(trace, m, epoch, partition, op, replica, timeout)
}

func (t *Transport) forward(trace []byte, m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error {
	p := t.pending.Get().(*pendingAsk)
	opb, err := op.AppendOp(p.buf[:0])
	if err != nil {
		p.buf = opb[:0]
		t.pending.Put(p)
		return fmt.Errorf("cluster: encode %s: %w", op.OpKind(), err)
	}
	body, err := appendAsk(opb[len(opb):], epoch, uint32(partition), op.OpKind(), opb, replica, trace)
	if err != nil {
		p.buf = opb[:0]
		t.pending.Put(p)
		return fmt.Errorf("cluster: encode ask: %w", err)
	}
	// The op and the envelope share one array: when the envelope outgrew
	// opb's, the new array (holding the envelope) is the next ask's
	// scratch, so a pooled pendingAsk stops allocating once it has seen
	// the largest op.
	scratch := opb[:0]
	if cap(body) > cap(opb)-len(opb) {
		scratch = body[:0]
	}
	p.buf, p.body, p.timeout, p.err, p.closed = scratch, body, timeout, nil, false
	p.gen = t.gens.Add(1)
	p.state.Store(p.gen<<2 | askWaiting)
	if sp := t.streamFor(m.PeerAddr); sp != nil {
		if sent, err := t.forwardStream(sp, m, p, op, timeout); sent {
			return err
		}
		// The peer opens no stream of this version: HTTP frames.
	}
	q, err := t.queue(m.PeerAddr, replica)
	if err != nil {
		t.pending.Put(p)
		return fmt.Errorf("cluster: ask %s: %w", m.ID, err)
	}
	q.push(p)
	if !p.wait(timeout, &t.timers) {
		// Abandoned: the sender may still write into p, so p is never
		// reused. The op may still run on the owner.
		return fmt.Errorf("cluster: ask %s: %w", m.ID, fasthttp.ErrTimeout)
	}
	if p.closed {
		// Answered by the queue's close while possibly in a frame in
		// flight, whose sender may still try to answer it: never reused.
		return fmt.Errorf("cluster: ask %s: %w", m.ID, p.err)
	}
	return t.answered(m, op, p)
}

// forwardStream sends p over the peer's stream and waits for its answer
// (see stream.go). sent is false when the peer opens no stream of this
// version: p is untouched and goes in an HTTP frame instead.
func (t *Transport) forwardStream(sp *streamPeer, m Member, p *pendingAsk, op actors.WireOp, timeout time.Duration) (sent bool, err error) {
	tm, _ := t.timers.Get().(*time.Timer)
	if tm == nil {
		tm = time.NewTimer(timeout)
	} else {
		tm.Reset(timeout)
	}
	defer func() { tm.Stop(); t.timers.Put(tm) }()
	s, err := sp.get(tm.C)
	if errors.Is(err, errNoStream) {
		return false, nil
	}
	if err != nil {
		t.pending.Put(p)
		return true, fmt.Errorf("cluster: ask %s: %w", m.ID, err)
	}
	answered, abandoned, err := s.ask(p, tm.C)
	switch {
	case abandoned:
		// Its late answer is dropped by id, but p is never reused. The op
		// may still run on the owner.
		return true, fmt.Errorf("cluster: ask %s: %w", m.ID, err)
	case !answered:
		t.pending.Put(p)
		return true, fmt.Errorf("cluster: ask %s: %w", m.ID, err)
	}
	return true, t.answered(m, op, p)
}

// answered decodes the answer p received and returns p to the pool.
func (t *Transport) answered(m Member, op actors.WireOp, p *pendingAsk) error {
	defer func() {
		p.out = p.out[:0]
		t.pending.Put(p)
	}()
	if p.err != nil {
		return fmt.Errorf("cluster: ask %s: %w", m.ID, p.err)
	}
	var ans answer
	if !ans.decode(p.out) {
		return fmt.Errorf("cluster: undecodable answer from %s", m.ID)
	}
	switch ans.status {
	case clusterpb.Status_STATUS_OK:
		return op.UnmarshalResult(ans.result)
	case clusterpb.Status_STATUS_MISDIRECTED:
		return &MisdirectedError{Epoch: ans.epoch}
	}
	return fmt.Errorf("%w: %s answered %s: %s", ErrPeerRefused, m.ID, ans.status, ans.err)
}

// appendAsk appends the encoding of clusterpb.Ask{Epoch: epoch, Partition:
// partition, Kind: kind, Op: op, Replica: replica, Trace: trace} to b, byte
// for byte what proto.Marshal writes (TestAppendAskIsProto), without its
// reflection. trace is empty unless the ask is traced (platform/cluster/trace.go),
// so an untraced ask is the same bytes as before the field existed.
func appendAsk(b []byte, epoch uint64, partition uint32, kind string, op []byte, replica bool, trace []byte) ([]byte, error) {
	if epoch != 0 {
		b = append(b, 1<<3|byte(protowire.VarintType))
		b = protowire.AppendVarint(b, epoch)
	}
	if partition != 0 {
		b = append(b, 2<<3|byte(protowire.VarintType))
		b = protowire.AppendVarint(b, uint64(partition))
	}
	if kind != "" {
		if !utf8.ValidString(kind) {
			return b, errors.New("cluster: op kind is not UTF-8")
		}
		b = append(b, 3<<3|byte(protowire.BytesType))
		b = protowire.AppendString(b, kind)
	}
	if len(op) > 0 {
		b = append(b, 4<<3|byte(protowire.BytesType))
		b = protowire.AppendBytes(b, op)
	}
	if replica {
		b = append(b, 5<<3|byte(protowire.VarintType), 1)
	}
	b = appendAskFormat(b)
	if len(trace) > 0 {
		b = protowire.AppendTag(b, askTraceField, protowire.BytesType)
		b = protowire.AppendBytes(b, trace)
	}
	return b, nil
}

// States of a pendingAsk, in the low two bits of its state; the rest is
// the use's generation.
const (
	askWaiting uint64 = iota
	askAnswering
	askAnswered
	askAbandoned
)

// pendingAsk is one encoded ask waiting for its answer. The caller owns it
// until it is pushed; then the peer's sender writes out or err and moves
// state from waiting to answered (and signals done), unless the caller
// moved it to abandoned first.
type pendingAsk struct {
	buf     []byte // scratch the ask is encoded into
	body    []byte // the encoded clusterpb.Ask (in buf's array)
	timeout time.Duration
	out     []byte // the encoded clusterpb.Answer
	err     error
	closed  bool          // answered by peerQueue.close
	gen     uint64        // this use of the pooled pendingAsk (Transport.gens)
	state   atomic.Uint64 // gen<<2 | one of askWaiting...
	done    chan struct{}
}

// wait waits up to timeout for the answer; false: abandoned.
func (p *pendingAsk) wait(timeout time.Duration, timers *sync.Pool) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	t, _ := timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(timeout)
	} else {
		t.Reset(timeout)
	}
	defer func() { t.Stop(); timers.Put(t) }()
	select {
	case <-p.done:
		return true
	case <-t.C:
		if p.state.CompareAndSwap(p.gen<<2|askWaiting, p.gen<<2|askAbandoned) {
			return false
		}
		<-p.done // answered meanwhile
		return true
	}
}

// answer hands p its answer unless it was abandoned or answered already
// (the sender and the queue's close may both try).
func (p *pendingAsk) answer(out []byte, err error) {
	p.settle(p.gen, out, err, false)
}

// settle answers use gen of p. It does nothing when that use was answered
// or abandoned already, or p has been reused since: peerQueue.close
// answers the asks of the frame in flight by the generation it recorded
// when the frame was taken, while the sender may answer them too and
// their callers reuse them.
func (p *pendingAsk) settle(gen uint64, out []byte, err error, closed bool) {
	if !p.state.CompareAndSwap(gen<<2|askWaiting, gen<<2|askAnswering) {
		return
	}
	p.out, p.err, p.closed = append(p.out[:0], out...), err, closed
	p.state.Store(gen<<2 | askAnswered)
	p.done <- struct{}{}
}

// peerQueue coalesces the asks to one peer. One sender goroutine per peer
// keeps at most one frame in flight: it takes every ask queued, sends them
// as one frame (POST /peer/v1/asks, the body a clusterpb "repeated Ask"
// (field 1), the answer a "repeated Answer" in the same order), hands each
// caller its answer, and repeats while asks are queued. When idle an ask
// leaves at once (one wake of the sender); under load the frame grows
// with what arrives during one round trip, so the per-request costs of
// the peer transport (HTTP framing, syscalls, goroutine wakes on both
// nodes) are paid per frame, not per ask.
type peerQueue struct {
	t        *Transport
	addr     string
	mu       sync.Mutex
	queue    []*pendingAsk
	spare    []*pendingAsk
	inflight []*pendingAsk // the frame being sent (the sender's batch)
	inGens   []uint64      // the generations of inflight's asks
	closed   error         // set by close: pushes fail at once with it
	wake     chan struct{}
	stop     chan struct{}
	frame    []byte
	answer   []byte
	legacy   time.Time // until then the peer gets one ask per request
}

// maxFrameAsks bounds the asks of one frame.
const maxFrameAsks = 256

// replicaQueue is the key of a peer's queue for replica asks.
func replicaQueue(addr string) string { return "replica " + addr }

// queue is the peer's queue for owner asks, or with replica its queue
// for replica asks. They are two because serving an owner ask may need a
// replica ask back to the sender: were both in one queue, a frame each
// way would wait on the other's frame in flight until the replica asks
// timed out (every replicated use unavailable while two nodes ask each
// other; TestReplicatedAsksInBothDirectionsDoNotWaitOnEachOther). A
// replica ask never waits on another node, so its frames always finish.
func (t *Transport) queue(addr string, replica bool) (*peerQueue, error) {
	key := addr
	if replica {
		key = replicaQueue(addr)
	}
	t.mu.RLock()
	q := t.queues[key]
	t.mu.RUnlock()
	if q != nil {
		return q, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(addr); err != nil {
		return nil, err
	}
	if q = t.queues[key]; q == nil {
		q = &peerQueue{t: t, addr: addr, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		t.queues[key] = q
		go q.send()
	}
	return q, nil
}

func (q *peerQueue) push(p *pendingAsk) {
	q.mu.Lock()
	if err := q.closed; err != nil {
		q.mu.Unlock()
		p.settle(p.gen, nil, err, true)
		return
	}
	q.queue = append(q.queue, p)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns up to maxFrameAsks queued asks that are still waited for.
func (q *peerQueue) take() []*pendingAsk {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.queue), maxFrameAsks)
	batch := append(q.spare[:0], q.queue[:n]...)
	rest := copy(q.queue, q.queue[n:])
	clear(q.queue[rest:])
	q.queue = q.queue[:rest]
	live := batch[:0]
	for _, p := range batch {
		if p.state.Load() == p.gen<<2|askWaiting {
			live = append(live, p)
		}
	}
	clear(batch[len(live):])
	q.inflight, q.inGens = live, q.inGens[:0]
	for _, p := range live {
		q.inGens = append(q.inGens, p.gen)
	}
	return live
}

// close stops the queue: every ask queued or in the frame in flight is
// answered err at once, and later pushes are too.
func (q *peerQueue) close(err error) {
	q.mu.Lock()
	if q.closed != nil {
		q.mu.Unlock()
		return
	}
	q.closed = err
	for _, p := range q.queue {
		p.settle(p.gen, nil, err, true) // queued: answered by nobody else
	}
	for i, p := range q.inflight {
		p.settle(q.inGens[i], nil, err, true)
	}
	clear(q.queue)
	q.queue = q.queue[:0]
	q.mu.Unlock()
	close(q.stop)
}

func (q *peerQueue) send() {
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			return
		}
		for {
			// Let the goroutines already runnable (checks about to forward)
			// queue their asks first: under load the frame grows by what
			// the node was about to send anyway; idle, nothing else is
			// runnable and the ask leaves at once.
			runtime.Gosched()
			batch := q.take()
			if len(batch) == 0 {
				break
			}
			q.flush(batch)
			q.mu.Lock()
			clear(batch)
			q.spare, q.inflight = batch[:0], nil
			q.mu.Unlock()
		}
	}
}

// flush sends one frame and hands out its answers.
func (q *peerQueue) flush(batch []*pendingAsk) {
	frame := q.frame[:0]
	var timeout time.Duration
	for _, p := range batch {
		frame = protowire.AppendTag(frame, 1, protowire.BytesType)
		frame = protowire.AppendBytes(frame, p.body)
		timeout = max(timeout, p.timeout)
	}
	q.frame = frame
	if time.Now().Before(q.legacy) {
		q.oneByOne(batch)
		return
	}
	q.t.frames.Add(1)
	q.t.asks.Add(uint64(len(batch)))
	out, err := q.t.callFrame(q.addr, frame, q.answer[:0], timeout)
	q.answer = out
	if errors.Is(err, errNoFrames) {
		q.legacy = time.Now().Add(legacyRetry)
		q.oneByOne(batch)
		return
	}
	if err != nil {
		for _, p := range batch {
			p.answer(nil, err)
		}
		return
	}
	for i, p := range batch {
		ans, rest, ok := nextField(out)
		if !ok {
			for _, p := range batch[i:] {
				p.answer(nil, fmt.Errorf("%w: %d answers to %d asks", ErrPeerRefused, i, len(batch)))
			}
			return
		}
		out = rest
		p.answer(ans, nil)
	}
}

// oneByOne sends each ask of batch on its own (POST /peer/v1/ask), in
// parallel, to a peer that takes no frames.
func (q *peerQueue) oneByOne(batch []*pendingAsk) {
	var wg sync.WaitGroup
	for _, p := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := q.t.call(q.addr, pathAsk, p.body, nil, p.timeout)
			p.answer(out, err)
		}()
	}
	wg.Wait()
}

// nextField reads one "field 1, bytes" entry of a frame.
func nextField(b []byte) (v, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return nil, nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return nil, nil, false
	}
	return v, b[n+m:], true
}

// Close drops every peer connection and fails every waiting ask; later
// calls and asks fail at once.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	qs, cs, ss := t.queues, []map[string]*fasthttp.HostClient{t.clients, t.hosts}, t.streams
	t.queues = map[string]*peerQueue{}
	t.clients, t.hosts = map[string]*fasthttp.HostClient{}, map[string]*fasthttp.HostClient{}
	t.streams = map[string]*streamPeer{}
	t.mu.Unlock()
	for _, q := range qs {
		q.close(errTransportClosed)
	}
	for _, sp := range ss {
		sp.close(errTransportClosed)
	}
	t.streamWG.Wait()
	for _, m := range cs {
		for _, c := range m {
			c.CloseIdleConnections()
		}
	}
}

// validToken reports whether got is the token derived from the cluster
// key. Without a key there is no valid token: a peer listener is never
// open to anyone (node.Start always has a key, generated when none was
// given).
func validToken(want string, got []byte) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(want), got) == 1
}
