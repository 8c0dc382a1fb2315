package catalog

import (
	"fmt"
	"time"
)

// Caps of branding profiles, so no tenant grows the replicated catalog
// without bound: profiles per workspace, and the bytes of one profile's
// normalised logo (every size together; console/branding/ re-encodes uploads to
// small PNGs well under it).
const (
	MaxBrandingProfilesPerWorkspace = 16
	MaxBrandingLogoBytes            = 192 << 10
)

// BrandingColors are a profile's colours, "#rrggbb" (validated by console/branding/).
type BrandingColors struct {
	Primary    string `json:"primary,omitempty"`
	Background string `json:"background,omitempty"`
	Text       string `json:"text,omitempty"`
	Accent     string `json:"accent,omitempty"`
}

// BrandingLogo is one normalised rendition of a profile's logo: a PNG
// re-encoded by console/branding/ from the decoded pixels (no metadata survives).
type BrandingLogo struct {
	Size int    `json:"size"` // the longer side in pixels
	PNG  []byte `json:"png"`
}

// BrandingProfile is a workspace's branding: the widget, the hosted
// identity page and the journey pages show it.
type BrandingProfile struct {
	ID          string         `json:"profile_id"` // UUID
	WorkspaceID string         `json:"workspace_id"`
	Name        string         `json:"name"`
	Colors      BrandingColors `json:"colors"`
	Logos       []BrandingLogo `json:"logos,omitempty"`
	// LogoVersion is the strong validator of the logo (a hash of every
	// rendition), "" without a logo.
	LogoVersion string    `json:"logo_version,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// PutBrandingProfile creates a branding profile or replaces one of the
// same workspace. Names are unique per workspace.
type PutBrandingProfile struct {
	Profile BrandingProfile `json:"profile"`
}

func (*PutBrandingProfile) Kind() string { return "branding_profile.put" }
func (c *PutBrandingProfile) Apply(tx *Tx) (any, error) {
	p := c.Profile
	if _, ok := tx.next.Workspaces[p.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, p.WorkspaceID)
	}
	size := 0
	for _, l := range p.Logos {
		size += len(l.PNG)
	}
	if size > MaxBrandingLogoBytes || len(p.Logos) > 4 || len(p.Name) > 64 {
		return nil, fmt.Errorf("%w: branding profile over its limits", ErrConflict)
	}
	cur, exists := tx.next.BrandingProfiles[p.ID]
	if exists && cur.WorkspaceID != p.WorkspaceID {
		return nil, fmt.Errorf("%w: branding profile %s", ErrNotFound, p.ID)
	}
	n := 0
	for _, o := range tx.next.BrandingProfiles {
		if o.WorkspaceID != p.WorkspaceID {
			continue
		}
		n++
		if o.Name == p.Name && o.ID != p.ID {
			return nil, fmt.Errorf("%w: a branding profile named %q exists", ErrConflict, p.Name)
		}
	}
	if !exists && n >= MaxBrandingProfilesPerWorkspace {
		return nil, fmt.Errorf("%w: the workspace has %d branding profiles, the most allowed", ErrConflict, n)
	}
	if exists {
		p.CreatedAt = cur.CreatedAt
	}
	Writable(tx, "branding_profiles", &tx.next.BrandingProfiles)[p.ID] = &p
	return &p, nil
}

// DeleteBrandingProfile removes a branding profile.
type DeleteBrandingProfile struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"profile_id"`
}

func (*DeleteBrandingProfile) Kind() string { return "branding_profile.delete" }
func (c *DeleteBrandingProfile) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.BrandingProfiles[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: branding profile %s", ErrNotFound, c.ID)
	}
	if use := BrandingProfileUse(tx.next, c.WorkspaceID, c.ID); use != "" {
		return nil, fmt.Errorf("%w: the branding profile is in use by %s; change that first", ErrConflict, use)
	}
	delete(Writable(tx, "branding_profiles", &tx.next.BrandingProfiles), c.ID)
	return nil, nil
}

func deleteBrandingOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "branding_profiles", &tx.next.BrandingProfiles, workspaceID, func(p *BrandingProfile) string { return p.WorkspaceID })
}

// needBrandingProfile checks that a site or mobile app names a profile of
// its own workspace ("" names none). A profile of another workspace is as
// absent as a missing one.
func needBrandingProfile(tx *Tx, workspaceID, id string) error {
	if id == "" {
		return nil
	}
	if p := tx.next.BrandingProfiles[id]; p == nil || p.WorkspaceID != workspaceID {
		return fmt.Errorf("%w: branding profile %s", ErrNotFound, id)
	}
	return nil
}

// BrandingProfileUse names a site or mobile app of the workspace that
// shows profile id ("site <id>", "mobile app <id>"; the lowest id, so
// every replica says the same), "" when none does: a profile in use is
// not deleted (its pages would silently lose their look).
func BrandingProfileUse(c *Catalog, workspaceID, id string) string {
	site, app := "", ""
	for _, s := range c.Sites {
		if s.WorkspaceID == workspaceID && s.BrandingProfileID == id && (site == "" || s.ID < site) {
			site = s.ID
		}
	}
	if site != "" {
		return "site " + site
	}
	for _, a := range c.MobileApps {
		if a.WorkspaceID == workspaceID && a.BrandingProfileID == id && (app == "" || a.ID < app) {
			app = a.ID
		}
	}
	if app != "" {
		return "mobile app " + app
	}
	return ""
}
