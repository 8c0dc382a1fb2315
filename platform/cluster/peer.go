package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
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
	if !c.authenticPeer(ctx) {
		return
	}
	switch string(ctx.Path()) {
	case pathAsk:
		c.serveAsk(ctx)
	case pathAsks:
		c.serveAsks(ctx)
	case pathStream:
		c.serveStream(ctx)
	case pathApply:
		c.serveApply(ctx)
	case pathHandoff:
		var h clusterpb.Handoff
		if err := gproto.Unmarshal(ctx.PostBody(), &h); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
			return
		}
		if err := c.formats.handoffReadable(&h, c.log); err != nil {
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
		if err := c.formats.leaveReadable(ctx.PostBody(), c.log); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.requestedLeave()
		}()
	default:
		if c.serveExt(ctx, string(ctx.Path())) {
			return
		}
		ctx.Error("no such peer operation", fasthttp.StatusNotFound)
	}
}

func (c *Cluster) serveAsk(ctx *fasthttp.RequestCtx) {
	var ans answer
	c.runAsk(ctx.PostBody(), &ans)
	ctx.Response.SetBodyRaw(ans.appendTo(ctx.Response.Body()[:0]))
}

// askMsg is a decoded clusterpb.Ask whose byte fields are views of the
// frame (decoded by hand: the generated decoder allocates the message and
// copies every field, per ask).
type askMsg struct {
	epoch     uint64
	partition uint64
	kind      []byte
	op        []byte
	replica   bool
	format    uint64 // clusterpb.Ask.format (wireformat.go)
	trace     []byte // the sender's trace context, when traced (trace.go)
}

func (a *askMsg) decode(b []byte) bool {
	*a = askMsg{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			a.epoch, n = protowire.ConsumeVarint(b)
		case num == 2 && typ == protowire.VarintType:
			a.partition, n = protowire.ConsumeVarint(b)
		case num == 3 && typ == protowire.BytesType:
			a.kind, n = protowire.ConsumeBytes(b)
		case num == 4 && typ == protowire.BytesType:
			a.op, n = protowire.ConsumeBytes(b)
		case num == 5 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			a.replica = v != 0
		case num == askFormatField && typ == protowire.VarintType:
			a.format, n = protowire.ConsumeVarint(b)
		case num == askTraceField && typ == protowire.BytesType:
			a.trace, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// answer is a clusterpb.Answer, encoded by hand.
type answer struct {
	status clusterpb.Status
	result []byte
	epoch  uint64
	err    string
}

func (a *answer) appendTo(b []byte) []byte {
	if a.status != clusterpb.Status_STATUS_OK {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.status))
	}
	if len(a.result) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, a.result)
	}
	if a.epoch != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, a.epoch)
	}
	if a.err != "" {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendString(b, a.err)
	}
	return b
}

// size is the encoded length of a.
func (a *answer) size() int {
	n := 0
	if a.status != clusterpb.Status_STATUS_OK {
		n += 1 + protowire.SizeVarint(uint64(a.status))
	}
	if len(a.result) > 0 {
		n += 1 + protowire.SizeBytes(len(a.result))
	}
	if a.epoch != 0 {
		n += 1 + protowire.SizeVarint(a.epoch)
	}
	if a.err != "" {
		n += 1 + protowire.SizeBytes(len(a.err))
	}
	return n
}

