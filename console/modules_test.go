package console

import (
	"bytes"
	"mime/multipart"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// postFile posts a multipart form (fields, and one file in field "logo").
func (b *browser) postFile(path string, fields map[string]string, file []byte) answer {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	if file != nil {
		fw, _ := w.CreateFormFile("logo", "logo.png")
		fw.Write(file)
	}
	w.Close()
	var rq fasthttp.Request
	rq.Header.SetMethod("POST")
	rq.SetRequestURI(path)
	rq.Header.SetHost("console.test")
	for k, v := range b.cookies {
		rq.Header.SetCookie(k, v)
	}
	rq.Header.SetContentType(w.FormDataContentType())
	rq.SetBody(body.Bytes())
	var ctx fasthttp.RequestCtx
	ctx.Init(&rq, &net.TCPAddr{IP: net.ParseIP(b.ip), Port: 5000}, nil)
	b.c.Serve(&ctx)
	return answer{status: ctx.Response.StatusCode(), header: map[string]string{"Location": string(ctx.Response.Header.Peek("Location"))}, body: string(ctx.Response.Body())}
}

// TestModulePagesRoles drives the review queue, journeys, branding and
// messaging pages as each role: what a role may not do is refused before
// the admin API, what it may do reaches the admin operation with the
// form's values.
func TestModulePagesRoles(t *testing.T) {
	type step struct {
		method, path string
		form         url.Values
		want         int
		call         string // a write the admin API must have received
	}
	resolve := url.Values{"decision": {"verified"}, "note": {"document checked by hand"}}
	journey := url.Values{"key": {"new.one"}, "definition": {`{"name":"N","method":"human_verification"}`}}
	brand := url.Values{"name": {"New"}, "primary": {"#aabbcc"}}
	for _, tc := range []struct {
		email string
		steps []step
	}{
		{"view@x.io", []step{
			{"GET", "/console/workspaces/w1/reviews", nil, 200, ""},
			{"GET", "/console/workspaces/w1/journeys/pay.confirm", nil, 200, ""},
			{"GET", "/console/workspaces/w1/branding/b1", nil, 200, ""},
			{"GET", "/console/workspaces/w1/messaging", nil, 200, ""},
			{"POST", "/console/workspaces/w1/reviews/c1/resolve", resolve, 403, ""},
			{"POST", "/console/workspaces/w1/journeys", journey, 403, ""},
			{"POST", "/console/workspaces/w1/journeys/pay.confirm", journey, 403, ""},
			{"POST", "/console/workspaces/w1/journeys/pay.confirm/delete", url.Values{}, 403, ""},
			{"POST", "/console/workspaces/w1/branding", brand, 403, ""},
			{"POST", "/console/workspaces/w1/branding/b1", brand, 403, ""},
			{"POST", "/console/workspaces/w1/branding/b1/logo/delete", url.Values{}, 403, ""},
		}},
		{"edit@x.io", []step{
			{"POST", "/console/workspaces/w1/reviews/c1/resolve", resolve, 403, ""},
			{"POST", "/console/workspaces/w1/journeys", journey, 303, `PUT /workspaces/w1/journeys/new.one {"name":"N","method":"human_verification"}`},
			{"POST", "/console/workspaces/w1/journeys", url.Values{"key": {"pay.confirm"}, "definition": {"{}"}}, 409, ""},
			{"POST", "/console/workspaces/w1/journeys", url.Values{"key": {".."}, "definition": {"{}"}}, 422, ""},
			{"POST", "/console/workspaces/w1/journeys/pay.confirm", url.Values{"definition": {"{not json"}}, 422, "PUT /workspaces/w1/journeys/pay.confirm {not json"},
			{"POST", "/console/workspaces/w1/journeys/pay.confirm/delete", url.Values{}, 200, "DELETE /workspaces/w1/journeys/pay.confirm "},
			{"POST", "/console/workspaces/w1/branding", brand, 303, `POST /workspaces/w1/branding-profiles {"colors":{"primary":"#aabbcc","background":"","text":"","accent":""},"name":"New"}`},
			{"POST", "/console/workspaces/w1/branding", url.Values{"name": {"Bad"}, "primary": {"red"}}, 422, ""},
			{"POST", "/console/workspaces/w1/branding/b1", brand, 303, "PATCH /workspaces/w1/branding-profiles/b1 "},
			{"POST", "/console/workspaces/w1/branding/b1/logo/delete", url.Values{}, 303, "DELETE /workspaces/w1/branding-profiles/b1/logo "},
		}},
		{"ok@x.io", []step{
			{"POST", "/console/workspaces/w1/reviews/c1/resolve", resolve, 200, `POST /workspaces/w1/reviews/c1/resolve {"by":"ok@x.io","decision":"verified","note":"document checked by hand"}`},
			{"POST", "/console/workspaces/w1/reviews/c1/resolve", url.Values{"decision": {"bogus"}}, 422, ""},
			{"POST", "/console/workspaces/w1/journeys", journey, 403, ""},
			{"POST", "/console/workspaces/w1/branding", brand, 403, ""},
		}},
		{"other@x.io", []step{
			{"GET", "/console/workspaces/w1/reviews", nil, 403, ""},
			{"POST", "/console/workspaces/w1/reviews/c1/resolve", resolve, 403, ""},
			{"GET", "/console/workspaces/w1/branding/b1", nil, 403, ""},
			{"GET", "/console/workspaces/w1/messaging", nil, 403, ""},
		}},
	} {
		t.Run(tc.email, func(t *testing.T) {
			c, fb, _ := newTestConsole(Config{})
			b := newBrowser(t, c)
			u := fakeUsers[tc.email]
			if a, _ := b.userLogin(tc.email, u[2]+"-password!"); a.status != 303 {
				t.Fatalf("login: %d", a.status)
			}
			for _, s := range tc.steps {
				before := len(fb.writes())
				var form url.Values
				if s.form != nil {
					// The CSRF token of the page the form is on.
					form = url.Values{"csrf": {csrfOf(t, b.do("GET", "/console/password", nil).body)}}
					for k, v := range s.form {
						form[k] = v
					}
				}
				got := b.do(s.method, s.path, form)
				if got.status != s.want {
					t.Fatalf("%s %s: %d, want %d (%s)", s.method, s.path, got.status, s.want, got.body)
				}
				w := fb.writes()[before:]
				if s.want == 403 && len(w) != 0 {
					t.Fatalf("%s %s was refused but reached the admin API: %v", s.method, s.path, w)
				}
				if s.call != "" && !containsPrefix(w, s.call) {
					t.Fatalf("%s %s: admin writes %q, want %q", s.method, s.path, w, s.call)
				}
				if s.want == 422 && !strings.Contains(got.body, `role="alert"`) {
					t.Fatalf("%s %s: refusal not shown: %s", s.method, s.path, got.body)
				}
			}
		})
	}
}

func containsPrefix(list []string, p string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestModulePagesShowAdminData(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	b.login("good-token")
	for path, wants := range map[string][]string{
		"/console/workspaces/w1/reviews":              {"Case <code>c1</code>", "document_in_doubt", "assurance standard", "1 attempt(s)", `name="decision"`},
		"/console/workspaces/w1/journeys":             {"pay.confirm", "Pay &lt;i&gt;", "human_verification", `name="definition"`},
		"/console/workspaces/w1/journeys/pay.confirm": {`&#34;operation_binding&#34;: true`, "Save journey pay.confirm"},
		"/console/workspaces/w1/branding":             {`src="/v1/branding/b1/logo?v=v1&amp;size=64"`, "data:image/svg&#43;xml;base64,", "#112233"},
		"/console/workspaces/w1/branding/b1":          {`src="/v1/branding/b1/logo?v=v1&amp;size=256"`, `enctype="multipart/form-data"`, "--trustd-brand-primary"},
		"/console/workspaces/w1/messaging":            {"<code>prefix_limit</code></td><td>7</td><td>7</td>", "<code>prefix_window_seconds</code></td><td>default</td><td>3600</td>", "admin API has no read"},
		"/console/workspaces/w2/messaging":            {"not configured"},
	} {
		a := b.do("GET", path, nil)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
		for _, w := range wants {
			if !strings.Contains(a.body, w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
		if strings.Contains(path, "journeys/") && strings.Contains(a.body, "policy_version&#34;:") {
			t.Errorf("%s: the edit form carries a server-set field", path)
		}
	}
}

// TestLogoUploadIsMultipartWithCSRF: the logo form is multipart; its CSRF
// token is read from the multipart body, a missing or wrong one is refused
// before the admin API, and the file goes to the logo PUT as base64.
func TestLogoUploadIsMultipartWithCSRF(t *testing.T) {
	c, fb, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	_, csrf := b.login("good-token")
	path := "/console/workspaces/w1/branding/b1/logo"
	if a := b.postFile(path, nil, []byte("PNGfake")); a.status != 403 {
		t.Fatalf("no csrf: %d", a.status)
	}
	if a := b.postFile(path, map[string]string{"csrf": "wrong"}, []byte("PNGfake")); a.status != 403 {
		t.Fatalf("wrong csrf: %d", a.status)
	}
	if w := fb.writes(); len(w) != 0 {
		t.Fatalf("refused uploads reached the admin API: %v", w)
	}
	if a := b.postFile(path, map[string]string{"csrf": csrf}, nil); a.status != 422 || !strings.Contains(a.body, "choose an image file") {
		t.Fatalf("no file: %d %s", a.status, a.body)
	}
	if a := b.postFile(path, map[string]string{"csrf": csrf}, []byte("GIF89a")); a.status != 422 || !strings.Contains(a.body, "not a PNG, JPEG or WebP (logo-format)") {
		t.Fatalf("refused image: %d %s", a.status, a.body)
	}
	a := b.postFile(path, map[string]string{"csrf": csrf}, []byte("PNGfake"))
	if a.status != 303 || a.header["Location"] != "/console/workspaces/w1/branding/b1?saved=1" {
		t.Fatalf("upload: %d %q %s", a.status, a.header["Location"], a.body)
	}
	if !containsPrefix(fb.writes(), `PUT /workspaces/w1/branding-profiles/b1/logo {"image":"UE5HZmFrZQ=="}`) {
		t.Fatalf("logo PUT: %v", fb.writes())
	}
}

// TestConcurrencyPageShowsLiveHolders: the constraint's live holders from
// getConcurrencyHolders; not-listable scopes and unreadable owners are
// said as such, never shown as zero.
func TestConcurrencyPageShowsLiveHolders(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	b.login("good-token")
	a := b.do("GET", "/console/workspaces/w1/concurrency", nil)
	for _, want := range []string{"<td>exports</td><td>workspace</td><td>export.*</td><td>2</td><td>2</td><td>workspace: 2</td>",
		"<td>per-user</td><td>subject</td><td>x</td><td>1</td><td>not listable (scope values are keyed hashes)</td>",
		"<td>down</td><td>workspace</td><td>y</td><td>1</td><td>unavailable: a slot&#39;s owner did not answer</td>"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("concurrency page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(a.body)
	}
}

// TestOverviewShowsClusterMetrics: the admin's overview shows the
// cluster-wide totals of getClusterMetrics (and who did not answer) and
// loads the chart; the chart's JSON is the admin's only.
func TestOverviewShowsClusterMetrics(t *testing.T) {
	c, _, _ := newTestConsole(Config{})
	b := newBrowser(t, c)
	b.login("good-token")
	ov := b.do("GET", "/console/", nil).body
	for _, want := range []string{"(2 of 3 members answered); node n3 did not answer: peer refused.", `data-metrics="/console/metrics.json"`,
		"<td>Rate limiting</td><td>200</td><td>allow 150 · approval required 1 · throttle 5</td><td>40</td><td>3</td><td>2</td><td>1.00% 5xx</td>", `<script src="/console/static/charts.js" defer>`} {
		if !strings.Contains(ov, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if a := b.do("GET", "/console/metrics.json", nil); a.status != 200 || !strings.Contains(a.body, `"answered":2`) {
		t.Fatalf("metrics.json: %d %s", a.status, a.body)
	}
	v := newBrowser(t, c)
	v.ip = "192.0.2.20"
	v.userLogin("view@x.io", "viewer-password!")
	if a := v.do("GET", "/console/metrics.json", nil); a.status != 403 {
		t.Fatalf("a viewer reads the cluster's metrics: %d", a.status)
	}
	if ov := v.do("GET", "/console/", nil).body; strings.Contains(ov, "Requests across the cluster") {
		t.Fatal("a viewer's overview shows the cluster's traffic")
	}
}
