package http

import (
	"bytes"
	"crypto/rand"
	_ "embed" // the demo template
	"encoding/base64"
	"html/template"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fasthttp"
)

// The --dev demo: a login form protected by the widget. Its server side
// does what a customer backend must do (spec 7.2): send the token to
// /siteverify with the site's secret and the visitor's IP, then validate
// the whole result before "signing in". The /siteverify call goes through
// this node's own request handler, so it runs the exact production path
// (routing, ingress limit, metrics) without a network round trip.
//
// Both pages are CSP-clean: a fresh nonce per answer, no 'unsafe-inline',
// and Trusted Types required, which the widget honours (it never writes
// HTML from strings).

//go:embed widget/demo.html
var demoTemplates string

// DemoLoginForm is the demo's login form.
type DemoLoginForm struct {
	Username        string `json:"username" doc:"Any name, 1 to 100 characters; the demo checks no password."`
	Password        string `json:"password" doc:"Ignored."`
	ServiceResponse string `json:"service-response" required:"true" doc:"The widget's response token."`
}

// demoSiteverify is the part of the /siteverify answer (spec 2.2) the
// demo validates; the page shows the whole answer as received.
type demoSiteverify struct {
	Success        bool     `json:"success"`
	Hostname       *string  `json:"hostname"`
	Action         *string  `json:"action"`
	Score          float64  `json:"score"`
	ScoreThreshold float64  `json:"score_threshold"`
	ScoreEnforced  bool     `json:"score_enforced"`
	ErrorCodes     []string `json:"error-codes"`
}

// demoAction is the action the demo's widget binds its token to.
const demoAction = "login"

var demoThemes = []string{"auto", "light", "dark"}
var demoLanguages = []string{"en", "de", "fr", "es"}
var demoSizes = []string{"normal", "compact", "flexible"}

type demoPage struct {
	Nonce, ScriptURL, SiteKey, Action string
	Theme, Language, Size             string
	Themes, Languages, Sizes          []string
	Error                             string
}

type demoCheck struct {
	Name string
	OK   bool
}

type demoResult struct {
	Nonce    string
	Accepted bool
	Username string
	Status   int
	Checks   []demoCheck
	JSON     string
}

func (s *Server) demoRoutes(assets widgetAssets) []Route {
	tpl := template.Must(template.New("demo").Parse(demoTemplates))
	scriptURL := PublicBase + "/widget/api.js?v=" + assets.js.version
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
				p := demoPage{
					Nonce: newNonce(), ScriptURL: scriptURL, SiteKey: siteKey, Action: demoAction,
					Theme:    pick(string(q.Peek("theme")), demoThemes),
					Language: pick(string(q.Peek("language")), demoLanguages),
					Size:     pick(string(q.Peek("size")), demoSizes),
					Themes:   demoThemes, Languages: demoLanguages, Sizes: demoSizes,
				}
				s.renderDemo(c, tpl, "page", p.Nonce, &p)
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
					"remoteip": {c.ClientIP()}, "action": {demoAction},
				})
				r := demoResult{Nonce: newNonce(), Username: in.Username, Status: status, JSON: indentJSON(body)}
				r.Checks, r.Accepted = s.demoChecks(c, siteKey, status, body)
				s.renderDemo(c, tpl, "result", r.Nonce, &r)
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

// demoChecks applies the client validation order of spec 7.2.
func (s *Server) demoChecks(c *Call, siteKey string, status int, body []byte) ([]demoCheck, bool) {
	var v demoSiteverify
	validJSON := json.Unmarshal(body, &v, json.RejectUnknownMembers(false)) == nil
	hostOK := false
	if site := c.Catalog().SiteByKey(siteKey); site != nil && v.Hostname != nil {
		hostOK = site.AllowsHost(*v.Hostname)
	}
	checks := []demoCheck{
		{"request completed with HTTP 200", status == 200},
		{"body is valid JSON", validJSON},
		{"success is exactly true", validJSON && v.Success},
		{"error-codes is empty", validJSON && v.ErrorCodes != nil && len(v.ErrorCodes) == 0},
		{"action equals \"" + demoAction + "\"", v.Action != nil && *v.Action == demoAction},
		{"hostname is on the site's allow-list (exact match)", hostOK},
		{scoreCheck(v), v.ScoreEnforced || v.Score >= v.ScoreThreshold},
	}
	ok := true
	for _, ch := range checks {
		ok = ok && ch.OK
	}
	return checks, ok
}

// scoreCheck names the score check with its numbers: when the service did
// not enforce the threshold, the backend applies it itself.
func scoreCheck(v demoSiteverify) string {
	if v.ScoreEnforced {
		return "score threshold already enforced by the service (score_enforced is true)"
	}
	return "score " + strconv.FormatFloat(v.Score, 'f', 3, 64) + " meets the threshold " +
		strconv.FormatFloat(v.ScoreThreshold, 'f', 3, 64) + " (the backend's own check: score_enforced is false)"
}

func (s *Server) renderDemo(c *Call, tpl *template.Template, name, nonce string, data any) {
	var buf bytes.Buffer
	if err := tpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.failErr(err)
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("Content-Security-Policy", demoCSP(nonce))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("text/html; charset=utf-8")
	c.Ctx.SetBody(buf.Bytes())
}

// demoCSP is a strict policy: scripts and inline styles only with the
// nonce, the widget's stylesheet, images and API calls from this origin.
func demoCSP(nonce string) string {
	n := "'nonce-" + nonce + "'"
	return "default-src 'none'; script-src " + n + " 'strict-dynamic'; style-src 'self' " + n +
		"; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'" +
		"; require-trusted-types-for 'script'"
}

// newNonce is 144 random bits in base64url, which CSP accepts and HTML
// attributes carry without escaping.
func newNonce() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func pick(v string, allowed []string) string {
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	return allowed[0]
}

func indentJSON(b []byte) string {
	v := jsontext.Value(append([]byte(nil), b...))
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return string(b)
	}
	return string(v)
}
