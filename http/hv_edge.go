package http

import (
	"bytes"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/token"
)

// Edge pre-clearance (spec 4.13). After a successful siteverify the
// customer's backend may exchange the assessment_id for a clearance: a
// short-lived signed value, reusable until it expires, bound to the site
// and to whichever of host, action, path, subject and device it names. A
// reverse proxy then asks GET /edge/decision on every request (nginx
// auth_request, Traefik ForwardAuth, Caddy forward_auth): 200 lets the
// request through, 401 sends the visitor to a challenge. The decision is
// stateless (signature, expiry, bindings), so it costs no actor round trip.

// Names a proxy passes the clearance and request context in.
const (
	clearanceCookie = "trustd_clearance"
	clearanceHeader = "X-Service-Clearance"
	maxClearanceTTL = 3600
)

// PreclearanceInput asks for a clearance.
type PreclearanceInput struct {
	Secret       string `json:"secret" doc:"The site's private secret (or send it as Authorization: Bearer)."`
	AssessmentID string `json:"assessment_id" required:"true" format:"uuid" doc:"From a successful siteverify of this site."`
	Host         string `json:"host" doc:"Bind to this exact host (X-Forwarded-Host at the proxy)."`
	Action       string `json:"action" doc:"Bind to this action (the proxy sends X-Service-Action)."`
	Path         string `json:"path" doc:"Bind to this path and everything below it (/checkout matches /checkout and /checkout/pay, not /checkouts)."`
	Subject      string `json:"subject" doc:"Bind to this subject (the proxy sends X-Service-Subject); kept only as a keyed hash."`
	Device       string `json:"device" doc:"Bind to this device id (the proxy sends X-Service-Device); kept only as a keyed hash."`
	TTLSeconds   int    `json:"ttl_seconds" doc:"Lifetime, 10 to 3600; default 300."`
}

// PreclearanceView is the answer of POST /edge/preclearance/issue.
type PreclearanceView struct {
	Clearance  string   `json:"clearance" required:"true" doc:"Set it as the cookie trustd_clearance, or have the client send it in X-Service-Clearance."`
	CookieName string   `json:"cookie_name" required:"true"`
	HeaderName string   `json:"header_name" required:"true"`
	ExpiresIn  int      `json:"expires_in" required:"true"`
	Bound      []string `json:"bound" required:"true" doc:"What the clearance is bound to: site and any of host, action, path, subject, device."`
}

// EdgeDecision is the body of an allowing decision.
type EdgeDecision struct {
	Allow        bool   `json:"allow" required:"true"`
	SiteID       string `json:"site_id" required:"true"`
	AssessmentID string `json:"assessment_id" required:"true"`
	ExpiresIn    int    `json:"expires_in" required:"true"`
}

