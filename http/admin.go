package http

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/branding"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/ident"
)

// The admin API: workspaces, sites, mobile apps and scoped credentials.
// Every change goes through Raft; reads come from the local catalog.

// NewSecret returns a random secret with a readable prefix.
func NewSecret(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Scopes a credential may carry (spec section 5).
var knownScopes = []string{"site.verify", "identity.document.verify", "identity.verify"}

// WorkspaceInput creates or patches a workspace; on create only name is required.
type WorkspaceInput struct {
	Name                      *string `json:"name,omitempty" doc:"1 to 100 characters." required:"true"`
	RateLimitingEnabled       *bool   `json:"rate_limiting_enabled,omitempty"`
	AdaptiveCostEnabled       *bool   `json:"adaptive_cost_enabled,omitempty"`
	AdaptiveCostWindowSeconds *int    `json:"adaptive_cost_window_seconds,omitempty" doc:"10 to 86400."`
	DefaultMode               *string `json:"default_mode,omitempty" enum:"observe|throttle|enforce"`
	IngressPerSecond          *int    `json:"ingress_per_second,omitempty" doc:"Per-credential ingress limit of this workspace's callers (0: node default)."`
	IngressBurst              *int    `json:"ingress_burst,omitempty"`
}

// WorkspaceView is a workspace as the admin API shows it.
type WorkspaceView struct {
	WorkspaceID string                    `json:"workspace_id" required:"true" format:"uuid"`
	Name        string                    `json:"name" required:"true"`
	CreatedAt   time.Time                 `json:"created_at" required:"true"`
	Settings    catalog.WorkspaceSettings `json:"settings" required:"true"`
}

// WorkspaceList is the answer of GET /admin/v1/workspaces.
type WorkspaceList struct {
	Workspaces []WorkspaceView `json:"workspaces" required:"true"`
}

// SiteInput creates or patches a site.
type SiteInput struct {
	Name                *string   `json:"name,omitempty" required:"true"`
	Hostnames           *[]string `json:"hostnames,omitempty" doc:"Exact hostnames the widget may run on; no suffix matching. Required unless environment is sandbox."`
	Environment         *string   `json:"environment,omitempty" enum:"production|staging|development|sandbox" doc:"Fixed at creation."`
	ChallengeMode       *string   `json:"challenge_mode,omitempty" enum:"checkbox|visual|score_based|score_enforced"`
	ScoreThreshold      *float64  `json:"score_threshold,omitempty" doc:"0 to 1, default 0.5."`
	TokenTTLSeconds     *int      `json:"token_ttl_seconds,omitempty" doc:"Response token lifetime, 30 to 3600, default 300."`
	ChallengeDifficulty *int      `json:"challenge_difficulty,omitempty" doc:"Minimum proof-of-work difficulty in leading zero bits, 1 to 24; 0 lets risk decide."`
	BrandingProfileID   *string   `json:"branding_profile_id,omitempty" doc:"A branding profile of the same workspace: the widget, the journey pages and the hosted identity page of this site show its colours and logo. Empty string: none (the default look). Another workspace's or a missing profile: 404 branding-profile-not-found."`
}

// SiteView is a site as the admin API shows it. Secret appears only in
// the answers of create and rotate-secret.
type SiteView struct {
	SiteID              string     `json:"site_id" required:"true" format:"uuid"`
	WorkspaceID         string     `json:"workspace_id" required:"true" format:"uuid"`
	Name                string     `json:"name" required:"true"`
	SiteKey             string     `json:"site_key" required:"true" doc:"Public key for the browser widget."`
	Secret              string     `json:"secret,omitempty" doc:"Private secret; shown only once."`
	Hostnames           []string   `json:"hostnames" required:"true"`
	Environment         string     `json:"environment" required:"true"`
	ChallengeMode       string     `json:"challenge_mode" required:"true"`
	ScoreThreshold      float64    `json:"score_threshold" required:"true"`
	TokenTTLSeconds     int        `json:"token_ttl_seconds" required:"true"`
	ChallengeDifficulty int        `json:"challenge_difficulty" required:"true"`
	PreviousSecretUntil *time.Time `json:"previous_secret_valid_until,omitempty"`
	CreatedAt           time.Time  `json:"created_at" required:"true"`
	BrandingProfileID   string     `json:"branding_profile_id,omitempty" doc:"The branding profile the site's pages show; absent for the default look."`
}

// SiteList is the answer of GET …/sites.
type SiteList struct {
	Sites []SiteView `json:"sites" required:"true"`
}

// RotateInput tunes a secret rotation.
type RotateInput struct {
	GracePeriodSeconds *int `json:"grace_period_seconds,omitempty" doc:"How long the old secret keeps working, 0 to 604800; default 86400."`
}

// MobileAppInput registers a mobile app.
type MobileAppInput struct {
	Name     string `json:"name" required:"true"`
	Platform string `json:"platform" required:"true" enum:"android|ios"`
	AppID    string `json:"app_id" required:"true" doc:"Package name or bundle id, e.g. com.example.app."`
	// BrandingProfileID is set at registration only (apps have no update).
	BrandingProfileID string `json:"branding_profile_id,omitempty" doc:"A branding profile of the same workspace, shown by the journey pages of sessions the app starts. Missing or another workspace's: 404 branding-profile-not-found."`
}

// MobileAppView is a mobile app; MobileSecret only in the create answer.
type MobileAppView struct {
	MobileAppID  string    `json:"mobile_app_id" required:"true" format:"uuid"`
	WorkspaceID  string    `json:"workspace_id" required:"true" format:"uuid"`
	Name         string    `json:"name" required:"true"`
	Platform     string    `json:"platform" required:"true"`
	AppID        string    `json:"app_id" required:"true"`
	MobileSecret string    `json:"mobile_secret,omitempty" doc:"Server secret; shown only once."`
	CreatedAt    time.Time `json:"created_at" required:"true"`
	// BrandingProfileID: as the input's.
	BrandingProfileID string `json:"branding_profile_id,omitempty" doc:"The branding profile of the app's journey pages; absent for the default look."`
}

// MobileAppList is the answer of GET …/mobile-apps.
type MobileAppList struct {
	MobileApps []MobileAppView `json:"mobile_apps" required:"true"`
}

// CredentialInput creates a scoped server credential.
type CredentialInput struct {
	Name   string   `json:"name" required:"true"`
	Scopes []string `json:"scopes" required:"true" doc:"Any of site.verify, identity.document.verify, identity.verify."`
}

// CredentialView is a credential; Credential only in the create answer.
type CredentialView struct {
	CredentialID string    `json:"credential_id" required:"true" format:"uuid"`
	WorkspaceID  string    `json:"workspace_id" required:"true" format:"uuid"`
	Name         string    `json:"name" required:"true"`
	Scopes       []string  `json:"scopes" required:"true"`
	Credential   string    `json:"credential,omitempty" doc:"Bearer token; shown only once."`
	CreatedAt    time.Time `json:"created_at" required:"true"`
}

// CredentialList is the answer of GET …/credentials.
type CredentialList struct {
	Credentials []CredentialView `json:"credentials" required:"true"`
}

var adminErrors = []ErrorCode{ErrUnauthorized, ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrNotFound, ErrUnavailable}

// admin wraps an admin handler with the admin token check (AdminOnly; it
// needs no server, so a nil *Server may call it).
func (s *Server) admin(h func(*Call)) func(*Call) { return AdminOnly(h) }

// apply replicates cmd and answers any error itself; ok reports success.
func (c *Call) apply(cmd catalog.Command) (any, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.s.store.Apply(ctx, cmd)
	if err != nil {
		c.failErr(err)
		return nil, false
	}
	return v, true
}

// workspace resolves the {workspace_id} parameter, answering 404 itself.
func (c *Call) workspace() *catalog.Workspace {
	w := c.cat.Workspaces[c.Param("workspace_id")]
	if w == nil {
		c.fail(ErrNotFound, "no workspace "+c.Param("workspace_id"))
	}
	return w
}

func (s *Server) adminRoutes() []Route {
	ws := "/workspaces/{workspace_id}"
	a := []Auth{AuthAdmin}
	rs := []Route{
		idempotentCreate(Route{Method: "POST", Path: "/workspaces", Admin: true, ID: "createWorkspace", Tag: "Admin", Auth: a, Summary: "Create a workspace.",
			Body: &WorkspaceInput{}, Status: 201, Result: &WorkspaceView{}, Errors: adminErrors, Handle: s.admin(s.createWorkspace)}),
		{Method: "GET", Path: "/workspaces", Admin: true, ID: "listWorkspaces", Tag: "Admin", Auth: a, Summary: "List workspaces.",
			Result: &WorkspaceList{}, Errors: adminErrors, Handle: s.admin(s.listWorkspaces)},
		{Method: "GET", Path: ws, Admin: true, ID: "getWorkspace", Tag: "Admin", Auth: a, Summary: "Read a workspace.",
			Result: &WorkspaceView{}, Errors: adminErrors, Handle: s.admin(func(c *Call) {
				if w := c.workspace(); w != nil {
					c.ok(workspaceView(w))
				}
			})},
		{Method: "PATCH", Path: ws, Admin: true, ID: "updateWorkspace", Tag: "Admin", Auth: a, Summary: "Change a workspace's name or settings.",
			Body: &WorkspaceInput{}, Result: &WorkspaceView{}, Errors: adminErrors, Handle: s.admin(s.updateWorkspace)},
		{Method: "DELETE", Path: ws, Admin: true, ID: "deleteWorkspace", Tag: "Admin", Auth: a, Summary: "Delete a workspace and everything in it.",
			Status: 204, Errors: adminErrors, Handle: s.admin(func(c *Call) {
				if w := c.workspace(); w != nil {
					if _, ok := c.apply(&catalog.DeleteWorkspace{ID: w.ID}); ok {
						c.noContent()
					}
				}
			})},
		{Method: "POST", Path: ws + "/sites/{site_id}/rotate-secret", Admin: true, ID: "rotateSiteSecret", Tag: "Admin", Auth: a,
			Summary: "Issue a new site secret; the old one keeps working for a grace period.",
			Body:    &RotateInput{}, Result: &SiteView{}, Errors: adminErrors, Handle: s.admin(s.rotateSecret)},
	}
	rs = append(rs, sites.routes(s)...)
	rs = append(rs, mobileApps.routes(s)...)
	return append(rs, credentials.routes(s)...)
}

func workspaceView(w *catalog.Workspace) *WorkspaceView {
	return &WorkspaceView{WorkspaceID: w.ID, Name: w.Name, CreatedAt: w.CreatedAt, Settings: w.Settings}
}

func validName(field string, v *string) error {
	if v == nil || len(strings.TrimSpace(*v)) == 0 || len(*v) > 100 {
		return invalid(field, "required, 1 to 100 characters")
	}
	return nil
}

func (in *WorkspaceInput) validate(create bool) error {
	if create || in.Name != nil {
		if err := validName("name", in.Name); err != nil {
			return err
		}
	}
	if v := in.AdaptiveCostWindowSeconds; v != nil && (*v < 10 || *v > 86400) {
		return invalid("adaptive_cost_window_seconds", "must be 10 to 86400")
	}
	if v := in.DefaultMode; v != nil && *v != "observe" && *v != "throttle" && *v != "enforce" {
		return invalid("default_mode", "must be observe, throttle or enforce")
	}
	if v := in.IngressPerSecond; v != nil && (*v < 0 || *v > 10_000_000) {
		return invalid("ingress_per_second", "must be 0 to 10000000")
	}
	if v := in.IngressBurst; v != nil && (*v < 0 || *v > 10_000_000) {
		return invalid("ingress_burst", "must be 0 to 10000000")
	}
	return nil
}

func (in *WorkspaceInput) patch() catalog.WorkspacePatch {
	return catalog.WorkspacePatch{
		Name: in.Name, RateLimitingEnabled: in.RateLimitingEnabled, AdaptiveCostEnabled: in.AdaptiveCostEnabled,
		AdaptiveCostWindowSeconds: in.AdaptiveCostWindowSeconds, DefaultMode: in.DefaultMode,
		IngressPerSecond: in.IngressPerSecond, IngressBurst: in.IngressBurst,
	}
}

func (s *Server) createWorkspace(c *Call) {
	var in WorkspaceInput
	if !c.decode(&in) {
		return
	}
	if err := in.validate(true); err != nil {
		c.failErr(err)
		return
	}
	createOnce(c, "", &in, func() (catalog.Command, string, error) {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		w := catalog.Workspace{ID: uuid.NewString(), Name: strings.TrimSpace(*in.Name), CreatedAt: c.Now().UTC(),
			Settings: catalog.DefaultSettings(), ScopeKey: key}
		// Settings given at creation are part of the one create, so a
		// workspace never exists without them.
		p := in.patch()
		p.ApplyTo(&w)
		return &catalog.CreateWorkspace{Workspace: w}, "", nil
	}, func(w *catalog.Workspace, _ string) { c.ok(workspaceView(w)) })
}

func (s *Server) listWorkspaces(c *Call) {
	out := WorkspaceList{Workspaces: []WorkspaceView{}}
	for _, w := range c.cat.Workspaces {
		out.Workspaces = append(out.Workspaces, *workspaceView(w))
	}
	sort.Slice(out.Workspaces, func(i, j int) bool {
		return out.Workspaces[i].CreatedAt.Before(out.Workspaces[j].CreatedAt) ||
			out.Workspaces[i].CreatedAt.Equal(out.Workspaces[j].CreatedAt) && out.Workspaces[i].WorkspaceID < out.Workspaces[j].WorkspaceID
	})
	c.ok(&out)
}

func (s *Server) updateWorkspace(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	var in WorkspaceInput
	if !c.decode(&in) {
		return
	}
	if err := in.validate(false); err != nil {
		c.failErr(err)
		return
	}
	if v, ok := c.apply(&catalog.UpdateWorkspace{ID: w.ID, Patch: in.patch()}); ok {
		c.ok(workspaceView(v.(*catalog.Workspace)))
	}
}

// inWorkspace resolves {workspace_id} and the {param} id of table to a
// record of that workspace, answering 404 itself (a record of another
// workspace is as absent as a missing one). owner names a record's
// workspace.
func inWorkspace[T any](c *Call, table map[string]*T, param, what string, owner func(*T) string) *T {
	w := c.workspace()
	if w == nil {
		return nil
	}
	v := table[c.Param(param)]
	if v == nil || owner(v) != w.ID {
		c.fail(ErrNotFound, "no "+what+" "+c.Param(param)+" in workspace "+w.ID)
		return nil
	}
	return v
}

// site resolves {workspace_id} and {site_id}, answering 404 itself.
func (c *Call) site() *catalog.Site { return sites.find(c) }

// sites is the admin CRUD of sites; rotate-secret is its one extra
// operation (adminRoutes).
var sites = &resource[catalog.Site, SiteInput, SiteView, SiteList]{
	what: "site", path: "/workspaces/{workspace_id}/sites", param: "site_id", id: "Site", ids: "Sites",
	summary: map[string]string{"create": "Create a site; the answer holds its secret, once.", "list": "List a workspace's sites.",
		"update": "Change a site."},
	// a branding profile that is missing or another workspace's; the
	// workspace at catalog.MaxSitesPerWorkspace (409)
	createErrors: withModuleCodes([]ErrorCode{ErrConflict}, []*errcode.Code{branding.ErrNotFound}),
	updateErrors: withModuleCodes(nil, []*errcode.Code{branding.ErrNotFound}),
	table:        func(c *catalog.Catalog) map[string]*catalog.Site { return c.Sites },
	owner:        func(st *catalog.Site) string { return st.WorkspaceID },
	build:        buildSite,
	create:       func(st catalog.Site) catalog.Command { return &catalog.CreateSite{Site: st} },
	update: func(in *SiteInput, st catalog.Site) catalog.Command {
		return &catalog.UpdateSite{WorkspaceID: st.WorkspaceID, ID: st.ID, Patch: catalog.SitePatch{Name: in.Name, Hostnames: in.Hostnames,
			ChallengeMode: in.ChallengeMode, ScoreThreshold: in.ScoreThreshold, TokenTTLSeconds: in.TokenTTLSeconds, ChallengeDifficulty: in.ChallengeDifficulty,
			BrandingProfileID: in.BrandingProfileID}}
	},
	delete: func(st *catalog.Site, _ time.Time) catalog.Command {
		return &catalog.DeleteSite{WorkspaceID: st.WorkspaceID, ID: st.ID}
	},
	view:   func(_ *Call, st *catalog.Site, secret string) *SiteView { return siteView(st, secret) },
	sortID: func(v *SiteView) string { return v.SiteID },
	list:   func(vs []SiteView) *SiteList { return &SiteList{Sites: vs} },
}

func siteView(st *catalog.Site, secret string) *SiteView {
	v := &SiteView{SiteID: st.ID, WorkspaceID: st.WorkspaceID, Name: st.Name, SiteKey: st.SiteKey, Secret: secret,
		Hostnames: st.Hostnames, Environment: st.Environment, ChallengeMode: st.ChallengeMode,
		ScoreThreshold: st.ScoreThreshold, TokenTTLSeconds: st.TokenTTLSeconds,
		ChallengeDifficulty: st.ChallengeDifficulty, CreatedAt: st.CreatedAt, BrandingProfileID: st.BrandingProfileID}
	if v.Hostnames == nil {
		v.Hostnames = []string{}
	}
	if !st.PrevSecretUntil.IsZero() {
		t := st.PrevSecretUntil
		v.PreviousSecretUntil = &t
	}
	return v
}

func (in *SiteInput) validate(create bool, env string) error {
	if create || in.Name != nil {
		if err := validName("name", in.Name); err != nil {
			return err
		}
	}
	if in.Hostnames != nil {
		if len(*in.Hostnames) > 100 {
			return invalid("hostnames", "at most 100")
		}
		for i, h := range *in.Hostnames {
			h = strings.ToLower(h)
			(*in.Hostnames)[i] = h
			if !ident.Hostname(h) {
				return invalid("hostnames", "invalid hostname "+h+" (exact lowercase names; no wildcards, schemes or ports)")
			}
		}
	}
	if create && env != catalog.EnvSandbox && (in.Hostnames == nil || len(*in.Hostnames) == 0) {
		return invalid("hostnames", "at least one hostname is required")
	}
	if v := in.ChallengeMode; v != nil {
		switch *v {
		case catalog.ModeCheckbox, catalog.ModeVisual, catalog.ModeScoreBased, catalog.ModeScoreEnforced:
		default:
			return invalid("challenge_mode", "must be checkbox, visual, score_based or score_enforced")
		}
	}
	if v := in.ScoreThreshold; v != nil && (*v < 0 || *v > 1) {
		return invalid("score_threshold", "must be 0 to 1")
	}
	if v := in.TokenTTLSeconds; v != nil && (*v < 30 || *v > 3600) {
		return invalid("token_ttl_seconds", "must be 30 to 3600")
	}
	if v := in.ChallengeDifficulty; v != nil && (*v < 0 || *v > 24) {
		return invalid("challenge_difficulty", "must be 0 to 24")
	}
	return nil
}

// buildSite validates a site input: on create it makes the site, its
// public key and its secret (returned once; the site keeps its hash); on
// update it checks the patch against the site, which update then applies.
func buildSite(c *Call, in *SiteInput, cur *catalog.Site, workspaceID string) (catalog.Site, string, error) {
	if in.BrandingProfileID != nil {
		if err := branding.Require(c.cat, workspaceID, *in.BrandingProfileID); err != nil {
			return catalog.Site{}, "", err
		}
	}
	if cur != nil {
		if in.Environment != nil && *in.Environment != cur.Environment {
			return *cur, "", invalid("environment", "is fixed at creation; create another site")
		}
		if err := in.validate(false, cur.Environment); err != nil {
			return *cur, "", err
		}
		if in.Hostnames != nil && len(*in.Hostnames) == 0 && !cur.Sandbox() {
			return *cur, "", invalid("hostnames", "at least one hostname is required")
		}
		return *cur, "", nil
	}
	env := catalog.EnvProduction
	if in.Environment != nil {
		env = *in.Environment
		switch env {
		case catalog.EnvProduction, catalog.EnvStaging, catalog.EnvDevelopment, catalog.EnvSandbox:
		default:
			return catalog.Site{}, "", invalid("environment", "must be production, staging, development or sandbox")
		}
	}
	if err := in.validate(true, env); err != nil {
		return catalog.Site{}, "", err
	}
	keyPfx := "site_"
	if env == catalog.EnvSandbox {
		keyPfx = "site_sandbox_"
	}
	secret := NewSecret(siteSecretPrefix(env))
	st := catalog.Site{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: strings.TrimSpace(*in.Name),
		SiteKey: NewSecret(keyPfx), SecretHash: catalog.HashSecret(secret), Environment: env,
		ChallengeMode: catalog.ModeCheckbox, ScoreThreshold: 0.5, TokenTTLSeconds: 300, CreatedAt: c.Now().UTC()}
	if in.Hostnames != nil {
		st.Hostnames = *in.Hostnames
	}
	if in.ChallengeMode != nil {
		st.ChallengeMode = *in.ChallengeMode
	}
	if in.ScoreThreshold != nil {
		st.ScoreThreshold = *in.ScoreThreshold
	}
	if in.TokenTTLSeconds != nil {
		st.TokenTTLSeconds = *in.TokenTTLSeconds
	}
	if in.ChallengeDifficulty != nil {
		st.ChallengeDifficulty = *in.ChallengeDifficulty
	}
	if in.BrandingProfileID != nil {
		st.BrandingProfileID = *in.BrandingProfileID
	}
	return st, secret, nil
}

// siteSecretPrefix names a site secret's environment: sk_live_,
// sk_sandbox_, or sk_ and the environment's first four letters.
func siteSecretPrefix(env string) string {
	switch env {
	case catalog.EnvProduction:
		return "sk_live_"
	case catalog.EnvSandbox:
		return "sk_sandbox_"
	}
	return "sk_" + env[:4] + "_"
}

func (s *Server) rotateSecret(c *Call) {
	st := c.site()
	if st == nil {
		return
	}
	var in RotateInput
	if len(c.Ctx.Request.Body()) > 0 && !c.decode(&in) {
		return
	}
	grace := 86400
	if in.GracePeriodSeconds != nil {
		if *in.GracePeriodSeconds < 0 || *in.GracePeriodSeconds > 604800 {
			c.failErr(invalid("grace_period_seconds", "must be 0 to 604800"))
			return
		}
		grace = *in.GracePeriodSeconds
	}
	secret := NewSecret(siteSecretPrefix(st.Environment))
	cmd := &catalog.RotateSiteSecret{WorkspaceID: st.WorkspaceID, ID: st.ID, NewHash: catalog.HashSecret(secret),
		GraceUntil: c.Now().UTC().Add(time.Duration(grace) * time.Second)}
	if v, ok := c.apply(cmd); ok {
		c.ok(siteView(v.(*catalog.Site), secret))
	}
}

// mobileApps is the admin API of mobile apps: create, list, delete.
var mobileApps = &resource[catalog.MobileApp, MobileAppInput, MobileAppView, MobileAppList]{
	what: "mobile app", path: "/workspaces/{workspace_id}/mobile-apps", param: "mobile_app_id", id: "MobileApp", ids: "MobileApps",
	noGet:        true,
	summary:      map[string]string{"create": "Register a mobile app; the answer holds its server secret, once.", "list": "List mobile apps."},
	createErrors: withModuleCodes([]ErrorCode{ErrConflict}, []*errcode.Code{branding.ErrNotFound}),
	table:        func(c *catalog.Catalog) map[string]*catalog.MobileApp { return c.MobileApps },
	owner:        func(a *catalog.MobileApp) string { return a.WorkspaceID },
	build: func(c *Call, in *MobileAppInput, _ *catalog.MobileApp, workspaceID string) (catalog.MobileApp, string, error) {
		if err := validName("name", &in.Name); err != nil {
			return catalog.MobileApp{}, "", err
		}
		if in.Platform != "android" && in.Platform != "ios" {
			return catalog.MobileApp{}, "", invalid("platform", "must be android or ios")
		}
		if !validAppID(in.AppID) {
			return catalog.MobileApp{}, "", invalid("app_id", "1 to 200 characters of letters, digits, '.', '_' or '-'")
		}
		if err := branding.Require(c.cat, workspaceID, in.BrandingProfileID); err != nil {
			return catalog.MobileApp{}, "", err
		}
		secret := NewSecret("ms_")
		return catalog.MobileApp{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: in.Name, Platform: in.Platform,
			AppID: in.AppID, SecretHash: catalog.HashSecret(secret), CreatedAt: c.Now().UTC(), BrandingProfileID: in.BrandingProfileID}, secret, nil
	},
	create: func(a catalog.MobileApp) catalog.Command { return &catalog.CreateMobileApp{App: a} },
	delete: func(a *catalog.MobileApp, _ time.Time) catalog.Command {
		return &catalog.DeleteMobileApp{WorkspaceID: a.WorkspaceID, ID: a.ID}
	},
	view: func(_ *Call, a *catalog.MobileApp, secret string) *MobileAppView {
		return &MobileAppView{MobileAppID: a.ID, WorkspaceID: a.WorkspaceID, Name: a.Name, Platform: a.Platform,
			AppID: a.AppID, MobileSecret: secret, CreatedAt: a.CreatedAt, BrandingProfileID: a.BrandingProfileID}
	},
	sortID: func(v *MobileAppView) string { return v.MobileAppID },
	list:   func(vs []MobileAppView) *MobileAppList { return &MobileAppList{MobileApps: vs} },
}

func validAppID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return false
		}
	}
	return true
}

