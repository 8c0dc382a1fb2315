package http

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
)

// Call is one request in flight: the fasthttp context plus what the
// middleware learned about it. Calls are pooled; a handler must not keep
// one after it returns.
type Call struct {
	Ctx    *fasthttp.RequestCtx
	s      *Server
	route  *Route
	params [4]string
	// id is the request id's bytes (the caller's or one made here), in a
	// buffer the pooled Call keeps; reqID is its string, made only when
	// asked for (an error body, a log line).
	id     []byte
	reqID  string
	legacy bool
	start  time.Time
	cat    *catalog.Catalog
	// console marks an admin operation the console runs in-process for a
	// logged-in session; never set from a request.
	console bool
	// outcome is the decision the answer carries (outcomes.go); 0: none.
	outcome uint8
	// tctx holds the request's server span when tracing is on (trace.go);
	// nil when off. wsID is the workspace an authenticator admitted, for
	// the span.
	tctx context.Context
	wsID string
}

func (s *Server) acquire(ctx *fasthttp.RequestCtx, r *Route) *Call {
	c := s.calls.Get().(*Call)
	c.Ctx, c.route, c.legacy = ctx, r, false
	c.id = s.requestID(ctx, c.id[:0])
	c.cat = s.store.Catalog()
	return c
}

func (s *Server) release(c *Call) {
	c.Ctx, c.route, c.cat, c.console, c.outcome, c.reqID = nil, nil, nil, false, 0, ""
	c.tctx, c.wsID = nil, ""
	c.params = [4]string{}
	s.calls.Put(c)
}

// requestID appends to dst the caller's well-formed X-Request-Id, else a
// new one.
func (s *Server) requestID(ctx *fasthttp.RequestCtx, dst []byte) []byte {
	if v := ctx.Request.Header.PeekCanonical(hdrRequestID); len(v) > 0 && len(v) <= 128 && printable(v) {
		return append(dst, v...)
	}
	return s.appendRequestID(dst)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// Param returns the path parameter called name.
func (c *Call) Param(name string) string {
	for i, n := range paramNames(c.route.Path) {
		if n == name {
			return c.params[i]
		}
	}
	return ""
}

// Catalog is the catalog snapshot this call reads from: one consistent
// version for the whole request.
func (c *Call) Catalog() *catalog.Catalog { return c.cat }

// RequestID is the request's correlation id.
func (c *Call) RequestID() string {
	if c.reqID == "" {
		c.reqID = string(c.id)
	}
	return c.reqID
}

// Now is the server clock.
func (c *Call) Now() time.Time { return c.s.clock() }

// ask runs op on the owner of key.
func (c *Call) ask(key string, op actors.Op) error { return c.s.router.Ask(key, op) }

// ClientIP is the address of the peer.
func (c *Call) ClientIP() string { return c.Ctx.RemoteIP().String() }

// bearer returns the token of an Authorization: Bearer header, or "".
func (c *Call) bearer() string {
	return strings.Clone(c.bearerView())
}

// bearerView is bearer without a copy: a view of the request's header,
// which the caller must not keep past the request.
func (c *Call) bearerView() string {
	h := c.Ctx.Request.Header.PeekCanonical(hdrAuthorization)
	if len(h) > 7 && bytes.EqualFold(h[:7], bearerPrefix) {
		return bstr(bytes.TrimSpace(h[7:]))
	}
	return ""
}

// Header names in fasthttp's canonical form (the form it stores request
// headers in), so that a lookup needs no normalising copy.
var (
	hdrAuthorization = []byte("Authorization")
	hdrRequestID     = []byte("X-Request-Id")
	bearerPrefix     = []byte("bearer ")
)

// commonHeaders sets the headers every JSON answer carries (spec 2.1).
func (c *Call) commonHeaders() {
	h := &c.Ctx.Response.Header
	h.SetCanonical(hdrRequestID, c.id)
	// The fixed headers are pre-built once per server: this runs on every
	// request of the hot paths.
	for _, kv := range c.s.fixedHeaders {
		h.SetCanonical(kv[0], kv[1])
	}
}

// buildFixedHeaders renders the headers every answer carries whose values
// never change while the server runs.
func buildFixedHeaders(baseURL string) [][2][]byte {
	var out [][2][]byte
	for _, kv := range [][2]string{
		{"X-Service-Api-Base", baseURL + PublicBase},
		{"X-Service-Api-Version", APIVersion},
		{"X-Service-Contract-Version", ContractVersion},
		{"X-Service-Build", Build},
		{"Cache-Control", "no-store"},
	} {
		out = append(out, [2][]byte{[]byte(kv[0]), []byte(kv[1])})
	}
	return out
}

// json writes v as the JSON answer with status.
func (c *Call) json(status int, v any) {
	c.Ctx.SetStatusCode(status)
	c.Ctx.SetContentType("application/json")
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.ErrorContext(c.Context(), "encode response", "request_id", c.RequestID(), "err", err)
		c.Ctx.SetStatusCode(500)
		b = []byte(`{"success":false,"error":"internal-error"}`)
	}
	c.Ctx.SetBody(b)
}

