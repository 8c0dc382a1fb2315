package http_test

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	"github.com/trustd/trustd/node"
)

// A site (or mobile app) names a branding profile of its workspace, and
// the widget's challenge answer, the hosted identity page and the journey
// person page carry its colours and logo; a profile of another workspace
// is refused everywhere, and a profile in use is not deleted.
func TestSitesShowTheirBrandingProfile(t *testing.T) {
	tn := mustStartNode(t, func(c *node.Config) { c.Dev = true })
	dev := tn.n.Dev()
	base := "/workspaces/" + dev.WorkspaceID
	type profileView struct {
		ID   string `json:"profile_id"`
		Logo *struct {
			Version string `json:"version"`
		} `json:"logo"`
	}
	var prof, theirs profileView
	tn.mustCreate(base+"/branding-profiles", map[string]any{"name": "Acme",
		"colors": map[string]string{"primary": "#C0FFEE", "background": "#102030", "text": "#fafafa"}}, &prof)
	r := tn.admin("PUT", base+"/branding-profiles/"+prof.ID+"/logo", map[string]string{"image": base64.StdEncoding.EncodeToString(brandingPNG(t, 120, 40))})
	if r.status != 200 {
		t.Fatalf("logo: %d %s", r.status, r.body)
	}
	r.decode(t, &prof)
	var ws2 struct {
		ID string `json:"workspace_id"`
	}
	tn.mustCreate("/workspaces", map[string]any{"name": "other"}, &ws2)
	tn.mustCreate("/workspaces/"+ws2.ID+"/branding-profiles", map[string]any{"name": "Theirs", "colors": map[string]string{"primary": "#ff0000"}}, &theirs)

	var sites struct {
		Sites []struct {
			ID      string `json:"site_id"`
			SiteKey string `json:"site_key"`
		} `json:"sites"`
	}
	tn.admin("GET", base+"/sites", nil).decode(t, &sites)
	siteID := ""
	for _, s := range sites.Sites {
		if s.SiteKey == dev.SiteKey {
			siteID = s.ID
		}
	}
	site := base + "/sites/" + siteID

	t.Run("a site or app names only a profile of its own workspace", func(t *testing.T) {
		wantCode(t, tn.admin("PATCH", site, map[string]any{"branding_profile_id": theirs.ID}), 404, "branding-profile-not-found")
		wantCode(t, tn.admin("PATCH", site, map[string]any{"branding_profile_id": "00000000-0000-4000-8000-000000000000"}), 404, "branding-profile-not-found")
		wantCode(t, tn.admin("POST", base+"/sites", map[string]any{"name": "x", "hostnames": []string{"x.example"}, "branding_profile_id": theirs.ID}), 404, "branding-profile-not-found")
		wantCode(t, tn.admin("POST", base+"/mobile-apps", map[string]any{"name": "x", "platform": "ios", "app_id": "com.x", "branding_profile_id": theirs.ID}), 404, "branding-profile-not-found")
		r := tn.admin("PATCH", site, map[string]any{"branding_profile_id": prof.ID})
		if r.status != 200 || !strings.Contains(string(r.body), `"branding_profile_id":"`+prof.ID+`"`) {
			t.Fatalf("patch: %d %s", r.status, r.body)
		}
		// a patch leaving it out keeps it
		if r := tn.admin("PATCH", site, map[string]any{"name": "localhost"}); r.status != 200 || !strings.Contains(string(r.body), prof.ID) {
			t.Fatalf("patch without the field: %d %s", r.status, r.body)
		}
		wantCode(t, tn.admin("DELETE", base+"/branding-profiles/"+prof.ID, nil), 409, "conflict")
	})

	colours := func(t *testing.T, body string) {
		t.Helper()
		for _, want := range []string{`"primary":"#c0ffee"`, `"background":"#102030"`, `"name":"Acme"`,
			`"logo_url":"/v1/branding/` + prof.ID + `/logo?v=` + prof.Logo.Version, `"stylesheet_url":"/v1/branding/` + prof.ID + `/theme.css?v=`} {
			if !strings.Contains(body, want) {
				t.Fatalf("no %s in %s", want, body)
			}
		}
	}

	t.Run("the widget's challenge answer carries the branding", func(t *testing.T) {
		r := tn.do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey, "action": "login"}, "Origin", "http://localhost:3000")
		if r.status != 200 {
			t.Fatalf("challenge: %d %s", r.status, r.body)
		}
		colours(t, string(r.body))
		if !strings.Contains(string(r.body), "&size=64") {
			t.Fatalf("the widget gets the small logo: %s", r.body)
		}
		// the cached widget files carry no branding: their ETag does not
		// depend on any site
		if js := tn.do("GET", "/v1/widget/api.js", "", nil); js.status != 200 || strings.Contains(string(js.body), "c0ffee") {
			t.Fatalf("api.js: %d", js.status)
		}
	})

	var stylesheet string
	t.Run("the stylesheet is public, hex only, cacheable and conditional", func(t *testing.T) {
		r := tn.do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey}, "Origin", "http://localhost")
		stylesheet = regexp.MustCompile(`"stylesheet_url":"([^"]+)"`).FindStringSubmatch(string(r.body))[1]
		r = tn.do("GET", stylesheet, "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/css") ||
			string(r.body) != ":root{--trustd-brand-primary:#c0ffee;--trustd-brand-background:#102030;--trustd-brand-text:#fafafa;}\n" ||
			r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("stylesheet: %d %v %q", r.status, r.header, r.body)
		}
		if r2 := tn.do("GET", stylesheet, "", nil, "If-None-Match", r.header.Get("ETag")); r2.status != 304 {
			t.Fatalf("If-None-Match: %d", r2.status)
		}
		if r2 := tn.do("GET", "/v1/branding/"+prof.ID+"/theme.css", "", nil); r2.status != 200 || r2.header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("unversioned: %d %v", r2.status, r2.header)
		}
		wantCode(t, tn.do("GET", "/v1/branding/00000000-0000-4000-8000-000000000000/theme.css", "", nil), 404, "branding-profile-not-found")
		wantCode(t, tn.do("GET", "/v1/branding/x/theme.css", "", nil), 404, "branding-profile-not-found")
	})

	t.Run("the hosted identity page links the site's branding", func(t *testing.T) {
		create := func(returnURL string) string {
			r := tn.do("POST", "/v1/identity/hosted/session", dev.Credential, map[string]any{"subject_id": "u-1", "action": "signup",
				"assurance_level": "document_only", "country": "UTO", "document_type": "passport", "consent_accepted": true,
				"consent_reference": "c-1", "return_url": returnURL})
			if r.status != 201 {
				t.Fatalf("hosted: %d %s", r.status, r.body)
			}
			var v struct {
				SessionID string `json:"session_id"`
			}
			r.decode(t, &v)
			return v.SessionID
		}
		r := tn.do("GET", "/v1/identity/hosted/"+create("http://localhost/done"), "", nil)
		page := string(r.body)
		if r.status != 200 || !strings.Contains(page, `<link rel="stylesheet" href="`+strings.ReplaceAll(stylesheet, "&", "&amp;")+`">`) ||
			!strings.Contains(page, `<img class="brand-logo" src="/v1/branding/`+prof.ID+`/logo?v=`+prof.Logo.Version+`&amp;size=256" alt="Acme">`) {
			t.Fatalf("hosted page: %d %s", r.status, page)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self';") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("CSP: %s", csp)
		}
		if strings.Contains(page, "style=") || strings.Contains(page, "<style") {
			t.Fatal("inline style on the hosted page")
		}
		// a session whose return host has no branded site, and an
		// unknown session, get the default page
		if r := tn.do("GET", "/v1/identity/hosted/"+create("http://127.0.0.1/done"), "", nil); r.status != 200 || !strings.Contains(string(r.body), "/v1/branding/"+prof.ID) {
			t.Fatal("127.0.0.1 is a host of the same site: want branded")
		}
		tn.mustCreate(base+"/sites", map[string]any{"name": "plain", "hostnames": []string{"plain.example"}}, &struct{}{})
		if r := tn.do("GET", "/v1/identity/hosted/"+create("https://plain.example/done"), "", nil); r.status != 200 || strings.Contains(string(r.body), "/v1/branding/") {
			t.Fatalf("a site without a profile: %d %s", r.status, r.body)
		}
		if r := tn.do("GET", "/v1/identity/hosted/00000000-0000-4000-8000-000000000000", "", nil); r.status != 200 || strings.Contains(string(r.body), "brand-logo") {
			t.Fatalf("unknown session: %d", r.status)
		}
	})

	t.Run("the journey person page gets the starting site's or app's branding", func(t *testing.T) {
		if r := tn.admin("PUT", base+"/journeys/login", map[string]any{"name": "Login", "method": "human_verification"}); r.status != 200 {
			t.Fatalf("define: %d %s", r.status, r.body)
		}
		person := func(endpoint string) response {
			capability := endpoint[strings.Index(endpoint, "#")+1:]
			return tn.do("POST", "/v1/journeys/person/session", "", nil, "X-Service-Journey-Token", capability)
		}
		r := tn.do("POST", "/v1/journeys/start", "", map[string]any{"secret": dev.Secret, "journey_key": "login"})
		if r.status != 200 {
			t.Fatalf("start: %d %s", r.status, r.body)
		}
		var st struct {
			Endpoint string `json:"endpoint"`
		}
		r.decode(t, &st)
		r = person(st.Endpoint)
		if r.status != 200 {
			t.Fatalf("person: %d %s", r.status, r.body)
		}
		colours(t, string(r.body))
		// the seeded mobile app names no profile: no branding
		mob := map[string]any{"platform": dev.MobilePlatform, "app_id": dev.MobileAppID, "journey_key": "login"}
		r = tn.do("POST", "/v1/mobile/journeys/start", dev.MobileSecret, mob)
		r.decode(t, &st)
		if r = person(st.Endpoint); r.status != 200 || strings.Contains(string(r.body), `"branding"`) {
			t.Fatalf("unbranded app: %d %s", r.status, r.body)
		}
		var app struct {
			Secret string `json:"mobile_secret"`
		}
		tn.mustCreate(base+"/mobile-apps", map[string]any{"name": "branded", "platform": "android", "app_id": "com.acme.app", "branding_profile_id": prof.ID}, &app)
		r = tn.do("POST", "/v1/mobile/journeys/start", app.Secret, map[string]any{"platform": "android", "app_id": "com.acme.app", "journey_key": "login"})
		if r.status != 200 {
			t.Fatalf("mobile start: %d %s", r.status, r.body)
		}
		r.decode(t, &st)
		if r = person(st.Endpoint); r.status != 200 {
			t.Fatalf("app person: %d %s", r.status, r.body)
		}
		colours(t, string(r.body))
		page := tn.do("GET", "/v1/journeys/person", "", nil)
		css := tn.do("GET", "/v1/journeys/person.css", "", nil)
		if !strings.Contains(string(page.body), `href="/v1/journeys/person.css"`) || css.status != 200 ||
			!strings.Contains(string(css.body), "var(--trustd-brand-primary") || !strings.Contains(page.header.Get("Content-Security-Policy"), "style-src 'self'") {
			t.Fatalf("page %s, css %d", page.body, css.status)
		}
	})

	t.Run("removing the site's profile, then deleting it", func(t *testing.T) {
		if r := tn.admin("PATCH", site, map[string]any{"branding_profile_id": ""}); r.status != 200 || strings.Contains(string(r.body), "branding_profile_id") {
			t.Fatalf("clear: %d %s", r.status, r.body)
		}
		r := tn.do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey}, "Origin", "http://localhost")
		if r.status != 200 || strings.Contains(string(r.body), "branding") {
			t.Fatalf("challenge after clearing: %s", r.body)
		}
		// the branded app still shows it
		wantCode(t, tn.admin("DELETE", base+"/branding-profiles/"+prof.ID, nil), 409, "conflict")
	})
}
