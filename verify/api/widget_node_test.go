package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

func TestWidgetFilesAreServedCacheable(t *testing.T) {
	tn := mustStartNode(t)
	plain := tn.do("GET", "/v1/widget/api.js", "", nil, "Accept-Encoding", "identity")
	if plain.status != 200 {
		t.Fatalf("GET api.js = %d %s", plain.status, plain.body)
	}
	version := plain.header.Get("X-Widget-Version")
	etag := plain.header.Get("ETag")
	css := tn.do("GET", "/v1/widget/api.css", "", nil, "Accept-Encoding", "identity")

	tests := []struct {
		name         string
		path         string
		headers      []string
		status       int
		contentType  string
		cacheControl string
		gzip         bool
	}{
		{"the script is JavaScript with a short public cache", "/v1/widget/api.js", nil,
			200, "application/javascript; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", false},
		{"the versioned script URL is cached for a year as immutable", "/v1/widget/api.js?v=" + version, nil,
			200, "application/javascript; charset=utf-8", "public, max-age=31536000, immutable", false},
		{"a stale version still gets the current script with the short cache", "/v1/widget/api.js?v=0000000000000000", nil,
			200, "application/javascript; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", false},
		{"a current If-None-Match answers 304", "/v1/widget/api.js", []string{"If-None-Match", `"x", ` + etag},
			304, "", "public, max-age=300, stale-while-revalidate=3600", false},
		{"a weak If-None-Match of the gzip variant answers 304 too", "/v1/widget/api.js", []string{"If-None-Match", `W/"` + version + `-gz"`},
			304, "", "public, max-age=300, stale-while-revalidate=3600", false},
		{"an old If-None-Match gets the file", "/v1/widget/api.js", []string{"If-None-Match", `"0000000000000000"`},
			200, "application/javascript; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", false},
		{"a client that accepts gzip gets gzip", "/v1/widget/api.js", []string{"Accept-Encoding", "gzip, br"},
			200, "application/javascript; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", true},
		{"the stylesheet is CSS", "/v1/widget/api.css", nil,
			200, "text/css; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", false},
		{"the legacy base serves the script too", "/widget/api.js", nil,
			200, "application/javascript; charset=utf-8", "public, max-age=300, stale-while-revalidate=3600", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			headers := tc.headers
			if !tc.gzip {
				headers = append([]string{"Accept-Encoding", "identity"}, headers...)
			}
			r := tn.do("GET", tc.path, "", nil, headers...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d", r.status, tc.status)
			}
			if got := r.header.Get("Cache-Control"); got != tc.cacheControl {
				t.Errorf("Cache-Control %q, want %q", got, tc.cacheControl)
			}
			if r.header.Get("ETag") == "" || r.header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("ETag %q Vary %q", r.header.Get("ETag"), r.header.Get("Vary"))
			}
			if tc.status == 304 {
				if len(r.body) != 0 {
					t.Errorf("304 with a %d-byte body", len(r.body))
				}
				return
			}
			if got := r.header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("missing nosniff or CORS: %v", r.header)
			}
			body := r.body
			if tc.gzip {
				if r.header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding %q", r.header.Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				t.Logf("api.js: %d bytes, %d gzipped", len(body), len(r.body))
			}
			want := plain.body
			if strings.HasSuffix(tc.path, ".css") {
				want = css.body
			}
			if !bytes.Equal(body, want) {
				t.Error("the body differs from the plain answer")
			}
		})
	}

	t.Run("the script loads exactly the served stylesheet version", func(t *testing.T) {
		cssVersion := css.header.Get("X-Widget-Version")
		if !bytes.Contains(plain.body, []byte("var CSS_VERSION = '"+cssVersion+"'")) {
			t.Fatalf("api.js does not carry the stylesheet version %s", cssVersion)
		}
	})
	t.Run("the contract lists both files with their content types", func(t *testing.T) {
		doc := string(tn.do("GET", "/v1/openapi.json", "", nil).body)
		for _, want := range []string{`"operationId":"getWidgetScript"`, `"application/javascript"`, `"operationId":"getWidgetStylesheet"`, `"text/css"`} {
			if !strings.Contains(doc, want) {
				t.Errorf("openapi.json lacks %s", want)
			}
		}
		if strings.Contains(doc, `"getDemo"`) {
			t.Error("the demo is in the contract of a node without --dev")
		}
	})
	t.Run("without --dev there is no demo", func(t *testing.T) {
		if r := tn.do("GET", "/v1/demo", "", nil); r.status != 404 {
			t.Fatalf("GET /v1/demo = %d", r.status)
		}
	})
}

