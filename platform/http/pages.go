package http

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/valyala/fasthttp"
)

// Pages are an area's browser pages (the workspace console), served
// under Prefix outside the route table: they are not API operations, so
// they are not in /openapi.json or the Postman collection. The transport
// gives them only the node's per-IP ingress limit and a panic guard; what
// they show and decide is the area's.
type Pages struct {
	// Prefix is where the pages live, ending in "/" ("/console/"); the
	// path without its trailing slash is theirs too. A Prefix without a
	// trailing slash is one exact path ("/favicon.ico").
	Prefix string
	// Serve answers one request.
	Serve fasthttp.RequestHandler
}

// owns reports whether path is under p.
func (p *Pages) owns(path string) bool {
	if !strings.HasSuffix(p.Prefix, "/") {
		return path == p.Prefix
	}
	return strings.HasPrefix(path, p.Prefix) || path == strings.TrimSuffix(p.Prefix, "/")
}

// pagesOf is the area pages that owns path, or nil.
func (s *Server) pagesOf(path string) *Pages {
	for _, p := range s.pages {
		if p.owns(path) {
			return p
		}
	}
	return nil
}

// servePages answers a request of an area's pages, after the node's
// per-IP ingress limit.
func (s *Server) servePages(p *Pages, ctx *fasthttp.RequestCtx) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Add(1)
			s.log.Error("page handler panicked", "path", string(ctx.Path()), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			ctx.Response.Reset()
			ctx.SetStatusCode(500)
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("internal error")
		}
	}()
	if s.cfg.IngressIPRate > 0 {
		// The same key as allowIP: one budget per address for API and pages.
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
	p.Serve(ctx)
}
