package api

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify"
)

// Edge pre-clearance's transport (spec 4.13; the decision is
// verify.Decide): the proxy's forwarded headers are read here, the
// clearance decided there, and 200 or 401 written here.

func (a *verifyAPI) edgeRoutes() []kernel.Route {
	decision := "Reverse-proxy auth endpoint: 200 when the request carries a valid clearance (cookie trustd_clearance or header X-Service-Clearance) matching X-Forwarded-Host, X-Forwarded-Uri or X-Original-URI, X-Service-Action, X-Service-Subject and X-Service-Device as bound; 401 clearance-required otherwise. Optional query sitekey pins the site."
	return []kernel.Route{
		{Method: "POST", Path: "/edge/preclearance/issue", ID: "issuePreclearance", Tag: "Edge", Auth: []kernel.Auth{kernel.AuthSiteSecret},
			Summary: "Exchange a successful verification (assessment_id) for a short-lived signed edge clearance bound to the site and any of host, action, path, subject, device.",
			Body:    &verify.PreclearanceInput{}, Result: &verify.PreclearanceView{},
			Errors: []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrUnauthorized, errUnknownAssessment, kernel.ErrUnavailable},
			Handle: a.issuePreclearance},
		{Method: "GET", Path: "/edge/decision", ID: "edgeDecision", Tag: "Edge", Summary: decision,
			Result: &verify.EdgeDecision{}, Errors: []kernel.ErrorCode{errClearanceRequired}, Handle: a.edgeDecision},
		{Method: "HEAD", Path: "/edge/decision", ID: "edgeDecisionHead", Tag: "Edge", Summary: "As GET /edge/decision, without a body.",
			Errors: []kernel.ErrorCode{errClearanceRequired}, Handle: a.edgeDecision},
	}
}

// siteFromSecret authenticates a site-secret operation: the body field
// secret, else Authorization: Bearer. Sandbox secrets are refused.
func siteFromSecret(c *kernel.Call, bodySecret string) *catalog.Site {
	secret := bodySecret
	if secret == "" {
		secret = c.Bearer()
	}
	if secret == "" || len(secret) > 128 {
		c.Fail(kernel.ErrUnauthorized, "the site secret is required (body field secret or Authorization: Bearer)")
		return nil
	}
	site := c.Catalog().SiteBySecret(secret, c.Now())
	if site == nil || site.Sandbox() {
		c.Fail(kernel.ErrUnauthorized, "invalid site secret")
		return nil
	}
	if !c.AdmitCredential(site.ID, site.WorkspaceID) {
		return nil
	}
	return site
}

func (a *verifyAPI) issuePreclearance(c *kernel.Call) {
	var in verify.PreclearanceInput
	if !c.Decode(&in) {
		return
	}
	site := siteFromSecret(c, in.Secret)
	if site == nil {
		return
	}
	out, err := a.m.IssuePreclearance(c.Catalog(), site, &in)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(out)
}

// forwardedHost is the original request's host as the proxy reports it.
func forwardedHost(c *kernel.Call) string {
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
func forwardedPath(c *kernel.Call) string {
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

func (a *verifyAPI) edgeDecision(c *kernel.Call) {
	h := &c.Ctx.Request.Header
	r := verify.EdgeRequest{Clearance: string(h.Peek(verify.ClearanceHeader)), SiteKey: string(c.Ctx.QueryArgs().Peek("sitekey")),
		Host: forwardedHost(c), Path: forwardedPath(c), Action: string(h.Peek("X-Service-Action")),
		Subject: string(h.Peek("X-Service-Subject")), Device: string(h.Peek("X-Service-Device"))}
	if r.Clearance == "" {
		r.Clearance = string(h.Cookie(verify.ClearanceCookie))
	}
	d, err := a.m.Decide(c.Catalog(), &r)
	if err != nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Service-Clearance realm="trustd"`)
		c.FailErr(err)
		return
	}
	rh := &c.Ctx.Response.Header
	rh.Set("X-Service-Site-Id", d.SiteID)
	rh.Set("X-Service-Assessment-Id", d.AssessmentID)
	rh.Set("Cache-Control", "no-store")
	rh.Set("X-Service-Clearance-Expires-In", strconv.Itoa(d.ExpiresIn))
	c.OK(d)
}
