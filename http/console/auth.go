package console

import (
	"crypto/subtle"
	"strconv"
	"strings"
	"time"
)

// The login form is protected before any session exists by a double-submit
// token: GET /console/login sets a random value in an HttpOnly,
// SameSite=Strict cookie scoped to /console/ and puts the same value in
// the form; POST /console/login (or /console/link) requires both and
// equal. No server state is created before a correct credential is
// presented, so unauthenticated clients cannot fill the session store.
//
// Three ways in: the cluster admin token (everything), a console user's
// email and password (argon2id, one workspace, one role), or a one-time
// sign-in link issued by the admin API (trustctl console-users link). The
// link's GET only shows a button; the POST consumes it, so a mail scanner
// or link preview fetching the URL does not use it up.

const loginTokenMaxAge = 3600

// loginData is what the login and link pages show.
type loginData struct {
	Token string // the form's double-submit token
	Link  string // the sign-in link's token (link page)
	// SiteKey is the widget's site key when RequireHuman; Closed is set
	// when RequireHuman and no console site is configured.
	SiteKey string
	Closed  bool
	Action  string
}

// LoginAction is the action the login widget binds (verified by the
// backend's siteverify).
const LoginAction = "console-login"

func (c *Console) preLogin(r *req) string {
	tok := randomToken()
	c.setCookie(r.ctx, cookieLogin, tok, Prefix, loginTokenMaxAge)
	return tok
}

func (c *Console) loginPage(r *req, status int, errMsg string) {
	if r.sess == nil {
		r.sess = c.sessions.get(string(r.ctx.Request.Header.Cookie(cookieSession)), r.now)
	}
	if r.sess != nil && errMsg == "" {
		c.redirect(r, Prefix)
		return
	}
	r.sess = nil
	d := loginData{Token: c.preLogin(r), Action: LoginAction}
	pd := pageData{Title: "Log in", Error: errMsg}
	if c.cfg.RequireHuman {
		key, ok := c.b.HumanSite()
		d.Closed, pd.Widget = !ok, ok
		if ok {
			d.SiteKey = key
			// The widget's challenge is a same-origin POST that must carry
			// the page's Origin; under no-referrer a browser sends "null".
			pd.Referrer = "same-origin"
			r.ctx.Response.Header.Set("Referrer-Policy", pd.Referrer)
		}
	}
	pd.Data = d
	c.render(r, status, "login", pd)
}

func (c *Console) validPreLogin(r *req) bool {
	pre := r.ctx.Request.Header.Cookie(cookieLogin)
	got := r.ctx.PostArgs().Peek("csrf")
	if len(pre) == 0 || len(got) == 0 || subtle.ConstantTimeCompare(pre, got) != 1 {
		c.forbidden(r, "The login form's security token is missing or stale. Reload the login page and try again.")
		return false
	}
	return true
}

// allowAttempt takes one attempt from each key's bucket: trustd's own
// cluster-wide limiter first (a bucket op on the key's owner, so every
// node shares one budget per key), the node-local limiter only when the
// owner cannot be reached. It answers the wait when refused.
func (c *Console) allowAttempt(r *req, keys ...string) (bool, time.Duration) {
	for _, k := range keys {
		ok, wait, err := c.b.AllowLogin(k)
		if err != nil {
			ok, wait = c.limiter.allow(k, r.now)
		}
		if !ok {
			return false, wait
		}
	}
	return true, 0
}

func (c *Console) refuseLimited(r *req, wait time.Duration, page func(int, string)) {
	secs := int(wait/time.Second) + 1
	r.ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
	page(429, "Too many login attempts. Wait "+strconv.Itoa(secs)+" seconds and try again.")
}