// decode reads an encoded clusterpb.Answer; result is a view of b.
func (a *answer) decode(b []byte) bool {
	*a = answer{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v uint64
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
			a.status = clusterpb.Status(v)
		case num == 2 && typ == protowire.BytesType:
			a.result, n = protowire.ConsumeBytes(b)
		case num == 3 && typ == protowire.VarintType:
			a.epoch, n = protowire.ConsumeVarint(b)
		case num == 4 && typ == protowire.BytesType:
			var e []byte
			e, n = protowire.ConsumeBytes(b)
			a.err = string(e)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// decodeOp decodes an ask's op; false: ans holds the refusal.
func (c *Cluster) decodeOp(a *askMsg, ans *answer) (actors.WireOp, bool) {
	if !c.formats.askReadable(a, ans, c.log) {
		return nil, false
	}
	op, err := actors.NewWireOpOf(a.kind)
	if err != nil {
		ans.status, ans.err = clusterpb.Status_STATUS_UNKNOWN_OP, err.Error()
		return nil, false
	}
	if err := op.UnmarshalOp(a.op); err != nil {
		ans.status, ans.err = clusterpb.Status_STATUS_BAD_REQUEST, err.Error()
		return nil, false
	}
	return op, true
}

// runAsk decodes one encoded clusterpb.Ask, runs it and fills ans.
func (c *Cluster) runAsk(body []byte, ans *answer) {
	var a askMsg
	if !a.decode(body) || a.partition >= Partitions {
		ans.status, ans.err = clusterpb.Status_STATUS_BAD_REQUEST, "undecodable ask"
		return
	}
	op, ok := c.decodeOp(&a, ans)
	if !ok {
		return
	}
	c.serveOp(&a, op, ans)
}

func (c *Cluster) serveOp(a *askMsg, op actors.WireOp, ans *answer) {
	ctx, span := c.serveSpan(a)
	epoch, err := c.router.serve(ctx, a.epoch, int(a.partition), op, a.replica)
	c.answerOp(op, epoch, err, ans)
	endServeSpan(span, ans)
}

// isMisdirected reports whether err is a *MisdirectedError. A function of
// its own so that the target errors.As needs is allocated only when there
// is an error to look at, not on every answer.
func isMisdirected(err error) bool {
	var mis *MisdirectedError
	return errors.As(err, &mis)
}

// answerOp fills ans with a served op's outcome.
func (c *Cluster) answerOp(op actors.WireOp, epoch uint64, err error, ans *answer) {
	ans.epoch = epoch
	switch {
	case err != nil && isMisdirected(err):
		ans.status = clusterpb.Status_STATUS_MISDIRECTED
	case err != nil:
		ans.status, ans.err = clusterpb.Status_STATUS_UNAVAILABLE, err.Error()
	default:
		if ans.result, err = op.AppendResult(ans.result[:0]); err != nil {
			ans.status, ans.err = clusterpb.Status_STATUS_UNAVAILABLE, err.Error()
		}
	}
}

// frameScratch is the per-frame state of serveAsks, pooled.
type frameScratch struct {
	asks    []askMsg
	answers []answer
	wg      sync.WaitGroup
	// The asks served together (Router.ServeTogether) and where their
	// answers go.
	together []FramedAsk
	ops      []actors.WireOp
	idx      []int
	epochs   []uint64
	errs     []error
	spans    []trace.Span // of the asks served together; nil: untraced
}

var frames = sync.Pool{New: func() any { return new(frameScratch) }}

// resetAnswers makes one empty answer per ask of f, keeping the answers'
// result buffers, and returns how many.
func (f *frameScratch) resetAnswers() int {
	n := len(f.asks)
	if cap(f.answers) < n {
		f.answers = make([]answer, n)
	}
	f.answers = f.answers[:n]
	for i := range f.answers {
		f.answers[i] = answer{result: f.answers[i].result[:0]}
	}
	return n
}

// serveAsks runs a frame of asks (Transport's peerQueue) and answers them
// in order in one frame. The asks that need no replica are queued on
// their shards together and waited for once (Router.ServeTogether; ops on
// one shard keep the frame's order); those that go on to the partition's
// replica (a network round trip) run in parallel when the frame holds
// more than one ask.
func (c *Cluster) serveAsks(ctx *fasthttp.RequestCtx) {
	f := frames.Get().(*frameScratch)
	defer frames.Put(f)
	f.asks = f.asks[:0]
	body := ctx.PostBody()
	for len(body) > 0 {
		v, rest, ok := nextField(body)
		if !ok || len(f.asks) >= 4*maxFrameAsks {
			ctx.Error("undecodable frame", fasthttp.StatusBadRequest)
			return
		}
		f.asks = append(f.asks, askMsg{})
		if !f.asks[len(f.asks)-1].decode(v) {
			f.asks[len(f.asks)-1].partition = Partitions // refused below
		}
		body = rest
	}
	n := f.resetAnswers()
	for i := range f.asks {
		a, ans := &f.asks[i], &f.answers[i]
		if a.partition >= Partitions {
			ans.status, ans.err = clusterpb.Status_STATUS_BAD_REQUEST, "undecodable ask"
			continue
		}
		op, ok := c.decodeOp(a, ans)
		if !ok {
			continue
		}
		if _, rep := op.(actors.Replicated); rep && !a.replica {
			if n == 1 {
				c.serveOp(a, op, ans)
				continue
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				c.serveOp(a, op, ans)
			}()
			continue
		}
		f.together = append(f.together, FramedAsk{Epoch: a.epoch, Partition: int(a.partition), Op: op, Replica: a.replica})
		f.ops, f.idx = append(f.ops, op), append(f.idx, i)
		if len(a.trace) > 0 && c.router.tracer != nil {
			f.spans = append(f.spans, make([]trace.Span, len(f.together)-len(f.spans))...)
			_, f.spans[len(f.together)-1] = c.serveSpan(a)
		}
	}
	if len(f.together) > 0 {
		f.epochs = append(f.epochs[:0], make([]uint64, len(f.together))...)
		f.errs = append(f.errs[:0], make([]error, len(f.together))...)
		c.router.ServeTogether(f.together, f.epochs, f.errs)
		for j, i := range f.idx {
			c.answerOp(f.ops[j], f.epochs[j], f.errs[j], &f.answers[i])
			if j < len(f.spans) {
				endServeSpan(f.spans[j], &f.answers[i])
			}
		}
	}
	f.wg.Wait()
	clear(f.together)
	clear(f.ops)
	clear(f.errs)
	clear(f.spans)
	f.together, f.ops, f.idx, f.spans = f.together[:0], f.ops[:0], f.idx[:0], f.spans[:0]
	out := ctx.Response.Body()[:0]
	for i := range f.answers {
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(f.answers[i].size()))
		out = f.answers[i].appendTo(out)
	}
	ctx.Response.SetBodyRaw(out)
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
