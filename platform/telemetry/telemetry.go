// Package telemetry owns the node's optional OpenTelemetry tracing: it
// reads the standard OTEL_* environment, builds the SDK's tracer provider
// with an OTLP/HTTP exporter, and wraps a log handler so that a request's
// log lines carry its trace and span ids. It never starts spans itself and
// costs nothing when tracing is off: New then returns nil and every user
// checks for nil once.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.21.0"
	"go.opentelemetry.io/otel/trace"
)

// ErrUnsupported is an OTEL_* setting this node cannot honour (an exporter
// or protocol other than OTLP over HTTP with protobuf). Start refuses it
// rather than run without the traces the operator asked for.
var ErrUnsupported = errors.New("telemetry: unsupported OpenTelemetry setting")

// Config says where tracing settings come from.
type Config struct {
	// Getenv reads the environment (os.Getenv); nil: tracing is off.
	// The exporter and the SDK read the OTEL_* variables themselves as
	// well (endpoint, headers, timeout, sampler, resource attributes), so
	// Getenv must be the process environment's, except in tests that
	// also set Exporter.
	Getenv func(string) string
	// Exporter replaces the OTLP exporter (tests and benchmarks: an
	// in-memory exporter). With it, tracing is on whatever Getenv says.
	Exporter sdktrace.SpanExporter
	// Sync exports every span as it ends instead of in batches (tests).
	Sync bool
}

// Tracing is a running tracer provider. A nil *Tracing is tracing off;
// its methods are then no-ops.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// Enabled reports whether getenv asks for traces: an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// OTEL_TRACES_EXPORTER is not "none" and OTEL_SDK_DISABLED is not "true".
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New starts tracing for the node nodeID of version when cfg asks for it,
// and returns nil, nil when it does not. The resource is service.name
// "trustd", service.version and service.instance.id (the node id), which
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override; the sampler is
// the SDK's (parent-based always-on, or OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG).
func New(ctx context.Context, cfg Config, nodeID, version string) (*Tracing, error) {
	exp := cfg.Exporter
	if exp == nil {
		if !Enabled(cfg.Getenv) {
			return nil, nil
		}
		if err := supported(cfg.Getenv); err != nil {
			return nil, err
		}
		var err error
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("telemetry: OTLP/HTTP exporter: %w", err)
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			semconv.ServiceName("trustd"),
			semconv.ServiceVersion(version),
			semconv.ServiceInstanceID(nodeID),
		),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last: the operator's values win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	var proc sdktrace.SpanProcessor
	if cfg.Sync {
		proc = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		proc = sdktrace.NewBatchSpanProcessor(exp)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(proc))
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/trustd/trustd")}, nil
}

// supported refuses the exporters and protocols this build does not carry.
func supported(getenv func(string) string) error {
	switch v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp":
	default:
		return fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q (trustd exports traces with otlp, or none)", ErrUnsupported, v)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch v := strings.TrimSpace(getenv(name)); v {
		case "":
			continue
		case "http/protobuf":
		default:
			return fmt.Errorf("%w: %s=%q (trustd speaks OTLP over http/protobuf)", ErrUnsupported, name, v)
		}
		break
	}
	return nil
}

// Tracer is the node's tracer, or nil when t is nil (tracing off).
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Shutdown exports the spans still buffered and stops the exporter,
// within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// ForceFlush exports the spans buffered so far (tests).
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Extract returns ctx with the remote span context of a W3C traceparent
// (and tracestate) read through get, when one is present and valid.
func (t *Tracing) Extract(ctx context.Context, get func(name string) string) context.Context {
	return t.prop.Extract(ctx, getter(get))
}

// getter adapts a header lookup to propagation.TextMapCarrier (read only).
type getter func(string) string

func (g getter) Get(key string) string { return g(key) }
func (getter) Set(string, string)      {}
func (getter) Keys() []string          { return nil }

// ShutdownTimeout bounds flushing spans when the node stops.
const ShutdownTimeout = 5 * time.Second

// Attribute keys trustd sets on its spans besides the semantic
// conventions'.
const (
	AttrWorkspace = attribute.Key("trustd.workspace_id")
	AttrOperation = attribute.Key("trustd.operation")
	AttrPeer      = attribute.Key("trustd.peer_node")
	AttrPartition = attribute.Key("trustd.partition")
	AttrOpKind    = attribute.Key("trustd.op_kind")
	AttrReplica   = attribute.Key("trustd.replica")
)