func (c *Console) login(r *req) {
	if !c.validPreLogin(r) {
		return
	}
	form := r.ctx.PostArgs()
	token := string(form.Peek("token"))
	email := strings.ToLower(strings.TrimSpace(string(form.Peek("email"))))
	password := string(form.Peek("password"))
	keys := []string{"ip/" + r.ctx.RemoteIP().String()}
	if token == "" && email != "" && len(email) <= 254 {
		// A second budget per account: guessing one user's password from
		// many addresses is limited too.
		keys = append(keys, "user/"+email)
	}
	page := func(st int, msg string) { c.loginPage(r, st, msg) }
	if ok, wait := c.allowAttempt(r, keys...); !ok {
		c.refuseLimited(r, wait, page)
		return
	}
	if c.cfg.RequireHuman && (token != "" || email != "") {
		// trustd's own widget guards the form: its token is redeemed (once)
		// before any credential is checked.
		if _, ok := c.b.HumanSite(); !ok {
			c.loginPage(r, 503, "Console login is closed: this node is not in dev mode and no console site is configured (--console-site).")
			return
		}
		ok, err := c.b.VerifyHuman(string(form.Peek("service-response")), r.ctx.RemoteIP().String())
		if err != nil {
			c.loginPage(r, 503, "The human check could not be verified just now. Try again.")
			return
		}
		if !ok {
			c.loginPage(r, 401, "The human check was missing, expired or already used. Complete it and try again.")
			return
		}
	}
	var p Principal
	switch {
	case token != "":
		if len(token) > 512 || !c.b.CheckAdminToken(token) {
			c.loginPage(r, 401, "That is not the cluster's admin token.")
			return
		}
		p = Principal{Admin: true}
	case email != "" && password != "":
		var ok bool
		if len(email) > 254 || len(password) > 256 {
			ok = false
		} else {
			p, ok = c.b.UserLogin(email, password)
		}
		if !ok {
			c.loginPage(r, 401, "Wrong email or password.")
			return
		}
	default:
		c.loginPage(r, 401, "Enter an email and password, or the admin token.")
		return
	}
	c.startSession(r, p, "consoleLogin")
}

// startSession logs p in with a fresh session id (a cookie planted before
// login, session fixation, is never promoted).
func (c *Console) startSession(r *req, p Principal, op string) {
	if old := r.ctx.Request.Header.Cookie(cookieSession); len(old) > 0 {
		c.sessions.destroy(string(old))
	}
	id, s := c.sessions.create(p, r.now)
	r.sess = s
	c.setCookie(r.ctx, cookieSession, id, Prefix, 0)
	c.setCookie(r.ctx, cookieLogin, "", Prefix, -1)
	c.b.Audit(p.Actor(), op, p.WorkspaceID)
	c.redirect(r, Prefix)
}

func (c *Console) linkPage(r *req, status int, errMsg string) {
	r.sess = nil
	t := string(r.ctx.QueryArgs().Peek("t"))
	if len(t) > 128 {
		t = ""
	}
	c.render(r, status, "link", pageData{Title: "Sign in with a one-time link", Error: errMsg, Data: loginData{Token: c.preLogin(r), Link: t}})
}

func (c *Console) linkLogin(r *req) {
	if !c.validPreLogin(r) {
		return
	}
	if ok, wait := c.allowAttempt(r, "ip/"+r.ctx.RemoteIP().String()); !ok {
		c.refuseLimited(r, wait, func(st int, msg string) { c.linkPage(r, st, msg) })
		return
	}
	t := string(r.ctx.PostArgs().Peek("link"))
	if t == "" || len(t) > 128 {
		c.linkPage(r, 401, "This sign-in link is not valid.")
		return
	}
	p, ok := c.b.LinkLogin(t)
	if !ok {
		c.linkPage(r, 401, "This sign-in link is used, expired or not valid. Ask the administrator for a new one.")
		return
	}
	c.startSession(r, p, "consoleLinkLogin")
}

func (c *Console) logout(r *req) {
	c.sessions.destroy(string(r.ctx.Request.Header.Cookie(cookieSession)))
	r.sess = nil
	c.setCookie(r.ctx, cookieSession, "", Prefix, -1)
	c.redirect(r, Prefix+"login")
}
