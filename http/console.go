package http

import (
	"crypto/subtle"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/http/console"
)

// The workspace console (http/console) is served under /console/, outside
// the route table: its pages are not API operations, so they are not in
// /openapi.json or the Postman collection. Its handlers own no logic: every
// read and write is an admin operation of this route table, run in-process
// by consoleBackend.Admin, and its login uses the admin API's token check.

func (s *Server) newConsole() *console.Console {
	return console.New(console.Config{NodeID: s.cfg.NodeID, Version: ContractVersion + "+" + Build,
		SecureCookies: strings.HasPrefix(s.cfg.BaseURL, "https://"), Clock: s.clock}, consoleBackend{s})
}

// isConsolePath reports whether path is the console's.
func isConsolePath(path string) bool {
	return path == "/console" || strings.HasPrefix(path, console.Prefix)
}

// serveConsole answers a console request, after the node's per-IP
// ingress limit.
func (s *Server) serveConsole(ctx *fasthttp.RequestCtx) {
	defer func() {
		if p := recover(); p != nil {
			s.panics.Add(1)
			s.log.Error("console handler panicked", "path", string(ctx.Path()), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			ctx.Response.Reset()
			ctx.SetStatusCode(500)
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("internal error")
		}
	}()
	if s.cfg.IngressIPRate > 0 {
		// The same key as allowIP: one budget per address for API and console.
		var buf [24]byte
		key := append(append(buf[:0], "ip/"...), ctx.RemoteIP().To16()...)
		if res := s.ingress.takeBytes(key, s.cfg.IngressIPRate, s.cfg.IngressIPBurst); !res.ok {
			setRetryAfter(&ctx.Response.Header, res.retryAfter)
			ctx.SetStatusCode(429)
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("too many requests from this address")
			return
		}
	}
	s.console.Serve(ctx)
}

// checkAdminToken is the admin token check of the admin API and the
// console login.
func (s *Server) checkAdminToken(cat *catalog.Catalog, tok string) bool {
	if tok == "" {
		return false
	}
	if cat.CheckAdminToken(tok) {
		return true
	}
	return s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) == 1
}

type consoleBackend struct{ s *Server }

func (b consoleBackend) CheckAdminToken(tok string) bool {
	return b.s.checkAdminToken(b.s.store.Catalog(), tok)
}

// Admin runs the admin operation method path (under /admin/v1) in-process:
// the same route, handler, validation and Raft command as over HTTP, with
// the caller already authenticated by its console session. It is logged and
// counted like any admin request.
func (b consoleBackend) Admin(method, path string, body []byte) (int, []byte) {
	s := b.s
	var params [4]string
	r, _ := s.table.match(method, AdminBase+path, &params)
	if r == nil || !r.Admin {
		return 404, []byte(`{"success":false,"error":"not-found","message":"no admin operation ` + method + ` ` + path + `"}`)
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(AdminBase + path)
	if body != nil {
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBody(body)
	}
	start := s.clock()
	c := s.acquire(&ctx, r)
	defer s.release(c)
	c.params, c.start, c.console = params, start, true
	c.commonHeaders()
	if limit := r.bodyLimit(s.cfg.MaxBodyBytes); len(body) > limit {
		c.fail(ErrBodyTooLarge, "request body too large")
	} else {
		s.handle(r, c)
	}
	st := ctx.Response.StatusCode()
	s.metrics.observe(r, st, start, s.clock())
	s.log.Info("admin request", "request_id", c.reqID, "op", r.ID, "status", st, "via", "console")
	return st, append([]byte(nil), ctx.Response.Body()...)
}
