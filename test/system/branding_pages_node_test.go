package systemtest

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// A site (or mobile app) names a branding profile of its workspace, and
// the widget's challenge answer, the hosted identity page and the journey
// person page carry its colours and logo; a profile of another workspace
// is refused everywhere, and a profile in use is not deleted.
func TestSitesShowTheirBrandingProfile(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	dev := tn.N.Dev()
	base := "/workspaces/" + dev.WorkspaceID
	type profileView struct {
		ID   string `json:"profile_id"`
		Logo *struct {
			Version string `json:"version"`
		} `json:"logo"`
	}
	var prof, theirs profileView
	tn.MustCreate(base+"/branding-profiles", map[string]any{"name": "Acme",
		"colors": map[string]string{"primary": "#C0FFEE", "background": "#102030", "text": "#fafafa"}}, &prof)
	r := tn.Admin("PUT", base+"/branding-profiles/"+prof.ID+"/logo", map[string]string{"image": base64.StdEncoding.EncodeToString(brandingLogoPNG(t, 120, 40))})
	if r.Status != 200 {
		t.Fatalf("logo: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &prof)
	var ws2 struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "other"}, &ws2)
	tn.MustCreate("/workspaces/"+ws2.ID+"/branding-profiles", map[string]any{"name": "Theirs", "colors": map[string]string{"primary": "#ff0000"}}, &theirs)

	var sites struct {
		Sites []struct {
			ID      string `json:"site_id"`
			SiteKey string `json:"site_key"`
		} `json:"sites"`
	}
	tn.Admin("GET", base+"/sites", nil).Decode(t, &sites)
	siteID := ""
	for _, s := range sites.Sites {
		if s.SiteKey == dev.SiteKey {
			siteID = s.ID
		}
	}
	site := base + "/sites/" + siteID

	t.Run("a site or app names only a profile of its own workspace", func(t *testing.T) {
		tn.Admin("PATCH", site, map[string]any{"branding_profile_id": theirs.ID}).Want(t, 404, "branding-profile-not-found")
		tn.Admin("PATCH", site, map[string]any{"branding_profile_id": "00000000-0000-4000-8000-000000000000"}).Want(t, 404, "branding-profile-not-found")
		tn.Admin("POST", base+"/sites", map[string]any{"name": "x", "hostnames": []string{"x.example"}, "branding_profile_id": theirs.ID}).Want(t, 404, "branding-profile-not-found")
		tn.Admin("POST", base+"/mobile-apps", map[string]any{"name": "x", "platform": "ios", "app_id": "com.x", "branding_profile_id": theirs.ID}).Want(t, 404, "branding-profile-not-found")
		r := tn.Admin("PATCH", site, map[string]any{"branding_profile_id": prof.ID})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"branding_profile_id":"`+prof.ID+`"`) {
			t.Fatalf("patch: %d %s", r.Status, r.Body)
		}
		// a patch leaving it out keeps it
		if r := tn.Admin("PATCH", site, map[string]any{"name": "localhost"}); r.Status != 200 || !strings.Contains(string(r.Body), prof.ID) {
			t.Fatalf("patch without the field: %d %s", r.Status, r.Body)
		}
		tn.Admin("DELETE", base+"/branding-profiles/"+prof.ID, nil).Want(t, 409, "conflict")
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
		r := tn.Do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey, "action": "login"}, "Origin", "http://localhost:3000")
		if r.Status != 200 {
			t.Fatalf("challenge: %d %s", r.Status, r.Body)
		}
		colours(t, string(r.Body))
		if !strings.Contains(string(r.Body), "&size=64") {
			t.Fatalf("the widget gets the small logo: %s", r.Body)
		}
		// the cached widget files carry no branding: their ETag does not
		// depend on any site
		if js := tn.Do("GET", "/v1/widget/api.js", "", nil); js.Status != 200 || strings.Contains(string(js.Body), "c0ffee") {
			t.Fatalf("api.js: %d", js.Status)
		}
	})

	var stylesheet string
	t.Run("the stylesheet is public, hex only, cacheable and conditional", func(t *testing.T) {
		r := tn.Do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey}, "Origin", "http://localhost")
		stylesheet = regexp.MustCompile(`"stylesheet_url":"([^"]+)"`).FindStringSubmatch(string(r.Body))[1]
		r = tn.Do("GET", stylesheet, "", nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/css") ||
			string(r.Body) != ":root{--trustd-brand-primary:#c0ffee;--trustd-brand-background:#102030;--trustd-brand-text:#fafafa;}\n" ||
			r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("stylesheet: %d %v %q", r.Status, r.Header, r.Body)
		}
		if r2 := tn.Do("GET", stylesheet, "", nil, "If-None-Match", r.Header.Get("ETag")); r2.Status != 304 {
			t.Fatalf("If-None-Match: %d", r2.Status)
		}
		if r2 := tn.Do("GET", "/v1/branding/"+prof.ID+"/theme.css", "", nil); r2.Status != 200 || r2.Header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("unversioned: %d %v", r2.Status, r2.Header)
		}
		tn.Do("GET", "/v1/branding/00000000-0000-4000-8000-000000000000/theme.css", "", nil).Want(t, 404, "branding-profile-not-found")
		tn.Do("GET", "/v1/branding/x/theme.css", "", nil).Want(t, 404, "branding-profile-not-found")
	})

	t.Run("the hosted identity page links the site's branding", func(t *testing.T) {
		create := func(returnURL string) string {
			r := tn.Do("POST", "/v1/identity/hosted/session", dev.Credential, map[string]any{"subject_id": "u-1", "action": "signup",
				"assurance_level": "document_only", "country": "UTO", "document_type": "passport", "consent_accepted": true,
				"consent_reference": "c-1", "return_url": returnURL})
			if r.Status != 201 {
				t.Fatalf("hosted: %d %s", r.Status, r.Body)
			}
			var v struct {
				SessionID string `json:"session_id"`
			}
			r.Decode(t, &v)
			return v.SessionID
		}
		r := tn.Do("GET", "/v1/identity/hosted/"+create("http://localhost/done"), "", nil)
		page := string(r.Body)
		if r.Status != 200 || !strings.Contains(page, `<link rel="stylesheet" href="`+strings.ReplaceAll(stylesheet, "&", "&amp;")+`">`) ||
			!strings.Contains(page, `<img class="brand-logo" src="/v1/branding/`+prof.ID+`/logo?v=`+prof.Logo.Version+`&amp;size=256" alt="Acme">`) {
			t.Fatalf("hosted page: %d %s", r.Status, page)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self';") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("CSP: %s", csp)
		}
		if strings.Contains(page, "style=") || strings.Contains(page, "<style") {
			t.Fatal("inline style on the hosted page")
		}
		// a session whose return host has no branded site, and an
		// unknown session, get the default page
		if r := tn.Do("GET", "/v1/identity/hosted/"+create("http://127.0.0.1/done"), "", nil); r.Status != 200 || !strings.Contains(string(r.Body), "/v1/branding/"+prof.ID) {
			t.Fatal("127.0.0.1 is a host of the same site: want branded")
		}
		tn.MustCreate(base+"/sites", map[string]any{"name": "plain", "hostnames": []string{"plain.example"}}, &struct{}{})
		if r := tn.Do("GET", "/v1/identity/hosted/"+create("https://plain.example/done"), "", nil); r.Status != 200 || strings.Contains(string(r.Body), "/v1/branding/") {
			t.Fatalf("a site without a profile: %d %s", r.Status, r.Body)
		}
		if r := tn.Do("GET", "/v1/identity/hosted/00000000-0000-4000-8000-000000000000", "", nil); r.Status != 200 || strings.Contains(string(r.Body), "brand-logo") {
			t.Fatalf("unknown session: %d", r.Status)
		}
	})

	t.Run("the journey person page gets the starting site's or app's branding", func(t *testing.T) {
		if r := tn.Admin("PUT", base+"/journeys/login", map[string]any{"name": "Login", "method": "human_verification"}); r.Status != 200 {
			t.Fatalf("define: %d %s", r.Status, r.Body)
		}
		person := func(endpoint string) nodetest.Response {
			capability := endpoint[strings.Index(endpoint, "#")+1:]
			return tn.Do("POST", "/v1/journeys/person/session", "", nil, "X-Service-Journey-Token", capability)
		}
		r := tn.Do("POST", "/v1/journeys/start", "", map[string]any{"secret": dev.Secret, "journey_key": "login"})
		if r.Status != 200 {
			t.Fatalf("start: %d %s", r.Status, r.Body)
		}
		var st struct {
			Endpoint string `json:"endpoint"`
		}
		r.Decode(t, &st)
		r = person(st.Endpoint)
		if r.Status != 200 {
			t.Fatalf("person: %d %s", r.Status, r.Body)
		}
		colours(t, string(r.Body))
		// the seeded mobile app names no profile: no branding
		mob := map[string]any{"platform": dev.MobilePlatform, "app_id": dev.MobileAppID, "journey_key": "login"}
		r = tn.Do("POST", "/v1/mobile/journeys/start", dev.MobileSecret, mob)
		r.Decode(t, &st)
		if r = person(st.Endpoint); r.Status != 200 || strings.Contains(string(r.Body), `"branding"`) {
			t.Fatalf("unbranded app: %d %s", r.Status, r.Body)
		}
		var app struct {
			Secret string `json:"mobile_secret"`
		}
		tn.MustCreate(base+"/mobile-apps", map[string]any{"name": "branded", "platform": "android", "app_id": "com.acme.app", "branding_profile_id": prof.ID}, &app)
		r = tn.Do("POST", "/v1/mobile/journeys/start", app.Secret, map[string]any{"platform": "android", "app_id": "com.acme.app", "journey_key": "login"})
		if r.Status != 200 {
			t.Fatalf("mobile start: %d %s", r.Status, r.Body)
		}
		r.Decode(t, &st)
		if r = person(st.Endpoint); r.Status != 200 {
			t.Fatalf("app person: %d %s", r.Status, r.Body)
		}
		colours(t, string(r.Body))
		page := tn.Do("GET", "/v1/journeys/person", "", nil)
		css := tn.Do("GET", "/v1/journeys/person.css", "", nil)
		if !strings.Contains(string(page.Body), `href="/v1/journeys/person.css"`) || css.Status != 200 ||
			!strings.Contains(string(css.Body), "var(--trustd-brand-primary") || !strings.Contains(page.Header.Get("Content-Security-Policy"), "style-src 'self'") {
			t.Fatalf("page %s, css %d", page.Body, css.Status)
		}
	})

	t.Run("removing the site's profile, then deleting it", func(t *testing.T) {
		if r := tn.Admin("PATCH", site, map[string]any{"branding_profile_id": ""}); r.Status != 200 || strings.Contains(string(r.Body), "branding_profile_id") {
			t.Fatalf("clear: %d %s", r.Status, r.Body)
		}
		r := tn.Do("POST", "/v1/challenge", "", map[string]any{"sitekey": dev.SiteKey}, "Origin", "http://localhost")
		if r.Status != 200 || strings.Contains(string(r.Body), "branding") {
			t.Fatalf("challenge after clearing: %s", r.Body)
		}
		// the branded app still shows it
		tn.Admin("DELETE", base+"/branding-profiles/"+prof.ID, nil).Want(t, 409, "conflict")
	})
}

// brandingLogoPNG is a w×h gradient PNG, a logo the upload accepts.
func brandingLogoPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
