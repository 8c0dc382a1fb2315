package api

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/etag"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Branding profiles (spec 4.13): transport only. Validation, logo
// normalisation and the lookup the pages use live in console/branding/ (see its
// DESIGN.md). The contract bodies' names and documentation are the
// contract's schemas.

// BrandingLogoMaxBody is the body limit of a logo upload: the image
// base64-encoded (4/3) plus the JSON around it.
const BrandingLogoMaxBody = branding.MaxUploadBytes*4/3 + 4<<10

// Cache lifetimes of the public logo: a versioned URL (?v= the current
// version, as BrandingProfileView.logo urls are) never changes; an
// unversioned one may after an upload.
const (
	logoCacheImmutable = "public, max-age=31536000, immutable"
	logoCacheLong      = "public, max-age=86400"
)

// BrandingProfileInput creates or changes a profile; on change, absent
// fields keep their values.
type BrandingProfileInput struct {
	Name   *string                 `json:"name,omitempty" doc:"1 to 64 bytes, unique in the workspace; required on create."`
	Colors *catalog.BrandingColors `json:"colors,omitempty" doc:"Each #rrggbb or empty (not set); when sent, replaces all four."`
}

// BrandingLogoView locates a profile's normalised logo.
type BrandingLogoView struct {
	Version string            `json:"version" required:"true" doc:"Changes with every upload; also the ETag's base."`
	URLs    map[string]string `json:"urls" required:"true" doc:"Public versioned paths by size (64, 256), cacheable for a year."`
}

// BrandingProfileView is a profile as the admin API shows it.
type BrandingProfileView struct {
	ProfileID    string                 `json:"profile_id" required:"true" format:"uuid"`
	WorkspaceID  string                 `json:"workspace_id" required:"true"`
	Name         string                 `json:"name" required:"true"`
	Colors       catalog.BrandingColors `json:"colors" required:"true"`
	CSSVariables string                 `json:"css_variables" required:"true" doc:"The colours as CSS custom properties (--trustd-brand-primary, -background, -text, -accent), as the widget and hosted pages apply them."`
	Logo         *BrandingLogoView      `json:"logo,omitempty" doc:"Absent until a logo is uploaded."`
	CreatedAt    time.Time              `json:"created_at" required:"true"`
	UpdatedAt    time.Time              `json:"updated_at" required:"true"`
}

// BrandingProfileList lists a workspace's profiles.
type BrandingProfileList struct {
	Profiles []BrandingProfileView `json:"profiles" required:"true"`
}

// BrandingLogoInput uploads a logo.
type BrandingLogoInput struct {
	Image string `json:"image" required:"true" doc:"Base64 (standard alphabet, a data: URL prefix is accepted) of a PNG, JPEG or WebP: at most 2 MiB, 4096 px a side, 8 Mpx, shorter side ≥ 16 px, not animated. SVG and GIF are refused. Re-encoded to PNG at 64 and 256 px (longer side), metadata dropped; the upload itself is never stored."`
}

