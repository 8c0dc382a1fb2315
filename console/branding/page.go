package branding

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"

	"github.com/trustd/trustd/platform/catalog"
)

// Which profile a page shows. A site (or a mobile app) names at most one
// profile of its own workspace (catalog.Site.BrandingProfileID); the pages
// follow from it:
//   - the widget: the site of its site key (ForSite), in the challenge
//     answer;
//   - a journey's person page: the site or mobile app that started the
//     session (ForSite / ForApp);
//   - the hosted identity page: identity sessions belong to a workspace,
//     not a site, so the site is the one whose hostnames allow the
//     session's parent_origin, else its return_url (ForURL); when several
//     sites allow the host, the lowest site id with a profile wins.
// A profile that is gone or of another workspace shows the default look.

// ForSite is the profile site shows.
func ForSite(cat *catalog.Catalog, site *catalog.Site) (Profile, bool) {
	if site == nil || site.BrandingProfileID == "" {
		return Profile{}, false
	}
	return Lookup(cat, site.WorkspaceID, site.BrandingProfileID)
}

// ForApp is the profile a mobile app shows.
func ForApp(cat *catalog.Catalog, app *catalog.MobileApp) (Profile, bool) {
	if app == nil || app.BrandingProfileID == "" {
		return Profile{}, false
	}
	return Lookup(cat, app.WorkspaceID, app.BrandingProfileID)
}

// ForURLs is the profile of the first of urls (absolute URLs or origins)
// whose host a site of workspaceID allows, among the sites naming a
// profile (lowest site id first).
func ForURLs(cat *catalog.Catalog, workspaceID string, urls ...string) (Profile, bool) {
	var sites []*catalog.Site
	for _, s := range cat.SitesOf(workspaceID) {
		if s.BrandingProfileID != "" {
			sites = append(sites, s)
		}
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].ID < sites[j].ID })
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if raw == "" || err != nil || u.Hostname() == "" {
			continue
		}
		for _, s := range sites {
			if s.AllowsHost(u.Hostname()) {
				if p, ok := ForSite(cat, s); ok {
					return p, true
				}
			}
		}
	}
	return Profile{}, false
}

// ForHostedSession is the profile of a hosted identity session's site:
// the site whose hostnames allow its parent_origin, else its return_url.
// An unknown or non-hosted session gets none.
func ForHostedSession(cat *catalog.Catalog, sessionID string) (Profile, bool) {
	s := cat.IdentitySessionAnywhere(sessionID)
	if s == nil || s.HostedHash == (catalog.Hash{}) {
		return Profile{}, false
	}
	return ForURLs(cat, s.WorkspaceID, s.ParentOrigin, s.ReturnURL)
}

// Stylesheet is the profile's public stylesheet: its set colours as CSS
// custom properties on :root. Colours are re-checked as #rrggbb here
// (Vars), so nothing but a hex colour ever reaches the CSS.
func (p Profile) Stylesheet() string {
	return ":root{" + p.CSSVariables() + "}\n"
}

// StyleVersion is a strong validator of Stylesheet.
func (p Profile) StyleVersion() string {
	sum := sha256.Sum256([]byte(p.Stylesheet()))
	return hex.EncodeToString(sum[:8])
}

// StylesheetPath is the public, versioned path of Stylesheet (cached as
// immutable while the colours stay the same).
func (p Profile) StylesheetPath() string {
	return "/v1/branding/" + p.ID + "/theme.css?v=" + p.StyleVersion()
}

// View is what a page or the widget reads of a profile: the colours
// (validated #rrggbb, set ones only), the name (the logo's alt text) and
// public paths relative to the service origin.
type View struct {
	ProfileID     string                 `json:"profile_id" required:"true" format:"uuid"`
	Name          string                 `json:"name" required:"true" doc:"The profile's name: the logo's text alternative."`
	Colors        catalog.BrandingColors `json:"colors" required:"true" doc:"Set colours only, each #rrggbb (lower case); apply them as the CSS custom properties --trustd-brand-primary, -background, -text and -accent."`
	LogoURL       string                 `json:"logo_url,omitempty" doc:"Path (relative to the service origin) of the logo (PNG), versioned and cacheable for a year; absent without a logo."`
	StylesheetURL string                 `json:"stylesheet_url" required:"true" doc:"Path of a stylesheet setting the colours as those custom properties on :root (for pages of this service)."`
}

// View is the profile as the pages read it, with the logo rendition of
// logoSize (one of Sizes: 64 for the small widget, 256 for a page).
func (p Profile) View(logoSize int) *View {
	v := &View{ProfileID: p.ID, Name: p.Name, LogoURL: p.LogoPath(logoSize), StylesheetURL: p.StylesheetPath()}
	for _, kv := range p.Vars() {
		switch strings.TrimPrefix(kv[0], "--trustd-brand-") {
		case "primary":
			v.Colors.Primary = kv[1]
		case "background":
			v.Colors.Background = kv[1]
		case "text":
			v.Colors.Text = kv[1]
		case "accent":
			v.Colors.Accent = kv[1]
		}
	}
	return v
}

// Public finds profile id of any workspace, for its public resources (the
// logo and the stylesheet, addressed by the random profile id).
func Public(cat *catalog.Catalog, id string) (Profile, bool) {
	p := cat.BrandingProfiles[id]
	if p == nil {
		return Profile{}, false
	}
	return Lookup(cat, p.WorkspaceID, id)
}