// credentials is the admin API of scoped server credentials: create,
// list, delete; the token is shown once, in the create answer.
var credentials = &resource[catalog.Credential, CredentialInput, CredentialView, CredentialList]{
	what: "credential", path: "/workspaces/{workspace_id}/credentials", param: "credential_id", id: "Credential", ids: "Credentials",
	noGet:   true,
	summary: map[string]string{"create": "Create a scoped server credential; the answer holds it, once.", "list": "List credentials."},
	// the workspace at catalog.MaxCredentialsPerWorkspace
	createErrors: []ErrorCode{ErrConflict},
	table:        func(c *catalog.Catalog) map[string]*catalog.Credential { return c.Credentials },
	owner:        func(cr *catalog.Credential) string { return cr.WorkspaceID },
	build: func(c *Call, in *CredentialInput, _ *catalog.Credential, workspaceID string) (catalog.Credential, string, error) {
		if err := validName("name", &in.Name); err != nil {
			return catalog.Credential{}, "", err
		}
		if len(in.Scopes) == 0 {
			return catalog.Credential{}, "", invalid("scopes", "at least one scope is required")
		}
		for _, sc := range in.Scopes {
			if !slices.Contains(knownScopes, sc) {
				return catalog.Credential{}, "", invalid("scopes", "unknown scope "+sc+" (known: "+strings.Join(knownScopes, ", ")+")")
			}
		}
		token := NewSecret("cred_")
		return catalog.Credential{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: in.Name, Scopes: in.Scopes,
			TokenHash: catalog.HashSecret(token), CreatedAt: c.Now().UTC()}, token, nil
	},
	create: func(cr catalog.Credential) catalog.Command { return &catalog.CreateCredential{Credential: cr} },
	delete: func(cr *catalog.Credential, _ time.Time) catalog.Command {
		return &catalog.DeleteCredential{WorkspaceID: cr.WorkspaceID, ID: cr.ID}
	},
	view: func(_ *Call, cr *catalog.Credential, token string) *CredentialView {
		return &CredentialView{CredentialID: cr.ID, WorkspaceID: cr.WorkspaceID, Name: cr.Name, Scopes: cr.Scopes,
			Credential: token, CreatedAt: cr.CreatedAt}
	},
	sortID: func(v *CredentialView) string { return v.CredentialID },
	list:   func(vs []CredentialView) *CredentialList { return &CredentialList{Credentials: vs} },
}
