package api

import (
	"bytes"
	"context"
	_ "embed"
	kernel "github.com/trustd/trustd/platform/http"
	"html/template"
	"strings"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/platform/errcode"
)

// Hosted capture (spec 4.7): the page trustd serves for a hosted session,
// its assets, and the page's continuation calls authenticated by the
// hosted capability (X-Service-Hosted-Token). The rules are in
// identity/session/hosted.go.

// HostedTokenHeader carries the hosted capability.
const HostedTokenHeader = "X-Service-Hosted-Token"

//go:embed hosted/page.html
var hostedHTML string

// hostedPageTmpl renders the page with the branding of the session's
// site (html/template escapes the profile name and paths).
var hostedPageTmpl = template.Must(template.New("hosted").Parse(hostedHTML))

//go:embed hosted/app.js
var hostedJS []byte

//go:embed hosted/app.css
var hostedCSS []byte

// HostedSessionInput is the body of POST /identity/hosted/session.
type HostedSessionInput struct {
	IdentitySessionInput
	ParentOrigin string `json:"parent_origin,omitempty" doc:"The origin embedding the page in an iframe (scheme://host[:port]); its host must be on one of the workspace's sites. The page posts its outcome to it and may be framed only by it."`
	ReturnURL    string `json:"return_url,omitempty" doc:"Where the page sends the person when done (absolute https URL, http only for localhost; host on a site of the workspace); session_id is appended as a query parameter. At least one of parent_origin and return_url."`
	Theme        string `json:"theme,omitempty" enum:"system|light|dark" doc:"Default system."`
	Locale       string `json:"locale,omitempty" doc:"Language tag; en, fr, de and es are translated, others fall back to en."`
}

// HostedSessionView is a hosted session: the session capability for your
// server, and the URL to send the person to.
type HostedSessionView struct {
	session.Created
	URL string `json:"url" required:"true" doc:"The hosted page. Its fragment holds the hosted capability: hand the whole URL to the browser (iframe src or redirect) and never log it."`
}

func (x identityAPI) hostedRoutes(step, body []kernel.ErrorCode, faceErrs, live, complete []kernel.ErrorCode) []kernel.Route {
	h := []kernel.Auth{kernel.AuthHosted}
	hid := "/identity/hosted/{session_id}"
	cr := kernel.WithModuleCodes(append(append([]kernel.ErrorCode(nil), body...), kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrRateLimited, kernel.ErrUnavailable, kernel.ErrConflict),
		[]*errcode.Code{session.ErrScope, session.ErrConsent, session.ErrSessionLimit, session.ErrOrigin, documents.ErrCountry, documents.ErrDocumentType})
	asset := func(path, id, ctype string, b []byte) kernel.Route {
		return kernel.Route{Method: "GET", Path: path, ID: id, Tag: "Identity verification", ContentType: ctype,
			Summary: "An asset of the hosted capture page.", Handle: func(c *kernel.Call) {
				hd := &c.Ctx.Response.Header
				hd.Set("X-Content-Type-Options", "nosniff")
				hd.Set("Cache-Control", "public, max-age=300")
				c.Ctx.SetStatusCode(200)
				c.Ctx.SetContentType(ctype)
				c.Ctx.SetBody(b)
			}}
	}
	auth := []kernel.ErrorCode{kernel.ModuleCode(session.ErrCapability), kernel.ModuleCode(session.ErrNotFound), kernel.ErrRateLimited, kernel.ErrUnavailable}
	return []kernel.Route{
		{Method: "POST", Path: "/identity/hosted/session", ID: "identityHostedCreate", Tag: "Identity verification", Auth: []kernel.Auth{kernel.AuthCredential},
			Summary: "Start a session captured on trustd's hosted page; the answer holds the session capability (for your server) and the page URL (hosted capability in its fragment).",
			Body:    &HostedSessionInput{}, Status: 201, Result: &HostedSessionView{}, Errors: cr, Handle: sessionBody(credentialAuth, x.hostedCreate)},
		{Method: "GET", Path: hid, ID: "identityHostedPage", Tag: "Identity verification", ContentType: "text/html",
			Summary: "The hosted capture page (strict CSP, no third-party requests); it reads the capability from the fragment and removes it at once.",
			Handle:  x.hostedPage},
		asset("/identity/hosted-assets/app.js", "identityHostedScript", "text/javascript; charset=utf-8", hostedJS),
		asset("/identity/hosted-assets/app.css", "identityHostedStyle", "text/css; charset=utf-8", hostedCSS),
		{Method: "GET", Path: hid + "/info", ID: "identityHostedInfo", Tag: "Identity verification", Auth: h,
			Summary: "The hosted page's view of its session (status, steps, theme, locale, where to return).",
			Result:  &session.HostedInfo{}, Errors: auth, Handle: sessionOp(x.hostedCaller, func(ctx context.Context, _ session.Caller, id, tok string) (*session.HostedInfo, error) {
				return x.idv.Hosted(ctx, id, tok)
			})},
		{Method: "POST", Path: hid + "/document", ID: "identityHostedDocument", Tag: "Identity verification", Auth: h,
			Summary: "The hosted page's document step (as …/verification/{session_id}/document).", Body: &IdentityDocumentInput{},
			Result: &session.StepResult{}, Errors: kernel.WithModuleCodes(append(append([]kernel.ErrorCode(nil), step...), body...), documents.Errors), MaxBody: DocumentsMaxBody,
			Handle: sessionBody(x.hostedCaller, x.identityDocument)},
		{Method: "POST", Path: hid + "/liveness", ID: "identityHostedLiveness", Tag: "Identity verification", Auth: h,
			Summary: "The hosted page's liveness challenge.", Result: &session.Challenge{}, Errors: live,
			Handle: sessionOp(x.hostedCaller, x.idv.Liveness)},
		{Method: "POST", Path: hid + "/face", ID: "identityHostedFace", Tag: "Identity verification", Auth: h,
			Summary: "The hosted page's face step.", Body: &IdentityFaceInput{}, Result: &session.StepResult{}, Errors: faceErrs,
			MaxBody: IdentityFaceMaxBody,
			Handle:  sessionBody(x.hostedCaller, x.identityFace)},
		{Method: "POST", Path: hid + "/complete", ID: "identityHostedComplete", Tag: "Identity verification", Auth: h,
			Summary: "The hosted page's complete step.", Result: &session.Result{}, Errors: complete,
			Handle: sessionOp(x.hostedCaller, x.idv.Complete)},
	}
}

