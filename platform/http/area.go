package http

import (
	"bytes"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// The surface a product area's HTTP adapter builds on (ARCHITECTURE §2,
// "Second step"). An area exports its operations as an Area from its own
// folder (for example risk/api); node/ builds the area's modules, calls
// its adapter and hands the Areas to New in Config.Areas. The handlers of
// those routes decode, authenticate and answer through the exported Call
// methods and helpers of this package; the transport never imports the
// area. Each is defined where its mechanism is (codec.go, errors.go,
// auth.go, admin_call.go, …); the few here are the Area itself, helpers
// with no other home, and one-line exported twins of methods the hot
// path's files (call.go, server.go) call unexported.

// Area is one product area's share of the route table.
type Area struct {
	// Name places the area in the contract documents (see areaOrder).
	Name string
	// Routes are the area's operations. Admin routes authenticate with
	// AdminOnly, as the kernel's own do.
	Routes []Route
	// Errors are the error vocabularies of the area's modules, listed in
	// the ApiError schema of the contract.
	Errors []*errcode.Code
	// Pages, when set, are the area's browser pages (pages.go).
	Pages *Pages
	// Schemes describe, for the contract, the security schemes whose
	// credentials the area verifies itself (an agent's signature).
	Schemes map[Auth]string
}

// OK answers v with the route's success status.
func (c *Call) OK(v any) { c.ok(v) }

// JSON answers v with status.
func (c *Call) JSON(status int, v any) { c.json(status, v) }

// NoContent answers 204.
func (c *Call) NoContent() { c.noContent() }

// Fail answers the ApiError of code.
func (c *Call) Fail(code ErrorCode, msg string) { c.fail(code, msg) }

// Bearer is the token of an Authorization: Bearer header, or "".
func (c *Call) Bearer() string { return c.bearer() }

// IsMultipart reports a multipart/form-data body.
func (c *Call) IsMultipart() bool {
	ct := c.Ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("multipart/form-data"))
}

// ClientAddr is the peer's address in canonical form (IPv4-mapped IPv6
// unmapped), the value tokens bind.
func (c *Call) ClientAddr() string {
	a, ok := netip.AddrFromSlice(c.Ctx.RemoteIP())
	if !ok {
		return ""
	}
	return a.Unmap().String()
}

// OriginHost is the request's Origin header and its lowercase hostname,
// or "" when it is missing, "null" or not a plain http(s) origin.
func (c *Call) OriginHost() (origin, host string) {
	o := string(c.Ctx.Request.Header.Peek("Origin"))
	if o == "" || o == "null" || len(o) > 300 {
		return "", ""
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.User != nil {
		return "", ""
	}
	return o, strings.ToLower(u.Hostname())
}

// SpecError answers the spec's fixed error shape {success:false,error}
// (siteverify, the rate-limit check).
func (c *Call) SpecError(status int, code string) { c.specError(status, code) }

// RawJSON answers pre-encoded JSON (a hot path's pooled answer).
func (c *Call) RawJSON(status int, b []byte) { c.rawJSON(status, b) }

// DecidedSuccess records, for the cluster-wide summary, a decision that
// travels in a 200 answer as success or failure (a siteverify's), without
// a map lookup.
func (c *Call) DecidedSuccess(success bool) {
	if success {
		c.outcome = outcomeSuccess
	} else {
		c.outcome = outcomeFailure
	}
}

// Local runs req through this server's own handler as a request from the
// caller's address (routing, ingress limit and metrics as for any
// request, without a network round trip) and returns the answer's status
// and a copy of its body: the --dev demo's backend calls /siteverify so.
func (c *Call) Local(req *fasthttp.Request) (int, []byte) {
	var inner fasthttp.RequestCtx
	inner.Init(req, c.Ctx.RemoteAddr(), nil)
	c.s.serve(&inner)
	return inner.Response.StatusCode(), append([]byte(nil), inner.Response.Body()...)
}

// Caller is the application a site or mobile secret authenticated.
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string
	// Channel is "server" for a site secret, "mobile" for a mobile app's.
	Channel string
}

// SiteSecretBody is a request body that may carry the site secret.
type SiteSecretBody interface{ SiteSecret() string }

// MobileBody is the mobile variant of a body: the app's declared identity
// and the site form of the body it extends.
type MobileBody[In any] interface {
	SiteSecretBody
	MobileIdentity() (platform, appID string)
	Site() *In
}

