package http

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/verify/widget"
)

// The --dev demo's transport: a login form protected by the widget, and
// its backend, which calls /siteverify through this node's own request
// handler (the exact production path: routing, ingress limit, metrics,
// without a network round trip) and shows the checks of spec 7.2 that
// verify/widget applies to the answer.

// DemoLoginForm is the demo's login form.
type DemoLoginForm struct {
	Username        string `json:"username" doc:"Any name, 1 to 100 characters; the demo checks no password."`
	Password        string `json:"password" doc:"Ignored."`
	ServiceResponse string `json:"service-response" required:"true" doc:"The widget's response token."`
}

func (s *Server) demoRoutes(assets widget.Assets) []Route {
	tpl := template.Must(widget.DemoTemplates())
	scriptURL := PublicBase + "/widget/api.js?v=" + assets.JS.Version
	return []Route{
		{Method: "GET", Path: "/demo", ID: "getDemo", Tag: "Developer demo",
			Summary:     "--dev only: a login form protected by the widget. Query theme=auto|light|dark, language=en|de|fr|es, size=normal|compact|flexible.",
			ContentType: "text/html", Errors: []ErrorCode{ErrUnavailable},
			Handle: func(c *Call) {
				siteKey, _ := s.demoSite()
				if siteKey == "" {
					c.fail(ErrUnavailable, "the dev workspace is not seeded yet")
					return
				}
				q := c.Ctx.QueryArgs()
				p := widget.NewDemoPage(scriptURL, siteKey, string(q.Peek("theme")), string(q.Peek("language")), string(q.Peek("size")))
				s.renderDemo(c, tpl, "page", p.Nonce, p)
			}},
		{Method: "POST", Path: "/demo/login", ID: "postDemoLogin", Tag: "Developer demo",
			Summary: "--dev only: the demo form's backend. Verifies service-response at /siteverify with the dev secret and shows the whole result and each check of spec 7.2.",
			Body:    &DemoLoginForm{}, Form: true, ContentType: "text/html",
			Errors: []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrUnavailable},
			Handle: func(c *Call) {
				var in DemoLoginForm
				if !s.decodeDemoForm(c, &in) {
					return
				}
				siteKey, secret := s.demoSite()
				if secret == "" {
					c.fail(ErrUnavailable, "the dev workspace is not seeded yet")
					return
				}
				status, body := s.siteverifyLocal(c, url.Values{
					"secret": {secret}, "response": {in.ServiceResponse},
					"remoteip": {c.ClientIP()}, "action": {widget.DemoAction},
				})
				site := c.Catalog().SiteByKey(siteKey)
				r := widget.NewDemoResult(in.Username, status, body, func(h string) bool { return site != nil && site.AllowsHost(h) })
				s.renderDemo(c, tpl, "result", r.Nonce, r)
			}},
	}
}

// demoSite is the dev site's key and secret, or "" before seeding.
func (s *Server) demoSite() (siteKey, secret string) {
	if s.cfg.DemoSite == nil {
		return "", ""
	}
	return s.cfg.DemoSite()
}

// decodeDemoForm accepts the browser's form post or the same fields as JSON.
func (s *Server) decodeDemoForm(c *Call, in *DemoLoginForm) bool {
	if c.isJSON() {
		if !c.decode(in) {
			return false
		}
	} else {
		ct := c.Ctx.Request.Header.ContentType()
		if !bytes.HasPrefix(ct, []byte("application/x-www-form-urlencoded")) {
			c.fail(ErrUnsupportedType, "Content-Type must be application/x-www-form-urlencoded or application/json")
			return false
		}
		args := c.Ctx.PostArgs()
		in.Username = string(args.Peek("username"))
		in.Password = string(args.Peek("password"))
		in.ServiceResponse = string(args.Peek("service-response"))
	}
	in.Username = strings.TrimSpace(in.Username)
	switch {
	case in.Username == "" || len(in.Username) > 100:
		c.fail(ErrInvalidField, "username: 1 to 100 characters")
		return false
	case len(in.ServiceResponse) > 4096:
		c.fail(ErrInvalidField, "service-response: longer than any token")
		return false
	}
	return true
}

// siteverifyLocal runs POST /v1/siteverify through this server's own
// handler, as a request from the demo visitor's address.
func (s *Server) siteverifyLocal(c *Call, form url.Values) (int, []byte) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI(PublicBase + "/siteverify")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.SetBodyString(form.Encode())
	var inner fasthttp.RequestCtx
	inner.Init(&req, c.Ctx.RemoteAddr(), nil)
	s.serve(&inner)
	return inner.Response.StatusCode(), append([]byte(nil), inner.Response.Body()...)
}

func (s *Server) renderDemo(c *Call, tpl *template.Template, name, nonce string, data any) {
	var buf bytes.Buffer
	if err := tpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.failErr(err)
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("Content-Security-Policy", widget.DemoCSP(nonce))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("text/html; charset=utf-8")
	c.Ctx.SetBody(buf.Bytes())
}
