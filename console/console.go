// Package console is the workspace console: server-rendered HTML pages
// served by every node under /console/ for the people who run trustd.
//
// The console holds no product logic. Every read and write is an admin API
// operation performed in-process through Backend.Admin — the same route
// table, validation, Raft commands and error codes as a curl call to
// /admin/v1 — and the login checks the admin token with the admin API's own
// check. What the console adds is the browser's security model: sessions,
// CSRF tokens, the sign-in guard (console/login) and strict response headers.
// See DESIGN.md.
package console

import (
	"embed"
	"html/template"
	"io/fs"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/console/login"
	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Backend is what the console needs of the node's API server.
type Backend interface {
	// CheckAdminToken is the admin API's token check.
	CheckAdminToken(token string) bool
	// Admin performs an admin API operation in-process: method, a path
	// under /admin/v1 (e.g. "/workspaces"), a JSON body or nil. It returns
	// the status and the JSON answer exactly as the admin API sends them.
	// actor names who asks, for the audit log.
	Admin(actor, method, path string, body []byte) (status int, answer []byte)
	// UserLogin checks a console user's email and password (argon2id).
	UserLogin(email, password string) (Principal, bool)
	// LinkLogin consumes a one-time sign-in link token.
	LinkLogin(token string) (Principal, bool)
	// User returns the console user id's current record (role changes
	// and deletions take effect at a session's next request).
	User(id string) (Principal, bool)
	// TakeLogin takes cost tokens (0: only reads) from the cluster-wide
	// bucket of key (trustd's own bucket op; login.Buckets); err when the
	// bucket's owner cannot be reached, and the console falls back to its
	// node-local limiter.
	TakeLogin(key string, cfg ratelimit.BucketConfig, cost int64) (ok bool, remaining int64, retryAfter time.Duration, err error)
	// Audit records a console event that is not an admin operation
	// (a login).
	Audit(actor, operation, workspaceID string)
	// HumanSite is the site key of the widget that protects the login
	// form (RequireHuman); false when no console site is configured.
	HumanSite() (siteKey string, ok bool)
	// VerifyHuman redeems the login form's widget token (siteverify of
	// the console site, action console-login, bound to remoteIP, once);
	// err when the verification could not be made.
	VerifyHuman(response, remoteIP string) (bool, error)
}

// loginBuckets lets the sign-in guard count in the backend's buckets.
type loginBuckets struct{ b Backend }

func (l loginBuckets) Take(key string, cfg ratelimit.BucketConfig, cost int64) (bool, int64, time.Duration, error) {
	return l.b.TakeLogin(key, cfg, cost)
}

// Principal is who a session acts as: the cluster admin (admin token), or
// a console user of one workspace with a role.
type Principal struct {
	Admin       bool
	UserID      string
	Email       string
	WorkspaceID string
	Role        string
}

// Actor names p in the audit log.
func (p Principal) Actor() string {
	if p.Admin {
		return "console:admin-token"
	}
	return "console:" + p.Email + " (" + p.Role + ")"
}

// Can reports whether p may do what perm needs in workspace ws ("" for a
// page that is not a workspace's).
func (p Principal) Can(perm users.Permission, ws string) bool {
	if p.Admin {
		return true
	}
	if perm == users.Admin || ws != "" && ws != p.WorkspaceID {
		return false
	}
	return users.Allows(p.Role, perm)
}

// Config tunes the console.
type Config struct {
	// NodeID and Version are shown on the overview.
	NodeID, Version string
	// SecureCookies forces the Secure cookie attribute (the node's public
	// address is https behind a TLS-terminating proxy); it is also set on
	// any request the node itself received over TLS.
	SecureCookies bool
	// IdleTimeout ends a session unused this long (default 30 minutes);
	// AbsoluteTimeout ends any session this long after login (default 12
	// hours); MaxSessions bounds the sessions this node holds (default 256).
	IdleTimeout, AbsoluteTimeout time.Duration
	MaxSessions                  int
	// Login is the sign-in guard's policy (default login.DefaultPolicy):
	// attempts per client address, and the failures an account may have
	// before its next sign-in needs trustd's widget.
	Login login.Policy
	// Clock is the time source (tests); default time.Now.
	Clock func() time.Time
	// RequireHuman puts trustd's own widget on the login form and has
	// every password or admin-token login verify its token first (a node
	// not in dev mode). Without a console site (Backend.HumanSite) the
	// login form is closed. Without RequireHuman the widget is asked for
	// only by an account past its failures (Login.Failures).
	RequireHuman bool
}

// Prefix is where the console is served.
const Prefix = "/console/"

const (
	cookieSession = "trustd_console"
	cookieLogin   = "trustd_console_login"
)

// CSP is the Content-Security-Policy of every console answer: no inline
// script or style, nothing from another origin.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Console serves the console pages.
type Console struct {
	cfg      Config
	b        Backend
	sessions *sessions
	guard    *login.Guard
	pages    map[string]*template.Template
	static   map[string]asset
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// New builds the console over b.
func New(cfg Config, b Backend) *Console {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.AbsoluteTimeout <= 0 {
		cfg.AbsoluteTimeout = 12 * time.Hour
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 256
	}
	if cfg.Login.Address.Capacity <= 0 {
		cfg.Login.Address = login.DefaultPolicy.Address
	}
	if cfg.Login.Failures.Capacity <= 0 {
		cfg.Login.Failures = login.DefaultPolicy.Failures
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	c := &Console{cfg: cfg, b: b,
		sessions: newSessions(cfg.MaxSessions, cfg.IdleTimeout, cfg.AbsoluteTimeout),
		guard:    login.New(loginBuckets{b}, cfg.Login, cfg.Clock),
		pages:    parsePages(), static: loadStatic()}
	return c
}

var funcs = template.FuncMap{
	"join":     strings.Join,
	"ts":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"pct":      func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" },
	"colorsOf": func(b brandingView) []colorField { return colorFields(b.Colors) },
	"decisions": func(m moduleCounts) string {
		if len(m.Decisions) == 0 {
			return "–"
		}
		names := make([]string, 0, len(m.Decisions))
		for k := range m.Decisions {
			names = append(names, k)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = strings.ReplaceAll(k, "_", " ") + " " + strconv.FormatUint(m.Decisions[k], 10)
		}
		return strings.Join(parts, " · ")
	},
	"errRate": func(m moduleCounts) string {
		if m.Requests == 0 {
			return "–"
		}
		return strconv.FormatFloat(float64(m.ServerErrors)*100/float64(m.Requests), 'f', 2, 64) + "% 5xx"
	},
}

// parsePages parses each page with the shared layout.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		out[base] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n))
	}
	return out
}

func loadStatic() map[string]asset {
	out := map[string]asset{}
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		ct := "application/octet-stream"
		switch {
		case strings.HasSuffix(p, ".css"):
			ct = "text/css; charset=utf-8"
		case strings.HasSuffix(p, ".js"):
			ct = "text/javascript; charset=utf-8"
		case strings.HasSuffix(p, ".svg"):
			ct = "image/svg+xml"
		case strings.HasSuffix(p, ".txt"):
			ct = "text/plain; charset=utf-8"
		}
		out[strings.TrimPrefix(p, "static/")] = asset{body: b, ctype: ct, etag: `"` + strconv.FormatUint(fnv(b), 16) + `"`}
		return nil
	})
	return out
}

