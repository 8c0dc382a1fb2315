package cluster

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// Tracing of forwarded asks. Off (no tracer), the router pays one nil
// check per forwarded ask and the owner one per served ask: no span, no
// context, no bytes on the wire. On, an ask forwarded within a request's
// span is a client span of it on the entry node, its W3C trace context
// travels in the ask's optional trace field (clusterpb.Ask field 7,
// traceLen bytes: trace id, span id, flags), and the owner serves it
// inside a server span that continues the same trace; a replica ask the
// owner makes on its behalf is a client span of that one. A node that
// predates the field skips it (an unknown protobuf field), and a node
// that reads an ask without it serves it untraced.

// traceLen is the size of an encoded trace context: trace id (16 bytes),
// span id (8), trace flags (1).
const traceLen = 16 + 8 + 1

// SetTracer turns tracing of forwarded asks on (nil: off). It must be
// called before the router serves asks: the tracer is read without
// synchronisation on the hot path.
func (r *Router) SetTracer(t trace.Tracer) { r.tracer = t }

// TraceForwarder is a Forwarder that can carry a trace context to the
// owner (the peer Transport). trace is traceLen bytes (appendTrace).
type TraceForwarder interface {
	ForwardTrace(trace []byte, m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error
}

// forwardTraced forwards op as r.fwd.Forward does; when ctx carries a
// span and the forwarder can carry its context, inside a client span.
func (r *Router) forwardTraced(ctx context.Context, m Member, epoch uint64, p int, op actors.WireOp, replica bool, timeout time.Duration) error {
	tf, ok := r.fwd.(TraceForwarder)
	if !ok || !trace.SpanContextFromContext(ctx).IsValid() {
		return r.fwd.Forward(m, epoch, p, op, replica, timeout)
	}
	name := "cluster.ask"
	if replica {
		name = "cluster.replicate"
	}
	_, span := r.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("trustd.peer_node", m.ID),
		attribute.Int("trustd.partition", p),
		attribute.String("trustd.op_kind", op.OpKind()),
		attribute.Bool("trustd.replica", replica),
	))
	var buf [traceLen]byte
	err := tf.ForwardTrace(appendTrace(buf[:0], span.SpanContext()), m, epoch, p, op, replica, timeout)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// appendTrace appends the traceLen-byte encoding of sc to b.
func appendTrace(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(sc.TraceFlags()))
}

// parseTrace reads an encoded trace context as a remote parent; false
// when b is not one (wrong length, zero ids): the ask is served untraced.
func parseTrace(b []byte) (trace.SpanContext, bool) {
	if len(b) != traceLen {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], b[:16])
	copy(sid[:], b[16:24])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(b[24]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// serveSpan starts the owner's span for a forwarded ask that carries a
// trace context, and returns its context; nil span when tracing is off or
// the ask carries none.
func (c *Cluster) serveSpan(a *askMsg) (context.Context, trace.Span) {
	tr := c.router.tracer
	if tr == nil || len(a.trace) == 0 {
		return context.Background(), nil
	}
	sc, ok := parseTrace(a.trace)
	if !ok {
		return context.Background(), nil
	}
	return tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), sc), "cluster.serve",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("trustd.node", c.cfg.NodeID),
			attribute.Int("trustd.partition", int(a.partition)),
			attribute.String("trustd.op_kind", string(a.kind)),
			attribute.Bool("trustd.replica", a.replica),
		))
}

// endServeSpan ends span (when not nil) with the outcome in ans.
func endServeSpan(span trace.Span, ans *answer) {
	if span == nil {
		return
	}
	if ans.status != clusterpb.Status_STATUS_OK {
		span.SetStatus(codes.Error, ans.status.String())
	}
	span.End()
}
