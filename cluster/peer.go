package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"
	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/proto/clusterpb"
)

// The peer listener: a fasthttp server on --peer-addr that only other
// nodes talk to. It carries forwarded asks, forwarded Raft writes,
// hand-offs, status probes and leave requests; it serves nothing of the
// public API. When the cluster has a key, every request must present the
// token derived from it.

// ErrNoLeader is returned by ForwardApply while no Raft leader is known.
var ErrNoLeader = errors.New("cluster: no raft leader known")

func (c *Cluster) newPeerServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               c.servePeer,
		Name:                  "trustd-peer",
		ReadTimeout:           2 * time.Minute,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           5 * time.Minute,
		MaxRequestBodySize:    64 << 20,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		Logger:                quietLogger{},
	}
}

func (c *Cluster) servePeer(ctx *fasthttp.RequestCtx) {
	if !validToken(c.token, ctx.Request.Header.Peek(peerTokenHeader)) {
		ctx.Error("peer token required", fasthttp.StatusForbidden)
		return
	}
	switch string(ctx.Path()) {
	case pathAsk:
		c.serveAsk(ctx)
	case pathAsks:
		c.serveAsks(ctx)
	case pathApply:
		c.serveApply(ctx)
	case pathHandoff:
		var h clusterpb.Handoff
		if err := gproto.Unmarshal(ctx.PostBody(), &h); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
			return
		}
		if err := c.importHandoff(&h); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		}
	case pathStatus:
		b, _ := gproto.Marshal(c.localStatus())
		ctx.SetBody(b)
	case pathLeave:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.requestedLeave()
		}()
	default:
		ctx.Error("no such peer operation", fasthttp.StatusNotFound)
	}
}

func (c *Cluster) serveAsk(ctx *fasthttp.RequestCtx) {
	var ans clusterpb.Answer
	c.runAsk(ctx.PostBody(), &ans)
	c.answer(ctx, &ans)
}

// runAsk decodes one encoded clusterpb.Ask, runs it and fills ans.
func (c *Cluster) runAsk(body []byte, ans *clusterpb.Answer) {
	var ask clusterpb.Ask
	if err := gproto.Unmarshal(body, &ask); err != nil || ask.Partition >= Partitions {
		ans.Status, ans.Error = clusterpb.Status_STATUS_BAD_REQUEST, "undecodable ask"
		return
	}
	op, err := actors.NewWireOp(ask.Kind)
	if err != nil {
		ans.Status, ans.Error = clusterpb.Status_STATUS_UNKNOWN_OP, err.Error()
		return
	}
	if err := op.UnmarshalOp(ask.Op); err != nil {
		ans.Status, ans.Error = clusterpb.Status_STATUS_BAD_REQUEST, err.Error()
		return
	}
	epoch, err := c.router.Serve(ask.Epoch, int(ask.Partition), op, ask.Replica)
	ans.Epoch = epoch
	var mis *MisdirectedError
	switch {
	case errors.As(err, &mis):
		ans.Status = clusterpb.Status_STATUS_MISDIRECTED
	case err != nil:
		ans.Status, ans.Error = clusterpb.Status_STATUS_UNAVAILABLE, err.Error()
	default:
		if ans.Result, err = op.AppendResult(nil); err != nil {
			ans.Status, ans.Error = clusterpb.Status_STATUS_UNAVAILABLE, err.Error()
		}
	}
}

// serveAsks runs a frame of asks (Transport's peerQueue) and answers them
// in order in one frame. Asks run one after another on this goroutine (a
// local op is a fraction of a microsecond), except that when the frame
// holds more than one ask, those that go on to the partition's replica
// (a network round trip) run in parallel.
func (c *Cluster) serveAsks(ctx *fasthttp.RequestCtx) {
	body := ctx.PostBody()
	var asks [][]byte
	for len(body) > 0 {
		v, rest, ok := nextField(body)
		if !ok || len(asks) >= 4*maxFrameAsks {
			ctx.Error("undecodable frame", fasthttp.StatusBadRequest)
			return
		}
		asks, body = append(asks, v), rest
	}
	answers := make([]clusterpb.Answer, len(asks))
	var wg sync.WaitGroup
	for i, a := range asks {
		if len(asks) > 1 && replicates(a) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.runAsk(a, &answers[i])
			}()
			continue
		}
		c.runAsk(a, &answers[i])
	}
	wg.Wait()
	out := ctx.Response.Body()[:0]
	for i := range answers {
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(gproto.Size(&answers[i])))
		var err error
		if out, err = (gproto.MarshalOptions{}).MarshalAppend(out, &answers[i]); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
			return
		}
	}
	ctx.Response.SetBodyRaw(out)
}

// replicates reports whether the encoded ask is an owner's op that goes on
// to the replica (it reads only the kind and the replica flag).
func replicates(ask []byte) bool {
	var a clusterpb.Ask
	if gproto.Unmarshal(ask, &a) != nil || a.Replica {
		return false
	}
	op, err := actors.NewWireOp(a.Kind)
	if err != nil {
		return false
	}
	_, ok := op.(actors.Replicated)
	return ok
}

func (c *Cluster) answer(ctx *fasthttp.RequestCtx, ans *clusterpb.Answer) {
	b, err := gproto.MarshalOptions{}.MarshalAppend(ctx.Response.Body()[:0], ans)
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		return
	}
	ctx.Response.SetBodyRaw(b)
}

// serveApply is the leader's side of a write forwarded by a follower.
func (c *Cluster) serveApply(ctx *fasthttp.RequestCtx) {
	var ans clusterpb.ApplyAnswer
	if c.cons.Raft().State() != raft.Leader {
		ans.NotLeader, ans.Error = true, "not the raft leader"
	} else if ix, err := c.cons.ApplyBatch(append([]byte(nil), ctx.PostBody()...), 10*time.Second); err != nil {
		ans.Error = err.Error()
		ans.NotLeader = errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost)
	} else {
		ans.Index = ix
	}
	b, _ := gproto.Marshal(&ans)
	ctx.SetBody(b)
}

// ForwardApply sends an encoded Raft batch to the leader, which appends
// it to the log; the follower's own FSM then applies it and hands the
// results to the callers waiting on this node. It implements
// persistence.Forwarder, so handlers write on any node unchanged.
func (c *Cluster) ForwardApply(ctx context.Context, batch []byte) error {
	_, leader := c.cons.Raft().LeaderWithID()
	if leader == "" {
		return ErrNoLeader
	}
	var addr string
	for _, m := range c.Members() {
		if m.ID == string(leader) {
			addr = m.PeerAddr
		}
	}
	if addr == "" {
		return fmt.Errorf("%w: leader %s is not a live member", ErrNoLeader, leader)
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	out, err := c.trans.call(addr, pathApply, batch, nil, timeout)
	if err != nil {
		return fmt.Errorf("cluster: forward write to leader %s: %w", leader, err)
	}
	var ans clusterpb.ApplyAnswer
	if err := gproto.Unmarshal(out, &ans); err != nil {
		return fmt.Errorf("cluster: undecodable answer from leader %s: %w", leader, err)
	}
	if ans.NotLeader {
		return fmt.Errorf("%w: %s: %s", ErrNoLeader, leader, ans.Error)
	}
	if ans.Error != "" {
		return fmt.Errorf("cluster: leader %s: %s", leader, ans.Error)
	}
	return nil
}
