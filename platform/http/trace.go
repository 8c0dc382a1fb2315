package http

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/telemetry"
)

// Tracing of requests (telemetry). Off, serve pays one nil check and a
// Call carries no context. On, every routed request is one server span
// named by its operation id, a child of the caller's W3C traceparent when
// the request has a valid one; it records the method, the route template
// (never the path with its ids), the status code and, once an
// authenticator admitted the caller, the workspace id. Never a secret,
// token, body or query. Unrouted requests (404, 405) get no span.

// serveTraced is serveRoute inside the request's server span.
func (s *Server) serveTraced(r *Route, c *Call, start time.Time) {
	ctx := s.cfg.Tracing.Extract(context.Background(), func(name string) string {
		return string(c.Ctx.Request.Header.Peek(name))
	})
	ctx, span := s.tracer.Start(ctx, r.ID, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", r.Path),
			telemetry.AttrOperation.String(r.ID),
		))
	c.tctx = ctx
	s.serveRoute(r, c, start)
	status := c.Ctx.Response.StatusCode()
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	ws := c.wsID
	if ws == "" && r.Admin {
		ws = c.Param("workspace_id")
	}
	if ws != "" {
		span.SetAttributes(telemetry.AttrWorkspace.String(ws))
	}
	if status >= 500 {
		span.SetStatus(codes.Error, "status "+strconv.Itoa(status))
	}
	span.End()
}

// Context is the request's context: it carries the request's span when
// tracing is on, for the module calls and log lines of the request
// (slog's *Context methods). It is never cancelled.
func (c *Call) Context() context.Context {
	if c.tctx != nil {
		return c.tctx
	}
	return context.Background()
}
