package api

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify/widget"
)

// The --dev demo: a login form protected by the widget, and its backend,
// which calls /siteverify through this node's own request handler (the
// exact production path: routing, ingress limit, metrics, without a
// network round trip) and shows the checks of spec 7.2 that verify/widget
// applies to the answer.

// DemoLoginForm is the demo's login form.
type DemoLoginForm struct {
	Username        string `json:"username" doc:"Any name, 1 to 100 characters; the demo checks no password."`
	Password        string `json:"password" doc:"Ignored."`
	ServiceResponse string `json:"service-response" required:"true" doc:"The widget's response token."`
}

// demo is the demo's routes over the dev site.
type demo struct {
	site func() (siteKey, secret string)
}

func (d demo) routes(assets widget.Assets) []kernel.Route {
	tpl := template.Must(widget.DemoTemplates())
	scriptURL := kernel.PublicBase + "/widget/api.js?v=" + assets.JS.Version
	return []kernel.Route{
		{Method: "GET", Path: "/demo", ID: "getDemo", Tag: "Developer demo",
			Summary:     "--dev only: a login form protected by the widget. Query theme=auto|light|dark, language=en|de|fr|es, size=normal|compact|flexible.",
			ContentType: "text/html", Errors: []kernel.ErrorCode{kernel.ErrUnavailable},
			Handle: func(c *kernel.Call) {
				siteKey, _ := d.demoSite()
				if siteKey == "" {
					c.Fail(kernel.ErrUnavailable, "the dev workspace is not seeded yet")
					return
				}
				q := c.Ctx.QueryArgs()
				p := widget.NewDemoPage(scriptURL, siteKey, string(q.Peek("theme")), string(q.Peek("language")), string(q.Peek("size")))
				renderDemo(c, tpl, "page", p.Nonce, p)
			}},
		{Method: "POST", Path: "/demo/login", ID: "postDemoLogin", Tag: "Developer demo",
			Summary: "--dev only: the demo form's backend. Verifies service-response at /siteverify with the dev secret and shows the whole result and each check of spec 7.2.",
			Body:    &DemoLoginForm{}, Form: true, ContentType: "text/html",
			Errors: []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrUnavailable},
			Handle: func(c *kernel.Call) {
				var in DemoLoginForm
				if !decodeDemoForm(c, &in) {
					return
				}
				siteKey, secret := d.demoSite()
				if secret == "" {
					c.Fail(kernel.ErrUnavailable, "the dev workspace is not seeded yet")
					return
				}
				status, body := siteverifyLocal(c, url.Values{
					"secret": {secret}, "response": {in.ServiceResponse},
					"remoteip": {c.ClientIP()}, "action": {widget.DemoAction},
				})
				site := c.Catalog().SiteByKey(siteKey)
				r := widget.NewDemoResult(in.Username, status, body, func(h string) bool { return site != nil && site.AllowsHost(h) })
				renderDemo(c, tpl, "result", r.Nonce, r)
			}},
	}
}

// demoSite is the dev site's key and secret, or "" before seeding.
func (d demo) demoSite() (siteKey, secret string) {
	if d.site == nil {
		return "", ""
	}
	return d.site()
}

// decodeDemoForm accepts the browser's form post or the same fields as JSON.
func decodeDemoForm(c *kernel.Call, in *DemoLoginForm) bool {
	if c.IsJSON() {
		if !c.Decode(in) {
			return false
		}
	} else {
		ct := c.Ctx.Request.Header.ContentType()
		if !bytes.HasPrefix(ct, []byte("application/x-www-form-urlencoded")) {
			c.Fail(kernel.ErrUnsupportedType, "Content-Type must be application/x-www-form-urlencoded or application/json")
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
		c.Fail(kernel.ErrInvalidField, "username: 1 to 100 characters")
		return false
	case len(in.ServiceResponse) > 4096:
		c.Fail(kernel.ErrInvalidField, "service-response: longer than any token")
		return false
	}
	return true
}

// siteverifyLocal runs POST /v1/siteverify through this node's own
// handler, as a request from the demo visitor's address.
func siteverifyLocal(c *kernel.Call, form url.Values) (int, []byte) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI(kernel.PublicBase + "/siteverify")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.SetBodyString(form.Encode())
	return c.Local(&req)
}

func renderDemo(c *kernel.Call, tpl *template.Template, name, nonce string, data any) {
	var buf bytes.Buffer
	if err := tpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.FailErr(err)
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
