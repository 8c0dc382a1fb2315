package api

import (
	"context"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/telemetry"
)

const checkBody = `{"action":"payment.card","subject_id":"user-42","device_id":"dev-7","route":"/pay"}`

// callTraced is fixture.call with a traceparent header (none when empty).
func (f *fixture) callTraced(ctx *fasthttp.RequestCtx, traceparent string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/rate-limit/check")
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.Header.Set("Authorization", "Bearer "+f.secret)
	if traceparent != "" {
		ctx.Request.Header.Set("traceparent", traceparent)
	}
	ctx.Request.SetBodyString(checkBody)
	f.s.Handler()(ctx)
}

// mustNewTracing returns tracing that exports to an in-memory exporter as
// each span ends.
func mustNewTracing(t testing.TB) (*telemetry.Tracing, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	return mustNewTracingTo(t, exp, true), exp
}

// mustNewTracingTo returns tracing that exports to exp (as each span ends
// when sync, else in batches, as a node does).
func mustNewTracingTo(t testing.TB, exp sdktrace.SpanExporter, sync bool) *telemetry.Tracing {
	t.Helper()
	tr, err := telemetry.New(context.Background(), telemetry.Config{Exporter: exp, Sync: sync}, "n1", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

func attr(kvs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestTracingOffCostsTheCheckNothing: with tracing off (the default) a
// check allocates what it did before tracing existed (1 allocation of 48
// B for one policy on main at 61b6550: BenchmarkRateLimitCheckOnePolicy),
// no request context is made, and there is no provider that could export.
func TestTracingOffCostsTheCheckNothing(t *testing.T) {
	off, err := telemetry.New(context.Background(), telemetry.Config{Getenv: func(string) string { return "" }}, "n1", "test")
	if err != nil || off != nil {
		t.Fatalf("tracing without an OTLP endpoint: %v, %v; want off (nil)", off, err)
	}
	f := mustNewFixtureWith(t, kernel.Config{BaseURL: "http://test", Tracing: off},
		testPolicy("bbbbbbbb-0000-4000-8000-000000000001", "*", "subject", 1<<40))
	var ctx fasthttp.RequestCtx
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	f.callTraced(&ctx, tp)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	allocs := testing.AllocsPerRun(200, func() { f.callTraced(&ctx, tp) })
	if allocs > 1 {
		t.Fatalf("a check with tracing off allocates %.1f times; before tracing it allocated once", allocs)
	}
}

// TestTracingOnGivesTheCheckOneServerSpan: the span is named by the
// operation id, is a child of the caller's traceparent, carries the
// status and the workspace, and never the secret.
func TestTracingOnGivesTheCheckOneServerSpan(t *testing.T) {
	tr, exp := mustNewTracing(t)
	f := mustNewFixtureWith(t, kernel.Config{BaseURL: "http://test", Tracing: tr},
		testPolicy("bbbbbbbb-0000-4000-8000-000000000001", "*", "subject", 1<<40))
	var ctx fasthttp.RequestCtx
	f.callTraced(&ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1: %+v", len(spans), spans)
	}
	s := spans[0]
	if s.Name != "rateLimitCheck" || s.SpanKind != trace.SpanKindServer {
		t.Fatalf("span %q kind %v, want the operation id as a server span", s.Name, s.SpanKind)
	}
	if got := s.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("trace id %s: the caller's traceparent was not honoured", got)
	}
	if got := s.Parent.SpanID().String(); got != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Fatalf("parent %s (remote %v), want the traceparent's span", got, s.Parent.IsRemote())
	}
	if v, ok := attr(s.Attributes, "http.response.status_code"); !ok || v.AsInt64() != 200 {
		t.Fatalf("status attribute %v %v", v, ok)
	}
	if v, ok := attr(s.Attributes, telemetry.AttrWorkspace); !ok || v.AsString() != f.ws.ID {
		t.Fatalf("workspace attribute %v %v, want %s", v, ok, f.ws.ID)
	}
	for _, kv := range s.Attributes {
		if strings.Contains(kv.Value.Emit(), f.secret) {
			t.Fatalf("attribute %s holds the secret", kv.Key)
		}
	}

	// A malformed traceparent starts a new trace rather than failing.
	exp.Reset()
	f.callTraced(&ctx, "00-zz-00f067aa0ba902b7-01")
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("malformed traceparent: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Parent.IsValid() {
		t.Fatalf("malformed traceparent: spans %+v, want one root span", spans)
	}
}

// BenchmarkRateLimitCheckTracingOff and …On measure what tracing costs
// the check: off it is BenchmarkRateLimitCheckOnePolicy; on, every check
// is one sampled span, batched as on a node and handed to an in-memory
// exporter that drops it (no network).
func BenchmarkRateLimitCheckTracingOff(b *testing.B) {
	benchCheckWith(b, 1, kernel.Config{BaseURL: "http://test"})
}

func BenchmarkRateLimitCheckTracingOn(b *testing.B) {
	benchCheckWith(b, 1, kernel.Config{BaseURL: "http://test", Tracing: mustNewTracingTo(b, tracetest.NewNoopExporter(), false)})
}
