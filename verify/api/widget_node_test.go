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
	tn := nodetest.Start(t)
	plain := tn.Do("GET", "/v1/widget/api.js", "", nil, "Accept-Encoding", "identity")
	if plain.Status != 200 {
		t.Fatalf("GET api.js = %d %s", plain.Status, plain.Body)
	}
	version := plain.Header.Get("X-Widget-Version")
	etag := plain.Header.Get("ETag")
	css := tn.Do("GET", "/v1/widget/api.css", "", nil, "Accept-Encoding", "identity")

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
			r := tn.Do("GET", tc.path, "", nil, headers...)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d", r.Status, tc.status)
			}
			if got := r.Header.Get("Cache-Control"); got != tc.cacheControl {
				t.Errorf("Cache-Control %q, want %q", got, tc.cacheControl)
			}
			if r.Header.Get("ETag") == "" || r.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("ETag %q Vary %q", r.Header.Get("ETag"), r.Header.Get("Vary"))
			}
			if tc.status == 304 {
				if len(r.Body) != 0 {
					t.Errorf("304 with a %d-byte body", len(r.Body))
				}
				return
			}
			if got := r.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("missing nosniff or CORS: %v", r.Header)
			}
			body := r.Body
			if tc.gzip {
				if r.Header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding %q", r.Header.Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(r.Body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				t.Logf("api.js: %d bytes, %d gzipped", len(body), len(r.Body))
			}
			want := plain.Body
			if strings.HasSuffix(tc.path, ".css") {
				want = css.Body
			}
			if !bytes.Equal(body, want) {
				t.Error("the body differs from the plain answer")
			}
		})
	}

	t.Run("the script loads exactly the served stylesheet version", func(t *testing.T) {
		cssVersion := css.Header.Get("X-Widget-Version")
		if !bytes.Contains(plain.Body, []byte("var CSS_VERSION = '"+cssVersion+"'")) {
			t.Fatalf("api.js does not carry the stylesheet version %s", cssVersion)
		}
	})
	t.Run("the contract lists both files with their content types", func(t *testing.T) {
		doc := string(tn.Do("GET", "/v1/openapi.json", "", nil).Body)
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
		if r := tn.Do("GET", "/v1/demo", "", nil); r.Status != 404 {
			t.Fatalf("GET /v1/demo = %d", r.Status)
		}
	})
}

var nonceAttr = regexp.MustCompile(`<(script|style)\b[^>]*>`)

func TestDemoPageIsCSPCleanAndVerifiesThroughSiteverify(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	dev := tn.N.Dev()
	page := tn.Do("GET", "/v1/demo?theme=dark&language=de&size=nonsense", "", nil)
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /v1/demo = %d %s", page.Status, page.Header.Get("Content-Type"))
	}
	csp := page.Header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]{24})' 'strict-dynamic'`).FindStringSubmatch(csp)
	if m == nil || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("CSP is not strict: %q", csp)
	}
	nonce := m[1]
	html := string(page.Body)
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
	again := tn.Do("GET", "/v1/demo", "", nil)
	if again.Header.Get("Content-Security-Policy") == csp {
		t.Error("the nonce is the same on two answers")
	}

	form := url.Values{"username": {"ada"}, "password": {"x"}, "service-response": {"not-a-token"}}
	r := tn.Do("POST", "/v1/demo/login", "", nil, "Content-Type", "application/x-www-form-urlencoded")
	if r.Status != 400 {
		t.Fatalf("a login without a body = %d %s", r.Status, r.Body)
	}
	r = doForm(tn, "/v1/demo/login", form)
	if r.Status != 200 || r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("POST /v1/demo/login = %d, CSP %q", r.Status, r.Header.Get("Content-Security-Policy"))
	}
	res := string(r.Body)
	for _, want := range []string{"Sign-in refused", `id="siteverify-result"`, "&#34;success&#34;: false", "invalid-input-response"} {
		if !strings.Contains(res, want) {
			t.Errorf("result page lacks %s:\n%s", want, res)
		}
	}

	// A real token, got as the widget gets one, signs in once.
	tok := widgetToken(t, tn, dev.SiteKey, "login")
	r = doForm(tn, "/v1/demo/login", url.Values{"username": {"ada"}, "service-response": {tok}})
	res = string(r.Body)
	for _, want := range []string{"&#34;success&#34;: true", "&#34;action&#34;: &#34;login&#34;", "&#34;hostname&#34;: &#34;127.0.0.1&#34;", `<li class="ok">success is exactly true</li>`} {
		if !strings.Contains(res, want) {
			t.Errorf("result page lacks %s:\n%s", want, res)
		}
	}
	r = doForm(tn, "/v1/demo/login", url.Values{"username": {"ada"}, "service-response": {tok}})
	if !strings.Contains(string(r.Body), "timeout-or-duplicate") || !strings.Contains(string(r.Body), "Sign-in refused") {
		t.Errorf("a replayed token is not refused:\n%s", r.Body)
	}
}

// widgetToken does what the widget does: get a challenge for the site as
// a page on 127.0.0.1, solve its proof of work, redeem it.
func widgetToken(t *testing.T, tn *nodetest.Node, siteKey, action string) string {
	t.Helper()
	return nodetest.WidgetToken(t, tn, siteKey, action)
}

// doForm posts a form-encoded body.
func doForm(tn *nodetest.Node, path string, form url.Values) nodetest.Response {
	tn.T.Helper()
	return tn.Do("POST", path, "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
}
