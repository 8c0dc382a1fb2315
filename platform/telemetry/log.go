package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that a record logged with a context that carries
// a valid span (slog's *Context methods) gets trace_id and span_id
// attributes, the same ids the exported spans carry: an operator goes
// from a log line to its trace and back. A record without one is passed
// on untouched.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ next slog.Handler }

func (l logHandler) Enabled(ctx context.Context, lv slog.Level) bool { return l.next.Enabled(ctx, lv) }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.next.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler { return logHandler{l.next.WithAttrs(as)} }

func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.next.WithGroup(name)} }