var nonceAttr = regexp.MustCompile(`<(script|style)\b[^>]*>`)

func TestDemoPageIsCSPCleanAndVerifiesThroughSiteverify(t *testing.T) {
	tn := mustStartNode(t, func(c *node.Config) { c.Dev = true })
	dev := tn.n.Dev()
	page := tn.do("GET", "/v1/demo?theme=dark&language=de&size=nonsense", "", nil)
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /v1/demo = %d %s", page.status, page.header.Get("Content-Type"))
	}
	csp := page.header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]{24})' 'strict-dynamic'`).FindStringSubmatch(csp)
	if m == nil || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("CSP is not strict: %q", csp)
	}
	nonce := m[1]
	html := string(page.body)
	tags := nonceAttr.FindAllString(html, -1)
	if len(tags) < 3 {
		t.Fatalf("expected the style, the widget script and the callbacks script, found %q", tags)
	}
	for _, tag := range tags {
		if !strings.Contains(tag, `nonce="`+nonce+`"`) {
			t.Errorf("%s lacks the CSP nonce", tag)
		}
	}
	if strings.Contains(html, " style=") || strings.Contains(html, " onclick=") {
		t.Error("inline style or handler attributes would need 'unsafe-inline'")
	}
	for _, want := range []string{`data-sitekey="` + dev.SiteKey + `"`, `data-action="login"`, `data-theme="dark"`, `data-language="de"`, `data-size="normal"`, `src="/v1/widget/api.js?v=`} {
		if !strings.Contains(html, want) {
			t.Errorf("demo page lacks %s", want)
		}
	}
	if strings.Contains(html, dev.Secret) {
		t.Fatal("the demo page leaks the site secret")
	}
	again := tn.do("GET", "/v1/demo", "", nil)
	if again.header.Get("Content-Security-Policy") == csp {
		t.Error("the nonce is the same on two answers")
	}

	form := url.Values{"username": {"ada"}, "password": {"x"}, "service-response": {"not-a-token"}}
	r := tn.do("POST", "/v1/demo/login", "", nil, "Content-Type", "application/x-www-form-urlencoded")
	if r.status != 400 {
		t.Fatalf("a login without a body = %d %s", r.status, r.body)
	}
	r = tn.doForm("/v1/demo/login", form)
	if r.status != 200 || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("POST /v1/demo/login = %d, CSP %q", r.status, r.header.Get("Content-Security-Policy"))
	}
	res := string(r.body)
	for _, want := range []string{"Sign-in refused", `id="siteverify-result"`, "&#34;success&#34;: false", "invalid-input-response"} {
		if !strings.Contains(res, want) {
			t.Errorf("result page lacks %s:\n%s", want, res)
		}
	}

	// A real token, got as the widget gets one, signs in once.
	tok := widgetToken(t, tn, dev.SiteKey, "login")
	r = tn.doForm("/v1/demo/login", url.Values{"username": {"ada"}, "service-response": {tok}})
	res = string(r.body)
	for _, want := range []string{"&#34;success&#34;: true", "&#34;action&#34;: &#34;login&#34;", "&#34;hostname&#34;: &#34;127.0.0.1&#34;", `<li class="ok">success is exactly true</li>`} {
		if !strings.Contains(res, want) {
			t.Errorf("result page lacks %s:\n%s", want, res)
		}
	}
	r = tn.doForm("/v1/demo/login", url.Values{"username": {"ada"}, "service-response": {tok}})
	if !strings.Contains(string(r.body), "timeout-or-duplicate") || !strings.Contains(string(r.body), "Sign-in refused") {
		t.Errorf("a replayed token is not refused:\n%s", r.body)
	}
}

// widgetToken does what the widget does: get a challenge for the site as
// a page on 127.0.0.1, solve its proof of work, redeem it.
func widgetToken(t *testing.T, tn *testNode, siteKey, action string) string {
	t.Helper()
	return nodetest.WidgetToken(t, tn.tn, siteKey, action)
}

// doForm posts a form-encoded body.
func (tn *testNode) doForm(path string, form url.Values) response {
	tn.t.Helper()
	return tn.do("POST", path, "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
}
