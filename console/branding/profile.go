package branding

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// Errors of a profile's fields and lookups.
var (
	ErrNotFound = errcode.New("branding-profile-not-found", errcode.NotFound, "no branding profile with this id (or it belongs to another workspace)")
	ErrNoLogo   = errcode.New("branding-logo-not-found", errcode.NotFound, "the branding profile has no logo")
	ErrSize     = errcode.New("branding-logo-size-invalid", errcode.Invalid, "size must be one of the stored renditions: 64 or 256")
)

// Errors lists every code of the package for the contract.
var Errors = []*errcode.Code{ErrNotFound, ErrNoLogo, ErrSize, ErrLogoMissing, ErrLogoFormat,
	ErrLogoAnimated, ErrLogoMalformed, ErrLogoTooLarge, ErrLogoTooSmall}

// ValidName checks a profile name: 1 to 64 bytes of UTF-8 without
// control characters (an invalid-field error otherwise).
func ValidName(n string) error {
	errName := errcode.Field("name", "must be 1 to 64 bytes of UTF-8 without control characters")
	if n == "" || len(n) > 64 || !utf8.ValidString(n) {
		return errName
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return errName
		}
	}
	return nil
}

// NormalizeColor checks a "#rrggbb" colour and returns it lower-cased;
// "" stays "" (not set).
func NormalizeColor(field, c string) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) != 7 || c[0] != '#' {
		return "", errcode.Field(field, "must be #rrggbb (six hexadecimal digits)")
	}
	if _, err := strconv.ParseUint(c[1:], 16, 32); err != nil {
		return "", errcode.Field(field, "must be #rrggbb (six hexadecimal digits)")
	}
	return strings.ToLower(c), nil
}

// NormalizeColors validates every colour of c.
func NormalizeColors(c catalog.BrandingColors) (catalog.BrandingColors, error) {
	var err error
	for _, f := range []struct {
		name string
		v    *string
	}{{"colors.primary", &c.Primary}, {"colors.background", &c.Background}, {"colors.text", &c.Text}, {"colors.accent", &c.Accent}} {
		if *f.v, err = NormalizeColor(f.name, *f.v); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Profile is what a page that shows a branding profile needs: its name,
// colours and where its logo is (no image bytes).
type Profile struct {
	ID          string
	WorkspaceID string
	Name        string
	Colors      catalog.BrandingColors
	// LogoVersion is "" without a logo.
	LogoVersion string
}

// Lookup finds the profile id of workspace in cat. A profile of another
// workspace is as absent as a missing one, so a site of one workspace can
// never show another's branding.
func Lookup(cat *catalog.Catalog, workspaceID, id string) (Profile, bool) {
	p := cat.BrandingProfiles[id]
	if p == nil || p.WorkspaceID != workspaceID {
		return Profile{}, false
	}
	return Profile{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Colors: p.Colors, LogoVersion: p.LogoVersion}, true
}

// Require checks that a site or mobile app of workspaceID may name the
// profile id ("" names none); the catalog command checks again when it
// applies.
func Require(cat *catalog.Catalog, workspaceID, id string) error {
	if id == "" {
		return nil
	}
	if _, ok := Lookup(cat, workspaceID, id); !ok {
		return ErrNotFound.With("no branding profile %q in this workspace", id)
	}
	return nil
}

// LogoPath is the public path of the profile's logo at size (0: the
// default), versioned so it can be cached as immutable; "" without a logo.
func (p Profile) LogoPath(size int) string {
	if p.LogoVersion == "" {
		return ""
	}
	q := "?v=" + p.LogoVersion
	if size != 0 {
		q += "&size=" + strconv.Itoa(size)
	}
	return "/v1/branding/" + p.ID + "/logo" + q
}

// Vars are the profile's set colours as CSS custom property names and
// values (--trustd-brand-primary, -background, -text, -accent), for a
// script to apply with element.style.setProperty (allowed under a CSP
// without 'unsafe-inline', unlike a style attribute).
func (p Profile) Vars() [][2]string {
	var out [][2]string
	for _, kv := range [][2]string{{"primary", p.Colors.Primary}, {"background", p.Colors.Background}, {"text", p.Colors.Text}, {"accent", p.Colors.Accent}} {
		if v, err := NormalizeColor("", kv[1]); err == nil && v != "" {
			out = append(out, [2]string{"--trustd-brand-" + kv[0], v})
		}
	}
	return out
}

// CSSVariables renders the profile's colours as CSS custom properties
// (--trustd-brand-primary, -background, -text, -accent), set ones only,
// for a style attribute or a :root rule. Colours were validated as
// #rrggbb when stored, so the output cannot break out of a declaration.
func (p Profile) CSSVariables() string {
	var b strings.Builder
	for _, kv := range p.Vars() {
		b.WriteString(kv[0] + ":" + kv[1] + ";")
	}
	return b.String()
}

// Logo returns the stored rendition of size (0: DefaultSize) of profile
// id, for the public logo endpoint: the PNG bytes and the ETag (the
// version and the size, quoted).
func Logo(cat *catalog.Catalog, id string, size int) (png []byte, etag string, err error) {
	if size == 0 {
		size = DefaultSize
	}
	p := cat.BrandingProfiles[id]
	if p == nil {
		return nil, "", ErrNotFound
	}
	if p.LogoVersion == "" {
		return nil, "", ErrNoLogo
	}
	for _, l := range p.Logos {
		if l.Size == size {
			return l.PNG, `"` + p.LogoVersion + "-" + strconv.Itoa(size) + `"`, nil
		}
	}
	return nil, "", ErrSize
}
