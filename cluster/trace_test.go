package cluster

import (
	"bytes"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

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
// has no field 6, so nodes of the previous version read it as before;
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
