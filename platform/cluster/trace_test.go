package cluster

import (
	"bytes"
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/actors"
)

// mustTrace gives r a tracer that exports each span to a fresh in-memory
// exporter as it ends.
func mustTrace(tb testing.TB, r *Router) *tracetest.InMemoryExporter {
	tb.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	r.SetTracer(tp.Tracer("test"))
	return exp
}

// spanNamed returns the one span called name, failing otherwise.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans called %s in %+v, want 1", len(found), name, spans)
	}
	return found[0]
}

// TestAForwardedAskContinuesTheCallersTrace: a replicated consume asked
// through a within a span is a client span on a, the owner b serves it in
// a span of the same trace, b's replica ask back to a is a child of that,
// and a serves the replica write in the same trace too.
func TestAForwardedAskContinuesTheCallersTrace(t *testing.T) {
	p := mustNewPair(t)
	ea, eb := mustTrace(t, p.a), mustTrace(t, p.b)
	root := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab, 1}, SpanID: trace.SpanID{0xcd, 2},
		TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), root)
	key := p.keyOwnedBy("b")
	op := &actors.Consume{ID: key, Expires: time.Now().Add(time.Minute).UnixNano()}
	if err := p.a.AskContext(ctx, key, op); err != nil || !op.First {
		t.Fatalf("consume through a: first=%v err=%v", op.First, err)
	}
	ask := spanNamed(t, ea.GetSpans(), "cluster.ask")
	serve := spanNamed(t, eb.GetSpans(), "cluster.serve")
	repl := spanNamed(t, eb.GetSpans(), "cluster.replicate")
	var replServe tracetest.SpanStub
	for _, s := range ea.GetSpans() {
		if s.Name == "cluster.serve" {
			replServe = s
		}
	}
	for _, c := range []struct {
		name   string
		span   tracetest.SpanStub
		parent trace.SpanID
		remote bool
		kind   trace.SpanKind
	}{
		{"a's forwarded ask is a child of the caller's span", ask, root.SpanID(), true, trace.SpanKindClient},
		{"b serves it as a child of a's ask", serve, ask.SpanContext.SpanID(), true, trace.SpanKindServer},
		{"b's replica ask is a child of its serve span", repl, serve.SpanContext.SpanID(), false, trace.SpanKindClient},
		{"a serves the replica write as a child of b's replica ask", replServe, repl.SpanContext.SpanID(), true, trace.SpanKindServer},
	} {
		if c.span.SpanContext.TraceID() != root.TraceID() || c.span.Parent.SpanID() != c.parent ||
			c.span.Parent.IsRemote() != c.remote || c.span.SpanKind != c.kind {
			t.Errorf("%s: span %s in trace %s, parent %s (remote %v), kind %v", c.name, c.span.Name,
				c.span.SpanContext.TraceID(), c.span.Parent.SpanID(), c.span.Parent.IsRemote(), c.span.SpanKind)
		}
	}
}

// TestAnAskWithoutASpanIsNotTraced: a tracer alone starts nothing; an
// ask made outside any span (background work, Ask without a context)
// carries no trace context and makes no span on either node.
func TestAnAskWithoutASpanIsNotTraced(t *testing.T) {
	p := mustNewPair(t)
	ea, eb := mustTrace(t, p.a), mustTrace(t, p.b)
	key := p.keyOwnedBy("b")
	if err := p.a.AskContext(context.Background(), key, &actors.Seen{ID: key}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Ask(key, &actors.Seen{ID: key}); err != nil {
		t.Fatal(err)
	}
	if n, m := len(ea.GetSpans()), len(eb.GetSpans()); n != 0 || m != 0 {
		t.Fatalf("%d spans on a, %d on b; want none", n, m)
	}
}

// BenchmarkAskForwardedTraced is BenchmarkAskForwarded within a sampled
// span, both nodes exporting to memory: what tracing adds to a forwarded
// ask when it is on.
func BenchmarkAskForwardedTraced(b *testing.B) {
	p := mustNewPair(b)
	mustTrace(b, p.a)
	mustTrace(b, p.b)
	key := p.keyOwnedBy("b")
	op := &actors.Seen{ID: key}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true}))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.a.AskContext(ctx, key, op); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTraceContextRoundTrips(t *testing.T) {
	tid := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	sid := trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})
		b := appendTrace([]byte{0xee}, sc)
		if len(b) != 1+traceLen || b[0] != 0xee {
			t.Fatalf("encoding %x: want one prefix byte and %d bytes", b, traceLen)
		}
		got, ok := parseTrace(b[1:])
		if !ok || got.TraceID() != tid || got.SpanID() != sid || got.TraceFlags() != flags || !got.IsRemote() {
			t.Fatalf("flags %v: parsed %+v, %v", flags, got, ok)
		}
	}
}

func TestMalformedTraceContextIsServedUntraced(t *testing.T) {
	valid := appendTrace(nil, trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}))
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"an empty field", nil},
		{"one byte short", valid[:traceLen-1]},
		{"one byte long", append(bytes.Clone(valid), 0)},
		{"a zero trace id", append(make([]byte, 16), valid[16:]...)},
		{"a zero span id", append(append(bytes.Clone(valid[:16]), make([]byte, 8)...), 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if sc, ok := parseTrace(tc.b); ok {
				t.Fatalf("parsed %x as %+v", tc.b, sc)
			}
		})
	}
}

// TestAnUntracedAskIsTheOldEncoding: without a trace context the envelope
// has no field 7, so nodes of the previous version read it as before;
// with one, the field is skipped by a decoder that does not know it.
func TestAnUntracedAskIsTheOldEncoding(t *testing.T) {
	plain, err := appendAsk(nil, 7, 3, "bucket.reserve", []byte{1, 2, 3}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	traced, err := appendAsk(nil, 7, 3, "bucket.reserve", []byte{1, 2, 3}, false,
		appendTrace(nil, trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(traced, plain) || len(traced) != len(plain)+2+traceLen {
		t.Fatalf("traced ask %x is not the untraced one %x plus the trace field", traced, plain)
	}
	var a askMsg
	if !a.decode(plain) || a.trace != nil {
		t.Fatalf("untraced ask decodes with trace %x", a.trace)
	}
}
