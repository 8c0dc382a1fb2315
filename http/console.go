package http

import (
	"context"
	"crypto/subtle"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/http/console/users"
	"github.com/trustd/trustd/ratelimit"
	"github.com/trustd/trustd/verify"

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
		SecureCookies: strings.HasPrefix(s.cfg.BaseURL, "https://"), Clock: s.clock, RequireHuman: !s.cfg.Dev}, consoleBackend{s})
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
func (b consoleBackend) admin(actor, method, path string, body []byte) (int, []byte) {
	s := b.s
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
	c.params, c.start, c.console = params, start, true
	c.commonHeaders()
	if limit := r.bodyLimit(s.cfg.MaxBodyBytes); len(body) > limit {
		c.fail(ErrBodyTooLarge, "request body too large")
	} else {
		s.handle(r, c)
	}
	st := ctx.Response.StatusCode()
	s.metrics.observe(r, st, start, s.clock())
	s.log.InfoContext(c.Context(), "admin request", "request_id", c.RequestID(), "op", r.ID, "status", st, "via", "console", "actor", actor)
	s.auditCall(c, r, st, actor, "console")
	return st, append([]byte(nil), ctx.Response.Body()...)
}

func (b consoleBackend) Admin(actor, method, path string, body []byte) (int, []byte) {
	return b.admin(actor, method, path, body)
}

// UserLogin checks a console user's password with argon2id (at most two
// hashes at once per node). An unknown email costs one hash too, so the
// answer time does not say whether the address exists.
func (b consoleBackend) UserLogin(email, password string) (console.Principal, bool) {
	u := b.s.store.Catalog().ConsoleUserByEmail(email)
	if u == nil || u.PasswordHash == "" {
		return console.Principal{}, users.VerifyMissing(password)
	}
	if !users.Verify(u.PasswordHash, password) {
		return console.Principal{}, false
	}
	return principal(u), true
}

// LinkLogin consumes a one-time sign-in link through Raft: of concurrent
// uses of one link on any nodes, exactly one logs in.
func (b consoleBackend) LinkLogin(token string) (console.Principal, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := b.s.store.Apply(ctx, &catalog.UseConsoleLink{LinkHash: catalog.HashSecret(token), At: b.s.clock().UTC()})
	if err != nil {
		return console.Principal{}, false
	}
	return principal(v.(*catalog.ConsoleUser)), true
}

func (b consoleBackend) User(id string) (console.Principal, bool) {
	u := b.s.store.Catalog().ConsoleUsers[id]
	if u == nil {
		return console.Principal{}, false
	}
	return principal(u), true
}

func principal(u *catalog.ConsoleUser) console.Principal {
	return console.Principal{UserID: u.ID, Email: u.Email, WorkspaceID: u.WorkspaceID, Role: u.Role}
}

// TakeLogin takes cost tokens (0: reads) from the console sign-in
// guard's bucket key on its owner node: the same bucket op
// (actors.Reserve) the rate-limit check uses, so a login budget is shared
// by every node of the cluster. The policy is the guard's
// (console/login).
func (b consoleBackend) TakeLogin(key string, cfg ratelimit.BucketConfig, cost int64) (bool, int64, time.Duration, error) {
	op := &actors.Reserve{Key: "console-login/" + key, Bucket: cfg, Cost: cost}
	if err := b.s.router.Ask(op.Key, op); err != nil {
		return false, 0, 0, err
	}
	if op.OK {
		return true, op.Remaining, 0, nil
	}
	return false, op.Remaining, time.Duration(op.RetryAfterNs), nil
}

// Audit records a console login: consoleLogin (password or admin token,
// POST /console/login) or consoleLinkLogin (POST /console/link).
func (b consoleBackend) Audit(actor, operation, workspaceID string) {
	path := "/console/login"
	if operation == "consoleLinkLogin" {
		path = "/console/link"
	}
	b.s.audit(catalog.AuditEntry{At: b.s.clock().UTC(), Actor: actor, Via: "console", Operation: operation,
		Method: "POST", Path: path, WorkspaceID: workspaceID, Status: 303})
}

// consoleSite is the site whose widget guards the console login: the
// one ConsoleSiteID names or, on a dev node without one, the dev site
// (seeded for localhost), so a dev account past its failures can still
// be challenged. nil when there is none, or it is a sandbox site.
func (b consoleBackend) consoleSite(cat *catalog.Catalog) *catalog.Site {
	var site *catalog.Site
	if id := b.s.cfg.ConsoleSiteID; id != "" {
		site = cat.Sites[id]
	} else if b.s.cfg.Dev {
		if key, _ := b.s.demoSite(); key != "" {
			site = cat.SiteByKey(key)
		}
	}
	if site == nil || site.Sandbox() {
		return nil
	}
	return site
}

// HumanSite is the site key of the console's login widget, read from the
// catalog at each login page.
func (b consoleBackend) HumanSite() (string, bool) {
	site := b.consoleSite(b.s.store.Catalog())
	if site == nil {
		return "", false
	}
	return site.SiteKey, true
}

// VerifyHuman redeems a login form's widget token with the verify
// module's siteverify for the console site: once, for the action
// console-login, bound to the client address. err when the token's owner
// cannot answer.
func (b consoleBackend) VerifyHuman(response, remoteIP string) (bool, error) {
	cat := b.s.store.Catalog()
	site := b.consoleSite(cat)
	if site == nil || response == "" || len(response) > 4096 {
		return false, nil
	}
	var scratch [1024]byte
	v, err := b.s.mods.verify.Siteverify(cat, site, &verify.Request{Response: []byte(response), RemoteIP: []byte(remoteIP),
		Action: []byte(console.LoginAction)}, scratch[:])
	if err != nil {
		return false, err
	}
	return v.Success(), nil
}