func fnv(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// securityHeaders go on every console answer.
func securityHeaders(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// req is one console request being served.
type req struct {
	ctx    *fasthttp.RequestCtx
	sess   *session
	now    time.Time
	params params
}

// actor names the session's principal for the audit log.
func (r *req) actor() string {
	if r.sess == nil {
		return "console:anonymous"
	}
	return r.sess.principal.Actor()
}

// Serve answers one request under /console.
func (c *Console) Serve(ctx *fasthttp.RequestCtx) {
	ctx.Response.Reset()
	securityHeaders(ctx)
	path := string(ctx.Path())
	method := string(ctx.Method())
	r := &req{ctx: ctx, now: c.cfg.Clock()}
	if path == "/console" {
		c.redirect(r, Prefix)
		return
	}
	rest := strings.TrimPrefix(path, Prefix)
	if strings.HasPrefix(rest, "static/") {
		c.serveStatic(r, method, strings.TrimPrefix(rest, "static/"))
		return
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if method == "POST" && !c.sameOrigin(ctx) {
		c.forbidden(r, "This form was submitted from another site.")
		return
	}
	switch rest {
	case "link":
		c.signInForm(r, method, c.linkPage, c.linkLogin)
		return
	case "login":
		c.signInForm(r, method, c.loginPage, c.login)
		return
	}
	r.sess = c.sessions.get(string(ctx.Request.Header.Cookie(cookieSession)), r.now)
	if r.sess == nil {
		if len(ctx.Request.Header.Cookie(cookieSession)) > 0 {
			// An expired or unknown session: drop the browser's cookie too.
			c.setCookie(ctx, cookieSession, "", Prefix, -1)
		}
		if method == "POST" {
			c.render(r, 403, "error", pageData{Title: "Session expired", Message: "Your session has ended. Log in again; nothing was changed."})
			return
		}
		c.redirect(r, Prefix+"login")
		return
	}
	if method == "POST" && !r.sess.validCSRF(postValue(ctx, "csrf")) {
		c.forbidden(r, "The form's security token is missing or stale. Reload the page and try again; nothing was changed.")
		return
	}
	if r.sess.principal.UserID != "" {
		// A console user's role and existence are read from the catalog at
		// every request: a deleted user's session ends, a changed role
		// applies at once.
		p, ok := c.b.User(r.sess.principal.UserID)
		if !ok {
			c.sessions.destroy(string(ctx.Request.Header.Cookie(cookieSession)))
			c.setCookie(ctx, cookieSession, "", Prefix, -1)
			r.sess = nil
			c.redirect(r, Prefix+"login")
			return
		}
		r.sess.principal = p
	}
	rest = strings.Trim(rest, "/")
	if rest == "logout" {
		if method != "POST" {
			c.notAllowed(r, "POST")
			return
		}
		c.logout(r)
		return
	}
	segs := strings.Split(rest, "/")
	var allow []string
	for i := range routes {
		rt := &routes[i]
		params, ok := rt.match(segs)
		if !ok {
			continue
		}
		if rt.Method != method && !(rt.Method == "GET" && method == "HEAD") {
			allow = append(allow, rt.Method)
			continue
		}
		if !r.sess.principal.Can(rt.Perm, params.ws) {
			c.forbidden(r, "Your role does not allow this ("+rt.Perm.String()+" is needed). Nothing was changed.")
			return
		}
		r.params = params
		rt.Handle(c, r)
		return
	}
	if len(allow) > 0 {
		c.notAllowed(r, strings.Join(allow, ", "))
		return
	}
	c.notFound(r)
}

// signInForm answers one of the pages a person uses before having a
// session (link, login): GET or HEAD shows the form, POST submits it.
func (c *Console) signInForm(r *req, method string, page func(r *req, status int, errMsg string), submit func(r *req)) {
	switch method {
	case "GET", "HEAD":
		page(r, 200, "")
	case "POST":
		submit(r)
	default:
		c.notAllowed(r, "GET, POST")
	}
}

// postValue is a field of a POSTed form, urlencoded or multipart (the
// logo upload).
func postValue(ctx *fasthttp.RequestCtx, k string) string {
	if strings.HasPrefix(string(ctx.Request.Header.ContentType()), "multipart/form-data") {
		if f, err := ctx.MultipartForm(); err == nil && len(f.Value[k]) > 0 {
			return f.Value[k][0]
		}
		return ""
	}
	return string(ctx.PostArgs().Peek(k))
}

// validID accepts the ids the admin API issues (UUIDs) and nothing that
// could change the admin path it is put into.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

// sameOrigin refuses a POST that a browser says came from another site
// (defence in depth beside SameSite=Strict and the CSRF token):
// Sec-Fetch-Site other than same-origin or none, or an Origin naming
// another host. Under the console's Referrer-Policy: no-referrer a browser
// sends "Origin: null" even for its own forms, so null is not judged; a
// request with neither header is judged by its CSRF token alone.
func (c *Console) sameOrigin(ctx *fasthttp.RequestCtx) bool {
	switch string(ctx.Request.Header.Peek("Sec-Fetch-Site")) {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := string(ctx.Request.Header.Peek("Origin"))
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, string(ctx.Host()))
}

func (c *Console) secure(ctx *fasthttp.RequestCtx) bool { return c.cfg.SecureCookies || ctx.IsTLS() }

// setCookie sets a cookie with the console's attributes: HttpOnly,
// SameSite=Strict, Secure over TLS; maxAge < 0 deletes it.
func (c *Console) setCookie(ctx *fasthttp.RequestCtx, name, value, path string, maxAge int) {
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(name)
	ck.SetValue(value)
	ck.SetPath(path)
	ck.SetHTTPOnly(true)
	ck.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	ck.SetSecure(c.secure(ctx))
	if maxAge < 0 {
		ck.SetExpire(fasthttp.CookieExpireDelete)
		ck.SetValue("")
	} else if maxAge > 0 {
		ck.SetMaxAge(maxAge)
	}
	ctx.Response.Header.SetCookie(ck)
}

func (c *Console) serveStatic(r *req, method, name string) {
	a, ok := c.static[name]
	if !ok {
		r.ctx.Response.Header.Set("Cache-Control", "no-store")
		c.notFound(r)
		return
	}
	if method != "GET" && method != "HEAD" {
		c.notAllowed(r, "GET")
		return
	}
	h := &r.ctx.Response.Header
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	if string(r.ctx.Request.Header.Peek("If-None-Match")) == a.etag {
		r.ctx.SetStatusCode(304)
		return
	}
	r.ctx.SetContentType(a.ctype)
	r.ctx.SetBody(a.body)
}

func (c *Console) redirect(r *req, to string) {
	r.ctx.Response.Header.Set("Location", to)
	r.ctx.SetStatusCode(303)
}

// pageData is what every template sees.
type pageData struct {
	Title    string
	Nav      string
	CSRF     string
	LoggedIn bool
	NodeID   string
	Message  string
	Error    string
	Data     any
	// Notice is a success message shown above the page.
	Notice string
	// Workspace and Tab select a workspace page's sub-navigation.
	Workspace string
	Tab       string
	Tabs      []tab
	// Who is the principal's description; Admin whether it is the admin.
	Who   string
	Admin bool
	// Scripts are extra script files (under /console/static/) the page loads.
	Scripts []string
	// Widget loads trustd's widget script (/v1/widget/api.js, this node).
	Widget bool
	// Referrer is the page's referrer policy (default no-referrer).
	Referrer string
}

func (c *Console) render(r *req, status int, page string, d pageData) {
	if r.sess != nil {
		d.CSRF, d.LoggedIn = r.sess.csrf, true
		p := r.sess.principal
		d.Admin = p.Admin
		if p.Admin {
			d.Who = "cluster admin"
		} else {
			d.Who = p.Email + " · " + p.Role
		}
		if d.Workspace != "" {
			for _, t := range workspaceTabs() {
				if p.Can(t.Perm, d.Workspace) {
					d.Tabs = append(d.Tabs, t)
				}
			}
		}
	}
	d.NodeID = c.cfg.NodeID
	t := c.pages[page]
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout.html", d); err != nil {
		r.ctx.SetStatusCode(500)
		r.ctx.SetContentType("text/plain; charset=utf-8")
		r.ctx.SetBodyString("console: the page could not be rendered")
		return
	}
	r.ctx.SetStatusCode(status)
	r.ctx.SetContentType("text/html; charset=utf-8")
	r.ctx.SetBodyString(b.String())
}

func (c *Console) notFound(r *req) {
	c.render(r, 404, "error", pageData{Title: "Not found", Message: "There is no such page or record."})
}

func (c *Console) forbidden(r *req, msg string) {
	c.render(r, 403, "error", pageData{Title: "Refused", Message: msg})
}

func (c *Console) notAllowed(r *req, allow string) {
	r.ctx.Response.Header.Set("Allow", allow)
	c.render(r, 405, "error", pageData{Title: "Method not allowed", Message: "This page does not accept that request."})
}