func brandingView(p *catalog.BrandingProfile) *BrandingProfileView {
	pr := branding.Profile{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Colors: p.Colors, LogoVersion: p.LogoVersion}
	v := &BrandingProfileView{ProfileID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Colors: p.Colors,
		CSSVariables: pr.CSSVariables(), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if p.LogoVersion != "" {
		v.Logo = &BrandingLogoView{Version: p.LogoVersion, URLs: map[string]string{}}
		for _, l := range p.Logos {
			v.Logo.URLs[strconv.Itoa(l.Size)] = pr.LogoPath(l.Size)
		}
	}
	return v
}

// brandingProfiles is the admin CRUD of branding profiles.
var brandingProfiles = &kernel.Resource[catalog.BrandingProfile, BrandingProfileInput, BrandingProfileView, BrandingProfileList]{
	What: "branding profile", Path: "/workspaces/{workspace_id}/branding-profiles", Param: "profile_id",
	ID: "BrandingProfile", IDs: "BrandingProfiles",
	Table: func(c *catalog.Catalog) map[string]*catalog.BrandingProfile { return c.BrandingProfiles },
	Owner: func(p *catalog.BrandingProfile) string { return p.WorkspaceID },
	// a full workspace (the profile cap) or a duplicate name
	CreateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	UpdateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	// a profile a site or mobile app still shows is not deleted
	DeleteErrors: []kernel.ErrorCode{kernel.ErrConflict},
	Build: func(c *kernel.Call, in *BrandingProfileInput, cur *catalog.BrandingProfile, workspaceID string) (catalog.BrandingProfile, string, error) {
		p := catalog.BrandingProfile{WorkspaceID: workspaceID}
		if cur != nil {
			p = *cur
		}
		if in.Name != nil {
			p.Name = *in.Name
		}
		if err := branding.ValidName(p.Name); err != nil {
			return p, "", err
		}
		if in.Colors != nil {
			cs, err := branding.NormalizeColors(*in.Colors)
			if err != nil {
				return p, "", err
			}
			p.Colors = cs
		}
		return p, "", nil
	},
	Stamp: func(p, cur *catalog.BrandingProfile, now time.Time) {
		p.ID, p.CreatedAt, p.UpdatedAt = kernel.Stamped(cur, func(c *catalog.BrandingProfile) (string, time.Time) { return c.ID, c.CreatedAt }, now)
	},
	Create: func(p catalog.BrandingProfile) catalog.Command { return &catalog.PutBrandingProfile{Profile: p} },
	Update: func(_ *BrandingProfileInput, p catalog.BrandingProfile) catalog.Command {
		return &catalog.PutBrandingProfile{Profile: p}
	},
	Delete: func(p *catalog.BrandingProfile, _ time.Time) catalog.Command {
		return &catalog.DeleteBrandingProfile{WorkspaceID: p.WorkspaceID, ID: p.ID}
	},
	View: func(_ *kernel.Call, p *catalog.BrandingProfile, _ string) *BrandingProfileView {
		return brandingView(p)
	},
	SortID: func(v *BrandingProfileView) string { return v.Name },
	List:   func(vs []BrandingProfileView) *BrandingProfileList { return &BrandingProfileList{Profiles: vs} },
}

func routes() []kernel.Route {
	one := brandingProfiles.Path + "/{profile_id}"
	a := []kernel.Auth{kernel.AuthAdmin}
	logoErrs := kernel.WithModuleCodes(append(kernel.AdminErrors(), kernel.ErrConflict), []*errcode.Code{branding.ErrLogoMissing, branding.ErrLogoFormat,
		branding.ErrLogoAnimated, branding.ErrLogoMalformed, branding.ErrLogoTooLarge, branding.ErrLogoTooSmall})
	sizes := make([]string, len(branding.Sizes))
	for i, n := range branding.Sizes {
		sizes[i] = strconv.Itoa(n)
	}
	return append(brandingProfiles.Routes(), []kernel.Route{
		{Method: "PUT", Path: one + "/logo", Admin: true, ID: "putBrandingLogo", Tag: "Admin", Auth: a,
			Summary: "Upload a branding profile's logo: decoded, size-checked and re-encoded to PNG at fixed sizes with metadata stripped.",
			Body:    &BrandingLogoInput{}, Result: &BrandingProfileView{}, Errors: logoErrs, MaxBody: BrandingLogoMaxBody, Handle: kernel.AdminOnly(putBrandingLogo)},
		{Method: "DELETE", Path: one + "/logo", Admin: true, ID: "deleteBrandingLogo", Tag: "Admin", Auth: a,
			Summary: "Remove a branding profile's logo.",
			Result:  &BrandingProfileView{}, Errors: append(kernel.AdminErrors(), kernel.ErrConflict), Handle: kernel.AdminOnly(deleteBrandingLogo)},
		{Method: "GET", Path: "/branding/{profile_id}/logo", ID: "getBrandingLogo", Tag: "Branding",
			Summary:     "A branding profile's normalised logo (image/png), public. With ?v=<the current version> cached for a year as immutable, else for a day; ETag and If-None-Match → 304.",
			ContentType: "image/png", Conditional: true,
			Params: []kernel.Param{{Name: "size", In: "query", Description: "The rendition's longer side in pixels; default " + strconv.Itoa(branding.DefaultSize) + ".", Enum: sizes},
				{Name: "v", In: "query", Description: "The logo version (BrandingProfileView.logo.version): makes the answer immutable while it is current."}},
			Errors: kernel.WithModuleCodes(nil, []*errcode.Code{branding.ErrNotFound, branding.ErrNoLogo, branding.ErrSize}), Handle: getBrandingLogo},
		{Method: "GET", Path: "/branding/{profile_id}/theme.css", ID: "getBrandingStylesheet", Tag: "Branding",
			Summary: "A branding profile's colours as CSS custom properties on :root (--trustd-brand-primary, -background, -text, -accent; only #rrggbb values), public. " +
				"The hosted identity page and the journey pages link it (stylesheet_url); with ?v=<the current version> cached for a year as immutable, else 5 minutes; ETag and If-None-Match → 304.",
			ContentType: "text/css", Conditional: true,
			Params: []kernel.Param{{Name: "v", In: "query", Description: "The stylesheet version (the v of stylesheet_url): makes the answer immutable while it is current."}},
			Errors: kernel.WithModuleCodes(nil, []*errcode.Code{branding.ErrNotFound}), Handle: getBrandingStylesheet},
	}...)
}

// getBrandingStylesheet serves a profile's colours as a stylesheet, for
// pages whose CSP allows no inline style.
func getBrandingStylesheet(c *kernel.Call) {
	id := strings.ToLower(c.Param("profile_id"))
	p, ok := branding.Public(c.Catalog(), id)
	if !ident.UUID(id) || !ok {
		c.FailErr(branding.ErrNotFound)
		return
	}
	version := p.StyleVersion()
	tag := `"` + version + `"`
	h := &c.Ctx.Response.Header
	if string(c.Ctx.QueryArgs().Peek("v")) == version {
		h.Set("Cache-Control", logoCacheImmutable)
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	serveTagged(c, tag, "text/css; charset=utf-8", []byte(p.Stylesheet()))
}

func putBrandingLogo(c *kernel.Call) {
	cur := brandingProfiles.Find(c)
	var in BrandingLogoInput
	if cur == nil || !c.Decode(&in) {
		return
	}
	raw := in.Image
	if strings.HasPrefix(raw, "data:") {
		if i := strings.Index(raw, ","); i >= 0 {
			raw = raw[i+1:]
		}
	}
	img, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		c.Fail(kernel.ErrInvalidField, "image: not standard base64")
		return
	}
	logos, version, err := branding.NormalizeLogo(img)
	if err != nil {
		c.FailErr(err)
		return
	}
	p := *cur
	p.Logos, p.LogoVersion, p.UpdatedAt = logos, version, c.Now().UTC()
	if v, ok := c.Apply(&catalog.PutBrandingProfile{Profile: p}); ok {
		c.OK(brandingView(v.(*catalog.BrandingProfile)))
	}
}

func deleteBrandingLogo(c *kernel.Call) {
	cur := brandingProfiles.Find(c)
	if cur == nil {
		return
	}
	p := *cur
	p.Logos, p.LogoVersion, p.UpdatedAt = nil, "", c.Now().UTC()
	if v, ok := c.Apply(&catalog.PutBrandingProfile{Profile: p}); ok {
		c.OK(brandingView(v.(*catalog.BrandingProfile)))
	}
}

// getBrandingLogo serves a stored rendition. The bytes are a PNG this
// service encoded, served with nosniff and a CSP that forbids everything,
// so even a browser navigating to it runs nothing.
func getBrandingLogo(c *kernel.Call) {
	id := c.Param("profile_id")
	if !ident.UUID(id) {
		c.FailErr(branding.ErrNotFound)
		return
	}
	size := 0
	if q := c.Ctx.QueryArgs().Peek("size"); len(q) > 0 {
		n, err := strconv.Atoi(string(q))
		if err != nil || n <= 0 {
			c.FailErr(branding.ErrSize)
			return
		}
		size = n
	}
	png, tag, err := branding.Logo(c.Catalog(), strings.ToLower(id), size)
	if err != nil {
		c.FailErr(err)
		return
	}
	h := &c.Ctx.Response.Header
	if v := c.Ctx.QueryArgs().Peek("v"); len(v) > 0 && strings.HasPrefix(tag, `"`+string(v)+"-") {
		h.Set("Cache-Control", logoCacheImmutable)
	} else {
		h.Set("Cache-Control", logoCacheLong)
	}
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	serveTagged(c, tag, "image/png", png)
}

// serveTagged answers a public asset under its entity tag (the caller set
// its Cache-Control): 304 when If-None-Match names the tag, else body.
// nosniff keeps a browser from reading it as anything but contentType;
// cross-origin lets the customer's pages embed it.
func serveTagged(c *kernel.Call, tag, contentType string, body []byte) {
	h := &c.Ctx.Response.Header
	h.Set("ETag", tag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if etag.Matches(string(c.Ctx.Request.Header.Peek("If-None-Match")), tag) {
		c.Ctx.SetStatusCode(304)
		return
	}
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType(contentType)
	c.Ctx.SetBody(body)
}