func (s *Server) edgeRoutes() []Route {
	decision := "Reverse-proxy auth endpoint: 200 when the request carries a valid clearance (cookie trustd_clearance or header X-Service-Clearance) matching X-Forwarded-Host, X-Forwarded-Uri or X-Original-URI, X-Service-Action, X-Service-Subject and X-Service-Device as bound; 401 clearance-required otherwise. Optional query sitekey pins the site."
	return []Route{
		{Method: "POST", Path: "/edge/preclearance/issue", ID: "issuePreclearance", Tag: "Edge", Auth: []Auth{AuthSiteSecret},
			Summary: "Exchange a successful verification (assessment_id) for a short-lived signed edge clearance bound to the site and any of host, action, path, subject, device.",
			Body:    &PreclearanceInput{}, Result: &PreclearanceView{},
			Errors: []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnauthorized, ErrUnknownAssessment, ErrUnavailable},
			Handle: s.issuePreclearance},
		{Method: "GET", Path: "/edge/decision", ID: "edgeDecision", Tag: "Edge", Summary: decision,
			Result: &EdgeDecision{}, Errors: []ErrorCode{ErrClearanceRequired}, Handle: s.edgeDecision},
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

// scopeHash keys a subject or device value with the workspace's key.
func scopeHash(cat *catalog.Catalog, workspaceID, label, v string) [16]byte {
	var key []byte
	if w := cat.Workspaces[workspaceID]; w != nil {
		key = w.ScopeKey
	}
	return token.NewKey("", append([]byte("edge\x00"), key...)).Hash16(label, v)
}

func (s *Server) issuePreclearance(c *Call) {
	var in PreclearanceInput
	if !c.decode(&in) {
		return
	}
	site := c.siteFromSecret(in.Secret)
	if site == nil {
		return
	}
	switch {
	case in.TTLSeconds != 0 && (in.TTLSeconds < 10 || in.TTLSeconds > maxClearanceTTL):
		c.failErr(invalid("ttl_seconds", "10 to 3600"))
		return
	case in.Host != "" && !validHostname(strings.ToLower(in.Host)):
		c.failErr(invalid("host", "a hostname"))
		return
	case !validAction(in.Action):
		c.failErr(invalid("action", "up to 64 of A-Z a-z 0-9 _ - . /"))
		return
	case in.Path != "" && (in.Path[0] != '/' || len(in.Path) > token.MaxPath || strings.ContainsAny(in.Path, "?#") || !isCanonical(in.Path)):
		c.failErr(invalid("path", "an absolute, canonical path (no dot segments, escapes or backslashes) without query, at most 512 bytes"))
		return
	case len(in.Subject) > 256 || len(in.Device) > 256:
		c.failErr(invalid("subject", "subject and device are at most 256 bytes"))
		return
	case len(in.AssessmentID) != 36:
		c.failErr(invalid("assessment_id", "a UUID"))
		return
	}
	get, err := c.getVerification(in.AssessmentID)
	if err != nil {
		c.failErr(err)
		return
	}
	if !get.Found || get.A.SiteID != site.ID {
		c.fail(ErrUnknownAssessment, "no successful verification of this site has that assessment_id")
		return
	}
	k := s.mods.hv.signer(c.cat, catalog.KeyLive)
	if k == nil {
		c.fail(ErrUnavailable, "no signing key yet")
		return
	}
	ttl := in.TTLSeconds
	if ttl == 0 {
		ttl = 300
	}
	now := c.Now().Unix()
	cl := token.Clearance{ID: randomID(), SiteID: site.ID, AssessmentID: in.AssessmentID, Host: strings.ToLower(in.Host),
		Action: in.Action, Path: in.Path, Issued: now, Expires: now + int64(ttl)}
	bound := []string{"site"}
	for _, b := range []struct {
		name string
		on   bool
	}{{"host", in.Host != ""}, {"action", in.Action != ""}, {"path", in.Path != ""}} {
		if b.on {
			bound = append(bound, b.name)
		}
	}
	if in.Subject != "" {
		cl.HasSubject, cl.SubjectHash = true, scopeHash(c.cat, site.WorkspaceID, "subject", in.Subject)
		bound = append(bound, "subject")
	}
	if in.Device != "" {
		cl.HasDevice, cl.DeviceHash = true, scopeHash(c.cat, site.WorkspaceID, "device", in.Device)
		bound = append(bound, "device")
	}
	c.ok(&PreclearanceView{Clearance: cl.Sign(k), CookieName: clearanceCookie, HeaderName: clearanceHeader,
		ExpiresIn: ttl, Bound: bound})
}

// pathWithin reports whether the raw request path, once canonical, is
// the bound path itself or lies below it, on segment boundaries. A path
// that cannot be made canonical (encoded separators, NUL, backslashes,
// double encoding) is never within: what the proxy forwards and what the
// origin routes must not be two different paths.
func pathWithin(raw, bound string) bool {
	if bound == "" {
		return true
	}
	path, ok := canonicalPath(raw)
	if !ok {
		return false
	}
	if path == bound {
		return true
	}
	if strings.HasSuffix(bound, "/") {
		return strings.HasPrefix(path, bound)
	}
	return strings.HasPrefix(path, bound+"/")
}

// canonicalPath decodes a request path once and resolves its dot
// segments. It refuses what an origin might decode or split differently
// from us: encoded slashes and backslashes (%2F, %5C), literal
// backslashes, NUL and other control bytes, and any percent sign left
// after one decoding (double encoding such as %252e).
func canonicalPath(raw string) (string, bool) {
	if raw == "" || raw[0] != '/' {
		return "", false
	}
	lower := strings.ToLower(raw)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") {
		return "", false
	}
	dec, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	for i := 0; i < len(dec); i++ {
		if c := dec[i]; c < 0x20 || c == 0x7f || c == '\\' || c == '%' {
			return "", false
		}
	}
	clean := path.Clean(dec)
	if strings.HasSuffix(dec, "/") && clean != "/" {
		clean += "/"
	}
	return clean, true
}

func isCanonical(p string) bool {
	c, ok := canonicalPath(p)
	return ok && c == p && !strings.Contains(p, "%")
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
	deny := func(why string) {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Service-Clearance realm="trustd"`)
		c.fail(ErrClearanceRequired, why)
	}
	text := string(c.Ctx.Request.Header.Peek(clearanceHeader))
	if text == "" {
		text = string(c.Ctx.Request.Header.Cookie(clearanceCookie))
	}
	if text == "" {
		deny("no clearance")
		return
	}
	hv := s.mods.hv
	cl, err := token.DecodeClearance(text, func(id string) *token.Key { return hv.verifier(c.cat, catalog.KeyLive, id) })
	site := c.cat.Sites[cl.SiteID]
	now := c.Now().Unix()
	switch {
	case err != nil || site == nil:
		deny("the clearance is not valid")
		return
	case now >= cl.Expires:
		deny("the clearance expired")
		return
	}
	if key := c.Ctx.QueryArgs().Peek("sitekey"); len(key) > 0 && string(key) != site.SiteKey {
		deny("the clearance belongs to another site")
		return
	}
	h := &c.Ctx.Request.Header
	switch {
	case cl.Host != "" && c.forwardedHost() != cl.Host:
		deny("the clearance is bound to another host")
		return
	case cl.Action != "" && string(h.Peek("X-Service-Action")) != cl.Action:
		deny("the clearance is bound to another action")
		return
	case !pathWithin(c.forwardedPath(), cl.Path):
		deny("the clearance is bound to another path")
		return
	case cl.HasSubject && scopeHash(c.cat, site.WorkspaceID, "subject", string(h.Peek("X-Service-Subject"))) != cl.SubjectHash:
		deny("the clearance is bound to another subject")
		return
	case cl.HasDevice && scopeHash(c.cat, site.WorkspaceID, "device", string(h.Peek("X-Service-Device"))) != cl.DeviceHash:
		deny("the clearance is bound to another device")
		return
	}
	rh := &c.Ctx.Response.Header
	rh.Set("X-Service-Site-Id", site.ID)
	rh.Set("X-Service-Assessment-Id", cl.AssessmentID)
	rh.Set("Cache-Control", "no-store")
	rh.Set("X-Service-Clearance-Expires-In", strconv.FormatInt(cl.Expires-now, 10))
	c.ok(&EdgeDecision{Allow: true, SiteID: site.ID, AssessmentID: cl.AssessmentID, ExpiresIn: int(cl.Expires - now)})
}
