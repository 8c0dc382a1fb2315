package branding

import (
	"strings"
	"testing"

	"github.com/trustd/trustd/platform/catalog"
)

// Only #rrggbb ever reaches CSS: inputs that could close a declaration,
// a rule or a string are refused, and a colour that reached the catalog
// some other way (an old record, a bug) is dropped from what the pages
// get rather than rendered.
func TestColoursCannotInjectCSS(t *testing.T) {
	for _, in := range []string{"#12345;", "#1234;}", "#12_345", "#+12345", "#-12345", "#12345\n", "#12345\\", "#12345'",
		"#1234</", "red;}body{background:url(https://evil.example)}", "#ffffff;--x:1", "#１２３４５６", "#0x1234", "#  1234"} {
		if v, err := NormalizeColor("colors.primary", in); err == nil {
			t.Errorf("%q accepted as %q", in, v)
		}
	}
	p := Profile{ID: "p1", Name: "Acme", Colors: catalog.BrandingColors{Primary: "#A1B2C3",
		Background: "red;}body{background:url(//evil.example/x)}", Text: "#ffffff</style>", Accent: "#00ff00"}}
	css := p.Stylesheet()
	if css != ":root{--trustd-brand-primary:#a1b2c3;--trustd-brand-accent:#00ff00;}\n" {
		t.Fatalf("stylesheet %q", css)
	}
	v := p.View(256)
	if v.Colors != (catalog.BrandingColors{Primary: "#a1b2c3", Accent: "#00ff00"}) {
		t.Fatalf("view colours %+v", v.Colors)
	}
	for _, s := range []string{css, v.Colors.Background, v.Colors.Text} {
		if strings.ContainsAny(s, "<>'\"\\(") || strings.Contains(s, "evil") {
			t.Fatalf("unsafe output %q", s)
		}
	}
}

func TestViewAndStylesheetVersion(t *testing.T) {
	p := Profile{ID: "p1", WorkspaceID: "w1", Name: "Acme", Colors: catalog.BrandingColors{Primary: "#112233"}}
	v := p.View(256)
	if v.LogoURL != "" || v.Name != "Acme" || v.ProfileID != "p1" || !strings.HasPrefix(v.StylesheetURL, "/v1/branding/p1/theme.css?v=") {
		t.Fatalf("view %+v", v)
	}
	p.LogoVersion = "abc"
	if got := p.View(64).LogoURL; got != "/v1/branding/p1/logo?v=abc&size=64" {
		t.Fatalf("logo %q", got)
	}
	q := p
	q.Colors.Primary = "#112234"
	if p.StyleVersion() == q.StyleVersion() || p.StyleVersion() != (Profile{ID: "p1", Colors: p.Colors}).StyleVersion() {
		t.Fatal("the style version does not follow the colours alone")
	}
}

func TestWhichProfileAPageShows(t *testing.T) {
	cat := catalog.Empty()
	cat.BrandingProfiles = map[string]*catalog.BrandingProfile{
		"p1": {ID: "p1", WorkspaceID: "w1", Name: "One"}, "p2": {ID: "p2", WorkspaceID: "w1", Name: "Two"},
		"px": {ID: "px", WorkspaceID: "w2", Name: "Theirs"}}
	cat.Sites = map[string]*catalog.Site{
		"s1": {ID: "s1", WorkspaceID: "w1", Hostnames: []string{"shop.example"}, BrandingProfileID: "p1"},
		"s0": {ID: "s0", WorkspaceID: "w1", Hostnames: []string{"plain.example", "both.example"}},
		"s2": {ID: "s2", WorkspaceID: "w1", Hostnames: []string{"both.example", "two.example"}, BrandingProfileID: "p2"},
		"s3": {ID: "s3", WorkspaceID: "w1", Hostnames: []string{"both.example"}, BrandingProfileID: "p1"},
		// a site pointing at another workspace's profile (the catalog
		// refuses it; the lookup must too)
		"s9": {ID: "s9", WorkspaceID: "w1", Hostnames: []string{"bad.example"}, BrandingProfileID: "px"},
	}
	cat.MobileApps = map[string]*catalog.MobileApp{"m1": {ID: "m1", WorkspaceID: "w1", BrandingProfileID: "p2"}}
	name := func(p Profile, ok bool) string {
		if !ok {
			return "-"
		}
		return p.Name
	}
	for _, c := range []struct {
		got, want string
	}{
		{name(ForSite(cat, cat.Sites["s1"])), "One"},
		{name(ForSite(cat, cat.Sites["s0"])), "-"},
		{name(ForSite(cat, cat.Sites["s9"])), "-"},
		{name(ForSite(cat, nil)), "-"},
		{name(ForApp(cat, cat.MobileApps["m1"])), "Two"},
		{name(ForURLs(cat, "w1", "https://shop.example")), "One"},
		{name(ForURLs(cat, "w1", "https://SHOP.example:8443")), "One"},
		{name(ForURLs(cat, "w1", "https://both.example")), "Two"}, // s2 < s3; s0 has none
		{name(ForURLs(cat, "w1", "", "https://two.example/back?x=1")), "Two"},
		{name(ForURLs(cat, "w1", "https://plain.example", "https://shop.example/r")), "One"},
		{name(ForURLs(cat, "w1", "https://bad.example")), "-"},
		{name(ForURLs(cat, "w2", "https://shop.example")), "-"},
		{name(ForURLs(cat, "w1", "::not a url")), "-"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
