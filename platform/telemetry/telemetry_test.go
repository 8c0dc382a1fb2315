package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestTracesAreOnOnlyWhenTheEnvironmentAsks(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
	}{
		{"nothing set is off", nil, false},
		{"an OTLP endpoint turns traces on", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}, true},
		{"a traces endpoint turns them on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep + "/v1/traces"}, true},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "none"}, false},
		{"a disabled SDK wins over an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "TRUE"}, false},
		{"a sampler alone is off", map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Enabled(env(tc.env)); got != tc.on {
				t.Fatalf("Enabled = %v, want %v", got, tc.on)
			}
			tr, err := New(context.Background(), Config{Getenv: env(tc.env)}, "n1", "test")
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			if (tr != nil) != tc.on || (tr.Tracer() != nil) != tc.on {
				t.Fatalf("New = %v, want on=%v", tr, tc.on)
			}
		})
	}
	if Enabled(nil) {
		t.Fatal("no environment at all is on")
	}
}

func TestUnsupportedExportersAndProtocolsAreRefused(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"the console exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "console"}},
		{"OTLP over gRPC", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{"traces over http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(context.Background(), Config{Getenv: env(tc.env)}, "n1", "test")
			if !errors.Is(err, ErrUnsupported) || tr != nil {
				t.Fatalf("New = %v, %v; want ErrUnsupported", tr, err)
			}
		})
	}
	// The traces protocol wins over the general one.
	tr, err := New(context.Background(), Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"})}, "n1", "test")
	if err != nil || tr == nil {
		t.Fatalf("http/protobuf for traces: %v, %v", tr, err)
	}
	_ = tr.Shutdown(context.Background())
}

// TestTheResourceNamesTheNodeAndHonoursTheEnvironment: service.name is
// trustd and service.instance.id the node id unless OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
func TestTheResourceNamesTheNodeAndHonoursTheEnvironment(t *testing.T) {
	resourceOf := func(t *testing.T) map[string]string {
		exp := tracetest.NewInMemoryExporter()
		tr, err := New(context.Background(), Config{Exporter: exp, Sync: true}, "node-7", "v1+abc")
		if err != nil {
			t.Fatal(err)
		}
		_, span := tr.Tracer().Start(context.Background(), "x")
		span.End()
		spans := exp.GetSpans() // before Shutdown, which empties the exporter
		_ = tr.Shutdown(context.Background())
		if len(spans) != 1 {
			t.Fatalf("%d spans", len(spans))
		}
		out := map[string]string{}
		for _, kv := range spans[0].Resource.Attributes() {
			out[string(kv.Key)] = kv.Value.Emit()
		}
		return out
	}
	got := resourceOf(t)
	if got["service.name"] != "trustd" || got["service.instance.id"] != "node-7" || got["service.version"] != "v1+abc" {
		t.Fatalf("default resource %v", got)
	}
	t.Setenv("OTEL_SERVICE_NAME", "edge-trustd")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,service.instance.id=eu-1")
	got = resourceOf(t)
	if got["service.name"] != "edge-trustd" || got["deployment.environment"] != "staging" || got["service.instance.id"] != "eu-1" {
		t.Fatalf("resource from the environment %v", got)
	}
}

func TestLogLinesWithASpanCarryItsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "api")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9}, SpanID: trace.SpanID{0x00, 0xf0, 0x67},
		TraceFlags: trace.FlagsSampled})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "in a span")
	log.InfoContext(context.Background(), "outside")
	dec := json.NewDecoder(&buf)
	var in, out map[string]any
	if err := dec.Decode(&in); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if in["trace_id"] != sc.TraceID().String() || in["span_id"] != sc.SpanID().String() || in["component"] != "api" {
		t.Fatalf("line in a span: %v", in)
	}
	if _, ok := out["trace_id"]; ok {
		t.Fatalf("line outside a span names a trace: %v", out)
	}
}
