package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/proto/clusterpb"
)

// The peer transport: node-to-node requests over one pipelined fasthttp
// client per peer. Measured on these machines a pipelined fasthttp round
// trip costs a fraction of protoactor remote's, with one allocation, so
// the cluster carries its own few message types this way. Every body is a
// proto/clusterpb message.

// Paths of the peer listener. They are cluster-internal and never part of
// the public contract.
const (
	pathAsk     = "/peer/v1/ask"
	pathApply   = "/peer/v1/apply"
	pathHandoff = "/peer/v1/handoff"
	pathStatus  = "/peer/v1/status"
	pathLeave   = "/peer/v1/leave"
)

// dialTimeout bounds connecting to a peer; an ask's own timeout bounds
// the rest.
const dialTimeout = 500 * time.Millisecond

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
	tls     *tls.Config // nil: plain TCP (loopback-only clusters)
	mu      sync.RWMutex
	clients map[string]*fasthttp.PipelineClient // by peer address
	bufs    sync.Pool
}

// NewTransport returns a transport that presents the token derived from
// clusterKey and, when clientTLS is set, dials peers over mutual TLS with
// it (see cluster/mtls).
func NewTransport(clusterKey string, clientTLS *tls.Config) *Transport {
	t := &Transport{token: peerToken(clusterKey), tls: clientTLS, clients: map[string]*fasthttp.PipelineClient{}}
	t.bufs.New = func() any { b := make([]byte, 0, 256); return &b }
	return t
}

func (t *Transport) client(addr string) *fasthttp.PipelineClient {
	t.mu.RLock()
	c := t.clients[addr]
	t.mu.RUnlock()
	if c != nil {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c = t.clients[addr]; c == nil {
		c = &fasthttp.PipelineClient{
			Addr:               addr,
			Name:               "trustd-peer",
			MaxConns:           1,
			MaxPendingRequests: 4096,
			MaxBatchDelay:      0,
			ReadTimeout:        5 * time.Second,
			WriteTimeout:       5 * time.Second,
			Dial:               t.dial,
			Logger:             quietLogger{},
		}
		t.clients[addr] = c
	}
	return c
}

// dial connects to a peer and, over TLS, completes the handshake within
// the dial timeout, so a peer that is not a cluster member fails here.
func (t *Transport) dial(addr string) (net.Conn, error) {
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

// call POSTs body to path on addr and returns the answer body, copied
// into dst. It fails on a transport error or a non-200 status.
func (t *Transport) call(addr, path string, body []byte, dst []byte, timeout time.Duration) ([]byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(path)
	req.Header.SetHost(addr)
	if t.token != "" {
		req.Header.Set(peerTokenHeader, t.token)
	}
	req.SetBodyRaw(body)
	if err := t.client(addr).DoTimeout(req, resp, timeout); err != nil {
		return dst, err
	}
	if sc := resp.StatusCode(); sc != fasthttp.StatusOK {
		return dst, fmt.Errorf("%w: %s %s: %d %s", ErrPeerRefused, addr, path, sc, resp.Body())
	}
	return append(dst, resp.Body()...), nil
}

// Forward implements Forwarder: one Ask, one Answer.
func (t *Transport) Forward(m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error {
	bp := t.bufs.Get().(*[]byte)
	defer t.bufs.Put(bp)
	opb, err := op.AppendOp((*bp)[:0])
	if err != nil {
		return fmt.Errorf("cluster: encode %s: %w", op.OpKind(), err)
	}
	ask := clusterpb.Ask{Epoch: epoch, Partition: uint32(partition), Kind: op.OpKind(), Op: opb, Replica: replica}
	body, err := gproto.MarshalOptions{}.MarshalAppend(opb[len(opb):], &ask)
	if err != nil {
		return fmt.Errorf("cluster: encode ask: %w", err)
	}
	out, err := t.call(m.PeerAddr, pathAsk, body, body[len(body):], timeout)
	*bp = out[:0]
	if err != nil {
		return fmt.Errorf("cluster: ask %s: %w", m.ID, err)
	}
	var ans clusterpb.Answer
	if err := gproto.Unmarshal(out, &ans); err != nil {
		return fmt.Errorf("cluster: undecodable answer from %s: %w", m.ID, err)
	}
	switch ans.Status {
	case clusterpb.Status_STATUS_OK:
		return op.UnmarshalResult(ans.Result)
	case clusterpb.Status_STATUS_MISDIRECTED:
		return &MisdirectedError{Epoch: ans.Epoch}
	}
	return fmt.Errorf("%w: %s answered %s: %s", ErrPeerRefused, m.ID, ans.Status, ans.Error)
}

// Close drops every peer connection.
func (t *Transport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clients = map[string]*fasthttp.PipelineClient{}
}

func validToken(want string, got []byte) bool {
	return want == "" || subtle.ConstantTimeCompare([]byte(want), got) == 1
}
