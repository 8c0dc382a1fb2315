package http

import (
	"crypto/subtle"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/catalog"
)

// An area's pages (the console) own no admin logic: every read and write
// they make is an admin operation of this route table, run in-process by
// RunAdmin for a caller the pages authenticated with CheckAdminToken or
// their own accounts.

// CheckAdminToken is the one admin token check of the admin API and of
// an area's pages (the console login).
func (s *Server) CheckAdminToken(tok string) bool {
	return s.checkAdminToken(s.store.Catalog(), tok)
}

func (s *Server) checkAdminToken(cat *catalog.Catalog, tok string) bool {
	if tok == "" {
		return false
	}
	if cat.CheckAdminToken(tok) {
		return true
	}
	return s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) == 1
}

// RunAdmin runs the admin operation method path (under /admin/v1)
// in-process: the same route, handler, validation and Raft command as
// over HTTP, with the caller already authenticated by the pages (actor
// names it in the logs and the audit). It is logged, counted and audited
// like any admin request, and answers the status and JSON body the admin
// API would.
func (s *Server) RunAdmin(actor, method, path string, body []byte) (int, []byte) {
	var params [4]string
	route, _, _ := strings.Cut(path, "?")
	r, _ := s.table.match(method, AdminBase+route, &params)
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
	// c.console: set only here, reset on release; never from a request.
	c.params, c.start, c.console = params, start, true
	c.commonHeaders()
	if limit := r.bodyLimit(s.cfg.MaxBodyBytes); len(body) > limit {
		c.fail(ErrBodyTooLarge, "request body too large")
	} else {
		s.handle(r, c)
	}
	st := ctx.Response.StatusCode()
	s.metrics.observe(r, st, start, s.clock())
	s.log.Info("admin request", "request_id", c.RequestID(), "op", r.ID, "status", st, "via", "console", "actor", actor)
	s.auditCall(c, r, st, actor, "console")
	return st, append([]byte(nil), ctx.Response.Body()...)
}
