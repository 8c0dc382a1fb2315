package widget

import (
	"crypto/rand"
	_ "embed" // the demo template
	"encoding/base64"
	"html/template"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The --dev demo: a login form protected by the widget. Its backend does
// what a customer backend must do (spec 7.2): send the token to siteverify
// with the site's secret and the visitor's IP, then validate the whole
// result before "signing in". The transport makes the siteverify call
// (through its own handler) and renders; the page data and the checks are
// here.
//
// Both pages are CSP-clean: a fresh nonce per answer, no 'unsafe-inline',
// and Trusted Types required, which the widget honours (it never writes
// HTML from strings).

//go:embed demo.html
var demoTemplates string

// DemoTemplates parses the demo's two templates, "page" and "result".
func DemoTemplates() (*template.Template, error) {
	return template.New("demo").Parse(demoTemplates)
}

// DemoAction is the action the demo's widget binds its token to.
const DemoAction = "login"

// The demo page's choices; the first of each is the default.
var (
	DemoThemes    = []string{"auto", "light", "dark"}
	DemoLanguages = []string{"en", "de", "fr", "es"}
	DemoSizes     = []string{"normal", "compact", "flexible"}
)

// DemoPage is the data of the demo's form page.
type DemoPage struct {
	Nonce, ScriptURL, SiteKey, Action string
	Theme, Language, Size             string
	Themes, Languages, Sizes          []string
	Error                             string
}

// NewDemoPage is the form page for the query's choices; unknown choices
// are the defaults.
func NewDemoPage(scriptURL, siteKey, theme, language, size string) *DemoPage {
	return &DemoPage{Nonce: NewNonce(), ScriptURL: scriptURL, SiteKey: siteKey, Action: DemoAction,
		Theme: pick(theme, DemoThemes), Language: pick(language, DemoLanguages), Size: pick(size, DemoSizes),
		Themes: DemoThemes, Languages: DemoLanguages, Sizes: DemoSizes}
}

// DemoCheck is one check of spec 7.2 and whether it held.
type DemoCheck struct {
	Name string
	OK   bool
}

// DemoResult is the data of the demo's result page.
type DemoResult struct {
	Nonce    string
	Accepted bool
	Username string
	Status   int
	Checks   []DemoCheck
	JSON     string
}

// demoSiteverify is the part of the siteverify answer (spec 2.2) the demo
// validates; the page shows the whole answer as received.
type demoSiteverify struct {
	Success        bool     `json:"success"`
	Hostname       *string  `json:"hostname"`
	Action         *string  `json:"action"`
	Score          float64  `json:"score"`
	ScoreThreshold float64  `json:"score_threshold"`
	ScoreEnforced  bool     `json:"score_enforced"`
	ErrorCodes     []string `json:"error-codes"`
}

// NewDemoResult applies the client validation order of spec 7.2 to a
// siteverify answer (status and body); allowsHost is the site's hostname
// allow-list.
func NewDemoResult(username string, status int, body []byte, allowsHost func(string) bool) *DemoResult {
	var v demoSiteverify
	validJSON := json.Unmarshal(body, &v, json.RejectUnknownMembers(false)) == nil
	checks := []DemoCheck{
		{"request completed with HTTP 200", status == 200},
		{"body is valid JSON", validJSON},
		{"success is exactly true", validJSON && v.Success},
		{"error-codes is empty", validJSON && v.ErrorCodes != nil && len(v.ErrorCodes) == 0},
		{"action equals \"" + DemoAction + "\"", v.Action != nil && *v.Action == DemoAction},
		{"hostname is on the site's allow-list (exact match)", v.Hostname != nil && allowsHost(*v.Hostname)},
		{scoreCheck(v), v.ScoreEnforced || v.Score >= v.ScoreThreshold},
	}
	ok := true
	for _, ch := range checks {
		ok = ok && ch.OK
	}
	return &DemoResult{Nonce: NewNonce(), Accepted: ok, Username: username, Status: status, Checks: checks, JSON: indentJSON(body)}
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

// DemoCSP is a strict policy: scripts and inline styles only with the
// nonce, the widget's stylesheet, images and API calls from this origin.
func DemoCSP(nonce string) string {
	n := "'nonce-" + nonce + "'"
	return "default-src 'none'; script-src " + n + " 'strict-dynamic'; style-src 'self' " + n +
		"; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'" +
		"; require-trusted-types-for 'script'"
}

// NewNonce is 144 random bits in base64url, which CSP accepts and HTML
// attributes carry without escaping.
func NewNonce() string {
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
