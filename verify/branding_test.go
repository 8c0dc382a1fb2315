package verify

import (
	"testing"

	"github.com/trustd/trustd/platform/catalog"
)

// The challenge answer (the widget's config, never cached) carries the
// site's branding profile; a site without one, or whose profile is gone,
// gets none.
func TestChallengeCarriesTheSitesBranding(t *testing.T) {
	e := mustNewEnv(t)
	b := Browser{Host: testHost, Addr: testAddr}
	cv, err := e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/p/")
	if err != nil || cv.Branding != nil {
		t.Fatalf("without a profile: %v %+v", err, cv.Branding)
	}
	profile := "0b6c2f9e-6d57-4c1e-9d3c-3b8f2a7a1c11"
	p := func(s string) *string { return &s }
	e.apply(&catalog.PutBrandingProfile{Profile: catalog.BrandingProfile{ID: profile, WorkspaceID: "ws1", Name: "Acme",
		Colors: catalog.BrandingColors{Primary: "#a1b2c3"}, LogoVersion: "v1", Logos: []catalog.BrandingLogo{{Size: 64}, {Size: 256}}}},
		&catalog.UpdateSite{WorkspaceID: "ws1", ID: "site-1", Patch: catalog.SitePatch{BrandingProfileID: p(profile)}})
	cv, err = e.m.Challenge(e.cat, b, &ChallengeInput{Sitekey: "site_pub"}, "/p/")
	if err != nil || cv.Branding == nil {
		t.Fatalf("with a profile: %v", err)
	}
	if g := cv.Branding; g.Name != "Acme" || g.Colors.Primary != "#a1b2c3" || g.LogoURL != "/v1/branding/"+profile+"/logo?v=v1&size=64" {
		t.Fatalf("branding %+v", g)
	}
}
