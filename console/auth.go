package console

import (
	"crypto/subtle"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/console/login"
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
	// SiteKey is the widget's site key when RequireHuman or Challenge;
	// Closed is set when RequireHuman and no console site is configured.
	SiteKey string
	Closed  bool
	Action  string
	// AdminWidget puts the widget on the admin-token form too
	// (RequireHuman); a challenge concerns the user form only.
	AdminWidget bool
	// Challenge: the email's account needs the widget (past its failures);
	// Email refills the form.
	Challenge bool
	Email     string
}

// LoginAction is the action the login widget binds (verified by the
// backend's siteverify).
const LoginAction = "console-login"

// ChallengeRequired starts the message of a login refused for want of the
// widget's token on an account past its failures (HTTP 401): the page
// shows the widget and the user signs in again with it.
const ChallengeRequired = "Challenge required"

func (c *Console) preLogin(r *req) string {
	tok := randomToken()
	c.setCookie(r.ctx, cookieLogin, tok, Prefix, loginTokenMaxAge)
	return tok
}

// loginView is what a login answer must show beyond its message.
type loginView struct {
	email     string
	challenge bool // show the widget on the user form
}

func (c *Console) loginPage(r *req, status int, errMsg string) {
	c.loginPageWith(r, status, errMsg, loginView{})
}

func (c *Console) loginPageWith(r *req, status int, errMsg string, v loginView) {
	if r.sess == nil {
		r.sess = c.sessions.get(string(r.ctx.Request.Header.Cookie(cookieSession)), r.now)
	}
	if r.sess != nil && errMsg == "" {
		c.redirect(r, Prefix)
		return
	}
	r.sess = nil
	d := loginData{Token: c.preLogin(r), Action: LoginAction, Email: v.email}
	pd := pageData{Title: "Log in", Error: errMsg}
	if c.cfg.RequireHuman || v.challenge {
		key, ok := c.b.HumanSite()
		d.Closed, pd.Widget = !ok && c.cfg.RequireHuman, ok
		if ok {
			d.SiteKey, d.AdminWidget, d.Challenge = key, c.cfg.RequireHuman, v.challenge
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

func (c *Console) refuseLimited(r *req, wait time.Duration, page func(int, string)) {
	secs := int(wait/time.Second) + 1
	r.ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
	page(429, "Too many login attempts from this address. Wait "+strconv.Itoa(secs)+" seconds and try again.")
}

// login signs in with the admin token or an email and password. The
// sign-in guard (console/login) decides first: an address past its limit
// is refused (429); an account past its failures needs trustd's widget
// (401 "Challenge required" without a verified token), never a refusal,
// so nobody can lock a user out by guessing wrong in their name. A wrong
// password counts a failure for the account named.
func (c *Console) login(r *req) {
	if !c.validPreLogin(r) {
		return
	}
	form := r.ctx.PostArgs()
	token := string(form.Peek("token"))
	email := strings.ToLower(strings.TrimSpace(string(form.Peek("email"))))
	password := string(form.Peek("password"))
	account := ""
	if token == "" && email != "" && len(email) <= 254 {
		account = email
	}
	view := loginView{email: account}
	page := func(st int, msg string) { c.loginPageWith(r, st, msg, view) }
	ip := r.ctx.RemoteIP().String()
	v := c.guard.Attempt(ip, account)
	if v.Outcome == login.Limited {
		c.refuseLimited(r, v.RetryAfter, page)
		return
	}
	view.challenge = v.Outcome == login.Challenge
	if view.challenge || c.cfg.RequireHuman && (token != "" || email != "") {
		// trustd's own widget: its token is redeemed (once, for the
		// console site and action, bound to this address) before any
		// credential is checked.
		if _, ok := c.b.HumanSite(); !ok {
			if c.cfg.RequireHuman {
				c.loginPage(r, 503, "Console login is closed: this node is not in dev mode and no console site is configured (--console-site).")
			} else {
				c.loginPage(r, 503, ChallengeRequired+", and this node has no site to show the human check: configure one with --console-site.")
			}
			return
		}
		response := string(form.Peek("service-response"))
		if response == "" && view.challenge {
			page(401, ChallengeRequired+": this account has had several failed sign-ins. Complete the human check below, then sign in again.")
			return
		}
		ok, err := c.b.VerifyHuman(response, ip)
		if err != nil {
			page(503, "The human check could not be verified just now. Try again.")
			return
		}
		if !ok {
			page(401, "The human check was missing, expired or already used. Complete it and try again.")
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
			view.challenge = c.guard.Failed(account)
			page(401, "Wrong email or password.")
			return
		}
	default:
		page(401, "Enter an email and password, or the admin token.")
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
	if v := c.guard.Attempt(r.ctx.RemoteIP().String(), ""); v.Outcome == login.Limited {
		c.refuseLimited(r, v.RetryAfter, func(st int, msg string) { c.linkPage(r, st, msg) })
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