func (x identityAPI) hostedCreate(ctx context.Context, who session.Caller, _, _ string, in *HostedSessionInput) (*HostedSessionView, error) {
	v, err := x.idv.CreateHosted(ctx, who, session.HostedRequest{CreateRequest: session.CreateRequest{SubjectID: in.SubjectID,
		Action: in.Action, Assurance: in.AssuranceLevel, Country: in.Country, DocumentType: in.DocumentType,
		ConsentAccepted: in.ConsentAccepted, ConsentReference: in.ConsentReference},
		ParentOrigin: in.ParentOrigin, ReturnURL: in.ReturnURL, Theme: in.Theme, Locale: in.Locale})
	if err != nil {
		return nil, err
	}
	return &HostedSessionView{Created: v.Created, URL: x.baseURL + "/v1/identity/hosted/" + v.SessionID + "#" + v.HostedToken}, nil
}

// hostedCSP allows this origin's script, style and API only; camera
// frames stay in blob: and data: URLs; framing only by the session's
// parent_origin.
func hostedCSP(frameAncestors string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob: mediastream:" +
		"; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors " + frameAncestors +
		"; require-trusted-types-for 'script'"
}

func (x identityAPI) hostedPage(c *kernel.Call) {
	hd := &c.Ctx.Response.Header
	hd.Set("Content-Security-Policy", hostedCSP(x.idv.FrameAncestors(c.Param("session_id"))))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Permissions-Policy", "camera=(self), microphone=(), geolocation=()")
	var page struct{ Brand *branding.View }
	if p, ok := branding.ForHostedSession(c.Catalog(), c.Param("session_id")); ok {
		page.Brand = p.View(branding.DefaultSize)
	}
	var b bytes.Buffer
	if err := hostedPageTmpl.Execute(&b, &page); err != nil {
		c.FailErr(err)
		return
	}
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("text/html; charset=utf-8")
	c.Ctx.SetBody(b.Bytes())
}

// hostedCaller reads the hosted capability; the module checks it.
func (x identityAPI) hostedCaller(c *kernel.Call) (session.Caller, string, bool) {
	tok := string(c.Ctx.Request.Header.Peek(HostedTokenHeader))
	if !strings.HasPrefix(tok, session.HostedPrefix) {
		c.FailErr(session.ErrCapability)
		return session.Caller{}, "", false
	}
	return x.idv.HostedCaller(c.Param("session_id")), tok, true
}
