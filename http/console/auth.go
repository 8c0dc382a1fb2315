package console

import (
	"crypto/subtle"
	"strconv"
	"time"
)

// The login form is protected before any session exists by a double-submit
// token: GET /console/login sets a random value in an HttpOnly,
// SameSite=Strict cookie scoped to /console/login and puts the same value
// in the form; POST /console/login requires both and equal. No server
// state is created before a correct admin token is presented, so
// unauthenticated clients cannot fill the session store.

const loginTokenMaxAge = 3600

func (c *Console) loginPage(r *req, status int, errMsg string) {
	if r.sess == nil {
		r.sess = c.sessions.get(string(r.ctx.Request.Header.Cookie(cookieSession)), r.now)
	}
	if r.sess != nil && errMsg == "" {
		c.redirect(r, Prefix)
		return
	}
	r.sess = nil
	tok := randomToken()
	c.setCookie(r.ctx, cookieLogin, tok, Prefix+"login", loginTokenMaxAge)
	c.render(r, status, "login", pageData{Title: "Log in", Error: errMsg, Data: tok})
}

func (c *Console) login(r *req) {
	form := r.ctx.PostArgs()
	pre := r.ctx.Request.Header.Cookie(cookieLogin)
	got := form.Peek("csrf")
	if len(pre) == 0 || len(got) == 0 || subtle.ConstantTimeCompare(pre, got) != 1 {
		c.forbidden(r, "The login form's security token is missing or stale. Reload the login page and try again.")
		return
	}
	if ok, wait := c.limiter.allow(r.ctx.RemoteIP().String(), r.now); !ok {
		secs := int(wait/time.Second) + 1
		r.ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
		c.loginPage(r, 429, "Too many login attempts from this address. Wait "+strconv.Itoa(secs)+" seconds and try again.")
		return
	}
	token := string(form.Peek("token"))
	if token == "" || len(token) > 512 || !c.b.CheckAdminToken(token) {
		c.loginPage(r, 401, "That is not the cluster's admin token.")
		return
	}
	// A fresh session id at every login: a cookie planted before login
	// (session fixation) is never promoted.
	if old := r.ctx.Request.Header.Cookie(cookieSession); len(old) > 0 {
		c.sessions.destroy(string(old))
	}
	id, s := c.sessions.create(r.now)
	r.sess = s
	c.setCookie(r.ctx, cookieSession, id, Prefix, 0)
	c.setCookie(r.ctx, cookieLogin, "", Prefix+"login", -1)
	c.redirect(r, Prefix)
}

func (c *Console) logout(r *req) {
	c.sessions.destroy(string(r.ctx.Request.Header.Cookie(cookieSession)))
	r.sess = nil
	c.setCookie(r.ctx, cookieSession, "", Prefix, -1)
	c.redirect(r, Prefix+"login")
}
