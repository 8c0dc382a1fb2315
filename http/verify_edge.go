package http

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/verify"
)

// Edge pre-clearance's transport (spec 4.13; the decision is
// verify.Decide): the proxy's forwarded headers are read here, the
// clearance decided there, and 200 or 401 written here.

func (s *Server) edgeRoutes() []Route {
	decision := "Reverse-proxy auth endpoint: 200 when the request carries a valid clearance (cookie trustd_clearance or header X-Service-Clearance) matching X-Forwarded-Host, X-Forwarded-Uri or X-Original-URI, X-Service-Action, X-Service-Subject and X-Service-Device as bound; 401 clearance-required otherwise. Optional query sitekey pins the site."
	return []Route{
		{Method: "POST", Path: "/edge/preclearance/issue", ID: "issuePreclearance", Tag: "Edge", Auth: []Auth{AuthSiteSecret},
			Summary: "Exchange a successful verification (assessment_id) for a short-lived signed edge clearance bound to the site and any of host, action, path, subject, device.",
			Body:    &verify.PreclearanceInput{}, Result: &verify.PreclearanceView{},
			Errors: []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnauthorized, ErrUnknownAssessment, ErrUnavailable},
			Handle: s.issuePreclearance},
		{Method: "GET", Path: "/edge/decision", ID: "edgeDecision", Tag: "Edge", Summary: decision,
			Result: &verify.EdgeDecision{}, Errors: []ErrorCode{ErrClearanceRequired}, Handle: s.edgeDecision},
		{Method: "HEAD", Path: "/edge/decision", ID: "edgeDecisionHead", Tag: "Edge", Summary: "As GET /edge/decision, without a body.",
			Errors: []ErrorCode{ErrClearanceRequired}, Handle: s.edgeDecision},
	}
}

// siteFromSecret authenticates a site-secret operation: the body field
// secret, else Authorization: Bearer. Sandbox secrets are refused.
func (c *Call) siteFromSecret(bodySecret string) *catalog.Site {
	secret := bodySecret
	if secret == "" {
		secret = c.bearer()
	}
	if secret == "" || len(secret) > 128 {
		c.fail(ErrUnauthorized, "the site secret is required (body field secret or Authorization: Bearer)")
		return nil
	}
	site := c.cat.SiteBySecret(secret, c.Now())
	if site == nil || site.Sandbox() {
		c.fail(ErrUnauthorized, "invalid site secret")
		return nil
	}
	if !c.admitCredential(site.ID, site.WorkspaceID) {
		return nil
	}
	return site
}

func (s *Server) issuePreclearance(c *Call) {
	var in verify.PreclearanceInput
	if !c.decode(&in) {
		return
	}
	site := c.siteFromSecret(in.Secret)
	if site == nil {
		return
	}
	out, err := s.mods.verify.IssuePreclearance(c.cat, site, &in)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(out)
}

// forwardedHost is the original request's host as the proxy reports it.
func (c *Call) forwardedHost() string {
	h := c.Ctx.Request.Header.Peek("X-Forwarded-Host")
	if len(h) == 0 {
		h = c.Ctx.Request.Header.Host()
	}
	if i := bytes.IndexByte(h, ','); i >= 0 {
		h = h[:i]
	}
	host := strings.ToLower(strings.TrimSpace(string(h)))
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

// forwardedPath is the original request's path, without its query.
func (c *Call) forwardedPath() string {
	u := c.Ctx.Request.Header.Peek("X-Forwarded-Uri")
	if len(u) == 0 {
		u = c.Ctx.Request.Header.Peek("X-Original-URI")
	}
	if len(u) == 0 {
		return "/"
	}
	if i := bytes.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return string(u)
}

func (s *Server) edgeDecision(c *Call) {
	h := &c.Ctx.Request.Header
	r := verify.EdgeRequest{Clearance: string(h.Peek(verify.ClearanceHeader)), SiteKey: string(c.Ctx.QueryArgs().Peek("sitekey")),
		Host: c.forwardedHost(), Path: c.forwardedPath(), Action: string(h.Peek("X-Service-Action")),
		Subject: string(h.Peek("X-Service-Subject")), Device: string(h.Peek("X-Service-Device"))}
	if r.Clearance == "" {
		r.Clearance = string(h.Cookie(verify.ClearanceCookie))
	}
	d, err := s.mods.verify.Decide(c.cat, &r)
	if err != nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Service-Clearance realm="trustd"`)
		c.failErr(err)
		return
	}
	rh := &c.Ctx.Response.Header
	rh.Set("X-Service-Site-Id", d.SiteID)
	rh.Set("X-Service-Assessment-Id", d.AssessmentID)
	rh.Set("Cache-Control", "no-store")
	rh.Set("X-Service-Clearance-Expires-In", strconv.Itoa(d.ExpiresIn))
	c.ok(d)
}