// AppIdentity is the registered identity a mobile call declares in its
// body; embedded in a mobile body, it supplies MobileIdentity. The mobile
// secret's check compares it with the app's registration.
type AppIdentity struct {
	Platform string `json:"platform" required:"true" enum:"android|ios" doc:"Must match the app's registration."`
	AppID    string `json:"app_id" required:"true" doc:"Package name or bundle id; must match the app's registration."`
}

// MobileIdentity implements MobileBody.
func (a *AppIdentity) MobileIdentity() (platform, appID string) { return a.Platform, a.AppID }

// AsSiteCaller is the handler of an operation on body In authenticated by
// a site's private secret: decode, authenticate (bearer, else the body's
// secret), run op.
func AsSiteCaller[In any, P interface {
	*In
	SiteSecretBody
}](op func(c *Call, who Caller, in *In)) func(*Call) {
	return func(c *Call) {
		in := P(new(In))
		if !c.Decode(in) {
			return
		}
		tc, ok := c.siteCaller(in.SiteSecret())
		if ok {
			op(c, Caller{Workspace: tc.ws, AppID: tc.appID, Channel: "server"}, (*In)(in))
		}
	}
}

// AsMobileCaller is AsSiteCaller for the mobile variant M of body In: the
// mobile secret (bearer only) and the app's declared identity.
func AsMobileCaller[In, M any, P interface {
	*M
	MobileBody[In]
}](op func(c *Call, who Caller, in *In)) func(*Call) {
	return func(c *Call) {
		in := P(new(M))
		if !c.Decode(in) {
			return
		}
		if in.SiteSecret() != "" {
			c.fail(ErrInvalidField, "secret: mobile operations take the mobile secret in Authorization: Bearer only")
			return
		}
		tc, ok := c.mobileCaller(in.MobileIdentity())
		if ok {
			op(c, Caller{Workspace: tc.ws, AppID: tc.appID, Channel: "mobile"}, in.Site())
		}
	}
}

// AdminOnly wraps an admin handler with the admin token check.
func AdminOnly(h func(*Call)) func(*Call) {
	return func(c *Call) {
		// c.console: run in-process for a console session, which logged
		// in with this same token check (inprocess.go).
		if !c.console && !c.s.checkAdminToken(c.cat, c.bearer()) {
			c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd-admin"`)
			c.fail(ErrUnauthorized, "a valid admin token is required (Authorization: Bearer <admin token>)")
			return
		}
		h(c)
	}
}

// WithModuleErrors is WithModuleCodes for errors that may carry a module's
// own words for a shared code (an errcode.Code's Detail): the route's
// response lists the code with those words, while the ApiError schema
// keeps the code's one meaning. Codes already in list are skipped.
func WithModuleErrors(list []ErrorCode, errs ...error) []ErrorCode {
	out := append([]ErrorCode(nil), list...)
	for _, err := range errs {
		code, words, ok := errcode.From(err)
		if !ok || slices.ContainsFunc(out, func(e ErrorCode) bool { return e.Code == code.Code }) {
			continue
		}
		out = append(out, ErrorCode{Code: code.Code, Status: kindStatus(code.Kind), Meaning: words})
	}
	return out
}

// AdminErrors are the errors every admin operation can answer (a copy).
func AdminErrors() []ErrorCode { return append([]ErrorCode(nil), adminErrors...) }

// The hot path's surface (the rate-limit check): the strict flat scanner,
// the spec's {success,error} answers, a bearer view and pre-resolved
// outcomes, none of which allocates.

// SpecFail answers e in the spec's own {success:false,error} shape (the
// rate-limit check's and siteverify's).
func (c *Call) SpecFail(e ErrorCode) { c.specError(e.Status, e.Code) }

// BearerView is Bearer without a copy: a view of the request's header,
// which the caller must not keep past the request.
func (c *Call) BearerView() string { return c.bearerView() }

// SetRetryAfter sets the Retry-After header (at least 1 second).
func (c *Call) SetRetryAfter(seconds int64) { setRetryAfter(&c.Ctx.Response.Header, seconds) }

// Outcome is a decision an answer carries, for the cluster-wide summary
// (outcomes.go); resolve it once with OutcomeOf, so that setting it on a
// hot path costs no map lookup.
type Outcome uint8

// OutcomeOf is the outcome called name; a name outside the fixed set is
// "other".
func OutcomeOf(name string) Outcome {
	i, ok := outcomeIndex[name]
	if !ok || i == 0 {
		i = uint8(numOutcomes - 1)
	}
	return Outcome(i)
}

// SetOutcome records the decision this answer carries.
func (c *Call) SetOutcome(o Outcome) { c.outcome = uint8(o) }