// ok writes v with the route's success status.
func (c *Call) ok(v any) {
	st := c.route.Status
	if st == 0 {
		st = 200
	}
	if d, ok := decisionOf(v); ok && c.outcome == 0 {
		c.decided(d)
	}
	c.json(st, v)
}

// noContent answers 204.
func (c *Call) noContent() { c.Ctx.SetStatusCode(204) }

// rawJSON writes pre-encoded JSON.
func (c *Call) rawJSON(status int, b []byte) {
	c.Ctx.SetStatusCode(status)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBody(b)
}

// serve is the fasthttp handler: routing, middleware and dispatch.
func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	start := s.clock()
	if ambiguousFraming(&ctx.Request.Header) {
		ctx.SetConnectionClose()
		s.transportError(ctx, errAmbiguousFraming)
		return
	}
	// A view of the request's path: it does not outlive the routing below
	// (the parameters matched in it are copied).
	path := bstr(ctx.Path())
	if p := s.pagesOf(path); p != nil {
		s.servePages(p, ctx)
		return
	}
	method := string(ctx.Method())
	legacy := false
	if !strings.HasPrefix(path, PublicBase+"/") && path != PublicBase && !strings.HasPrefix(path, AdminBase+"/") && path != AdminBase {
		// The legacy base serves the public operations at the root.
		legacy = true
		if path == "/" {
			path = PublicBase + "/"
		} else {
			path = PublicBase + path
		}
	}
	if path == PublicBase {
		path = PublicBase + "/"
	}
	var params [4]string
	r, allow := s.table.match(method, path, &params)
	for i := range params {
		params[i] = strings.Clone(params[i]) // handlers may keep them
	}
	if r != nil && r.Admin && legacy {
		r, allow = nil, nil
	}
	c := s.acquire(ctx, r)
	defer s.release(c)
	c.params, c.legacy, c.start = params, legacy, start
	c.commonHeaders()
	if legacy {
		h := &ctx.Response.Header
		h.Set("Deprecation", "true")
		h.Set("Link", "<"+s.cfg.BaseURL+path+">; rel=\"successor-version\"")
	}
	switch {
	case r == nil && len(allow) > 0:
		ctx.Response.Header.Set("Allow", strings.Join(allow, ", "))
		c.fail(ErrMethod, "method "+method+" is not allowed on "+path)
		s.metrics.unroutedReq(405)
		return
	case r == nil:
		c.fail(ErrNotFound, "no operation at "+method+" "+path)
		s.metrics.unroutedReq(404)
		return
	}
	c.route = r
	if s.tracer != nil {
		s.serveTraced(r, c, start)
		return
	}
	s.serveRoute(r, c, start)
}

// serveRoute runs a routed request: its body limit, the ingress limit
// per IP, the handler, metrics and the request's log line.
func (s *Server) serveRoute(r *Route, c *Call, start time.Time) {
	ctx := c.Ctx
	if limit := r.bodyLimit(s.cfg.MaxBodyBytes); len(ctx.Request.Body()) > limit {
		c.fail(ErrBodyTooLarge, "request body exceeds "+strconv.Itoa(limit)+" bytes")
		s.metrics.observe(r, ctx.Response.StatusCode(), start, s.clock())
		return
	}
	if !s.ingress.allowIP(c) {
		s.metrics.observe(r, ctx.Response.StatusCode(), start, s.clock())
		return
	}
	s.handle(r, c)
	status := ctx.Response.StatusCode()
	s.metrics.observe(r, status, start, s.clock())
	if c.outcome != 0 {
		s.metrics.outcomes[r.idx][c.outcome].Add(1)
	}
	if status >= 500 {
		s.log.WarnContext(c.Context(), "request failed", "request_id", c.RequestID(), "op", r.ID, "status", status)
	} else if r.Admin {
		s.log.InfoContext(c.Context(), "admin request", "request_id", c.RequestID(), "op", r.ID, "status", status,
			"ms", strconv.FormatFloat(float64(s.clock().Sub(start).Microseconds())/1000, 'f', 3, 64))
		s.auditCall(c, r, status, "admin-token", "api")
	}
}

// handle runs the route's handler. A panic is a bug: it is answered 500
// internal-error with the request id, logged with its stack and counted,
// and never takes the process down.
func (s *Server) handle(r *Route, c *Call) {
	defer func() {
		if p := recover(); p != nil {
			s.panics.Add(1)
			s.log.ErrorContext(c.Context(), "handler panicked", "request_id", c.RequestID(), "op", r.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c.Ctx.Response.Reset()
			c.commonHeaders()
			c.fail(ErrInternal, "internal error")
		}
	}()
	r.Handle(c)
}
