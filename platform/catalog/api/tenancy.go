package api

import (
	"crypto/rand"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/ident"
)

// The tenancy admin API: workspaces, sites, mobile apps and scoped
// credentials. Every change goes through Raft; reads come from the local
// catalog. Sites, apps and credentials are collections on the transport's
// generic admin Resource; rotate-secret is the one operation of its own.

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

// tenancyAPI serves the tenancy admin operations.
type tenancyAPI struct{}

// site resolves {workspace_id} and {site_id} to a site of that
// workspace, answering 404 itself (another workspace's site is as absent
// as a missing one).
func site(c *kernel.Call) *catalog.Site {
	w := c.Workspace()
	if w == nil {
		return nil
	}
	st := c.Catalog().Sites[c.Param("site_id")]
	if st == nil || st.WorkspaceID != w.ID {
		c.Fail(kernel.ErrNotFound, "no site "+c.Param("site_id")+" in workspace "+w.ID)
		return nil
	}
	return st
}

func (x tenancyAPI) routes() []kernel.Route {
	ws := "/workspaces/{workspace_id}"
	admin := kernel.AdminErrors()
	a := []kernel.Auth{kernel.AuthAdmin}
	rs := []kernel.Route{
		kernel.IdempotentCreate(kernel.Route{Method: "POST", Path: "/workspaces", Admin: true, ID: "createWorkspace", Tag: "Admin", Auth: a, Summary: "Create a workspace.",
			Body: &WorkspaceInput{}, Status: 201, Result: &WorkspaceView{}, Errors: admin, Handle: kernel.AdminOnly(createWorkspace)}),
		{Method: "GET", Path: "/workspaces", Admin: true, ID: "listWorkspaces", Tag: "Admin", Auth: a, Summary: "List workspaces.",
			Result: &WorkspaceList{}, Errors: admin, Handle: kernel.AdminOnly(listWorkspaces)},
		{Method: "GET", Path: ws, Admin: true, ID: "getWorkspace", Tag: "Admin", Auth: a, Summary: "Read a workspace.",
			Result: &WorkspaceView{}, Errors: admin, Handle: kernel.AdminOnly(func(c *kernel.Call) {
				if w := c.Workspace(); w != nil {
					c.OK(workspaceView(w))
				}
			})},
		{Method: "PATCH", Path: ws, Admin: true, ID: "updateWorkspace", Tag: "Admin", Auth: a, Summary: "Change a workspace's name or settings.",
			Body: &WorkspaceInput{}, Result: &WorkspaceView{}, Errors: admin, Handle: kernel.AdminOnly(updateWorkspace)},
		{Method: "DELETE", Path: ws, Admin: true, ID: "deleteWorkspace", Tag: "Admin", Auth: a, Summary: "Delete a workspace and everything in it.",
			Status: 204, Errors: admin, Handle: kernel.AdminOnly(func(c *kernel.Call) {
				if w := c.Workspace(); w != nil {
					if _, ok := c.Apply(&catalog.DeleteWorkspace{ID: w.ID}); ok {
						c.NoContent()
					}
				}
			})},
		{Method: "POST", Path: ws + "/sites/{site_id}/rotate-secret", Admin: true, ID: "rotateSiteSecret", Tag: "Admin", Auth: a,
			Summary: "Issue a new site secret; the old one keeps working for a grace period.",
			Body:    &RotateInput{}, Result: &SiteView{}, Errors: admin, Handle: kernel.AdminOnly(rotateSecret)},
	}
	rs = append(rs, sites.Routes()...)
	rs = append(rs, mobileApps.Routes()...)
	return append(rs, credentials.Routes()...)
}

func workspaceView(w *catalog.Workspace) *WorkspaceView {
	return &WorkspaceView{WorkspaceID: w.ID, Name: w.Name, CreatedAt: w.CreatedAt, Settings: w.Settings}
}

func (in *WorkspaceInput) validate(create bool) error {
	if create || in.Name != nil {
		if err := kernel.ValidName("name", in.Name); err != nil {
			return err
		}
	}
	if v := in.AdaptiveCostWindowSeconds; v != nil && (*v < 10 || *v > 86400) {
		return kernel.Invalid("adaptive_cost_window_seconds", "must be 10 to 86400")
	}
	if v := in.DefaultMode; v != nil && *v != "observe" && *v != "throttle" && *v != "enforce" {
		return kernel.Invalid("default_mode", "must be observe, throttle or enforce")
	}
	if v := in.IngressPerSecond; v != nil && (*v < 0 || *v > 10_000_000) {
		return kernel.Invalid("ingress_per_second", "must be 0 to 10000000")
	}
	if v := in.IngressBurst; v != nil && (*v < 0 || *v > 10_000_000) {
		return kernel.Invalid("ingress_burst", "must be 0 to 10000000")
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

func createWorkspace(c *kernel.Call) {
	var in WorkspaceInput
	if !c.Decode(&in) {
		return
	}
	if err := in.validate(true); err != nil {
		c.FailErr(err)
		return
	}
	kernel.CreateOnce(c, "", &in, func() (catalog.Command, string, error) {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		w := catalog.Workspace{ID: uuid.NewString(), Name: strings.TrimSpace(*in.Name), CreatedAt: c.Now().UTC(),
			Settings: catalog.DefaultSettings(), ScopeKey: key}
		// Settings given at creation are part of the one create, so a
		// workspace never exists without them.
		p := in.patch()
		p.ApplyTo(&w)
		return &catalog.CreateWorkspace{Workspace: w}, "", nil
	}, func(w *catalog.Workspace, _ string) { c.OK(workspaceView(w)) })
}

func listWorkspaces(c *kernel.Call) {
	out := WorkspaceList{Workspaces: []WorkspaceView{}}
	for _, w := range c.Catalog().Workspaces {
		out.Workspaces = append(out.Workspaces, *workspaceView(w))
	}
	sort.Slice(out.Workspaces, func(i, j int) bool {
		return out.Workspaces[i].CreatedAt.Before(out.Workspaces[j].CreatedAt) ||
			out.Workspaces[i].CreatedAt.Equal(out.Workspaces[j].CreatedAt) && out.Workspaces[i].WorkspaceID < out.Workspaces[j].WorkspaceID
	})
	c.OK(&out)
}

func updateWorkspace(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	var in WorkspaceInput
	if !c.Decode(&in) {
		return
	}
	if err := in.validate(false); err != nil {
		c.FailErr(err)
		return
	}
	if v, ok := c.Apply(&catalog.UpdateWorkspace{ID: w.ID, Patch: in.patch()}); ok {
		c.OK(workspaceView(v.(*catalog.Workspace)))
	}
}

// sites is the admin CRUD of sites; rotate-secret is its one extra
// operation (routes).
var sites = &kernel.Resource[catalog.Site, SiteInput, SiteView, SiteList]{
	What: "site", Path: "/workspaces/{workspace_id}/sites", Param: "site_id", ID: "Site", IDs: "Sites",
	Summary: map[string]string{"create": "Create a site; the answer holds its secret, once.", "list": "List a workspace's sites.",
		"update": "Change a site."},
	// a branding profile that is missing or another workspace's; the
	// workspace at catalog.MaxSitesPerWorkspace (409)
	CreateErrors: kernel.WithModuleCodes([]kernel.ErrorCode{kernel.ErrConflict}, []*errcode.Code{branding.ErrNotFound}),
	UpdateErrors: kernel.WithModuleCodes(nil, []*errcode.Code{branding.ErrNotFound}),
	Table:        func(c *catalog.Catalog) map[string]*catalog.Site { return c.Sites },
	Owner:        func(st *catalog.Site) string { return st.WorkspaceID },
	Build:        buildSite,
	Create:       func(st catalog.Site) catalog.Command { return &catalog.CreateSite{Site: st} },
	Update: func(in *SiteInput, st catalog.Site) catalog.Command {
		return &catalog.UpdateSite{WorkspaceID: st.WorkspaceID, ID: st.ID, Patch: catalog.SitePatch{Name: in.Name, Hostnames: in.Hostnames,
			ChallengeMode: in.ChallengeMode, ScoreThreshold: in.ScoreThreshold, TokenTTLSeconds: in.TokenTTLSeconds, ChallengeDifficulty: in.ChallengeDifficulty,
			BrandingProfileID: in.BrandingProfileID}}
	},
	Delete: func(st *catalog.Site, _ time.Time) catalog.Command {
		return &catalog.DeleteSite{WorkspaceID: st.WorkspaceID, ID: st.ID}
	},
	View:   func(_ *kernel.Call, st *catalog.Site, secret string) *SiteView { return siteView(st, secret) },
	SortID: func(v *SiteView) string { return v.SiteID },
	List:   func(vs []SiteView) *SiteList { return &SiteList{Sites: vs} },
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
		if err := kernel.ValidName("name", in.Name); err != nil {
			return err
		}
	}
	if in.Hostnames != nil {
		if len(*in.Hostnames) > 100 {
			return kernel.Invalid("hostnames", "at most 100")
		}
		for i, h := range *in.Hostnames {
			h = strings.ToLower(h)
			(*in.Hostnames)[i] = h
			if !ident.Hostname(h) {
				return kernel.Invalid("hostnames", "invalid hostname "+h+" (exact lowercase names; no wildcards, schemes or ports)")
			}
		}
	}
	if create && env != catalog.EnvSandbox && (in.Hostnames == nil || len(*in.Hostnames) == 0) {
		return kernel.Invalid("hostnames", "at least one hostname is required")
	}
	if v := in.ChallengeMode; v != nil {
		switch *v {
		case catalog.ModeCheckbox, catalog.ModeVisual, catalog.ModeScoreBased, catalog.ModeScoreEnforced:
		default:
			return kernel.Invalid("challenge_mode", "must be checkbox, visual, score_based or score_enforced")
		}
	}
	if v := in.ScoreThreshold; v != nil && (*v < 0 || *v > 1) {
		return kernel.Invalid("score_threshold", "must be 0 to 1")
	}
	if v := in.TokenTTLSeconds; v != nil && (*v < 30 || *v > 3600) {
		return kernel.Invalid("token_ttl_seconds", "must be 30 to 3600")
	}
	if v := in.ChallengeDifficulty; v != nil && (*v < 0 || *v > 24) {
		return kernel.Invalid("challenge_difficulty", "must be 0 to 24")
	}
	return nil
}

// buildSite validates a site input: on create it makes the site, its
// public key and its secret (returned once; the site keeps its hash); on
// update it checks the patch against the site, which update then applies.
func buildSite(c *kernel.Call, in *SiteInput, cur *catalog.Site, workspaceID string) (catalog.Site, string, error) {
	if in.BrandingProfileID != nil {
		if err := branding.Require(c.Catalog(), workspaceID, *in.BrandingProfileID); err != nil {
			return catalog.Site{}, "", err
		}
	}
	if cur != nil {
		if in.Environment != nil && *in.Environment != cur.Environment {
			return *cur, "", kernel.Invalid("environment", "is fixed at creation; create another site")
		}
		if err := in.validate(false, cur.Environment); err != nil {
			return *cur, "", err
		}
		if in.Hostnames != nil && len(*in.Hostnames) == 0 && !cur.Sandbox() {
			return *cur, "", kernel.Invalid("hostnames", "at least one hostname is required")
		}
		return *cur, "", nil
	}
	env := catalog.EnvProduction
	if in.Environment != nil {
		env = *in.Environment
		switch env {
		case catalog.EnvProduction, catalog.EnvStaging, catalog.EnvDevelopment, catalog.EnvSandbox:
		default:
			return catalog.Site{}, "", kernel.Invalid("environment", "must be production, staging, development or sandbox")
		}
	}
	if err := in.validate(true, env); err != nil {
		return catalog.Site{}, "", err
	}
	keyPfx := "site_"
	if env == catalog.EnvSandbox {
		keyPfx = "site_sandbox_"
	}
	secret := kernel.NewSecret(siteSecretPrefix(env))
	st := catalog.Site{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: strings.TrimSpace(*in.Name),
		SiteKey: kernel.NewSecret(keyPfx), SecretHash: catalog.HashSecret(secret), Environment: env,
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

func rotateSecret(c *kernel.Call) {
	st := site(c)
	if st == nil {
		return
	}
	var in RotateInput
	if len(c.Ctx.Request.Body()) > 0 && !c.Decode(&in) {
		return
	}
	grace := 86400
	if in.GracePeriodSeconds != nil {
		if *in.GracePeriodSeconds < 0 || *in.GracePeriodSeconds > 604800 {
			c.FailErr(kernel.Invalid("grace_period_seconds", "must be 0 to 604800"))
			return
		}
		grace = *in.GracePeriodSeconds
	}
	secret := kernel.NewSecret(siteSecretPrefix(st.Environment))
	cmd := &catalog.RotateSiteSecret{WorkspaceID: st.WorkspaceID, ID: st.ID, NewHash: catalog.HashSecret(secret),
		GraceUntil: c.Now().UTC().Add(time.Duration(grace) * time.Second)}
	if v, ok := c.Apply(cmd); ok {
		c.OK(siteView(v.(*catalog.Site), secret))
	}
}

// mobileApps is the admin API of mobile apps: create, list, delete.
var mobileApps = &kernel.Resource[catalog.MobileApp, MobileAppInput, MobileAppView, MobileAppList]{
	What: "mobile app", Path: "/workspaces/{workspace_id}/mobile-apps", Param: "mobile_app_id", ID: "MobileApp", IDs: "MobileApps",
	NoGet:        true,
	Summary:      map[string]string{"create": "Register a mobile app; the answer holds its server secret, once.", "list": "List mobile apps."},
	CreateErrors: kernel.WithModuleCodes([]kernel.ErrorCode{kernel.ErrConflict}, []*errcode.Code{branding.ErrNotFound}),
	Table:        func(c *catalog.Catalog) map[string]*catalog.MobileApp { return c.MobileApps },
	Owner:        func(a *catalog.MobileApp) string { return a.WorkspaceID },
	Build: func(c *kernel.Call, in *MobileAppInput, _ *catalog.MobileApp, workspaceID string) (catalog.MobileApp, string, error) {
		if err := kernel.ValidName("name", &in.Name); err != nil {
			return catalog.MobileApp{}, "", err
		}
		if in.Platform != "android" && in.Platform != "ios" {
			return catalog.MobileApp{}, "", kernel.Invalid("platform", "must be android or ios")
		}
		if !validAppID(in.AppID) {
			return catalog.MobileApp{}, "", kernel.Invalid("app_id", "1 to 200 characters of letters, digits, '.', '_' or '-'")
		}
		if err := branding.Require(c.Catalog(), workspaceID, in.BrandingProfileID); err != nil {
			return catalog.MobileApp{}, "", err
		}
		secret := kernel.NewSecret("ms_")
		return catalog.MobileApp{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: in.Name, Platform: in.Platform,
			AppID: in.AppID, SecretHash: catalog.HashSecret(secret), CreatedAt: c.Now().UTC(), BrandingProfileID: in.BrandingProfileID}, secret, nil
	},
	Create: func(a catalog.MobileApp) catalog.Command { return &catalog.CreateMobileApp{App: a} },
	Delete: func(a *catalog.MobileApp, _ time.Time) catalog.Command {
		return &catalog.DeleteMobileApp{WorkspaceID: a.WorkspaceID, ID: a.ID}
	},
	View: func(_ *kernel.Call, a *catalog.MobileApp, secret string) *MobileAppView {
		return &MobileAppView{MobileAppID: a.ID, WorkspaceID: a.WorkspaceID, Name: a.Name, Platform: a.Platform,
			AppID: a.AppID, MobileSecret: secret, CreatedAt: a.CreatedAt, BrandingProfileID: a.BrandingProfileID}
	},
	SortID: func(v *MobileAppView) string { return v.MobileAppID },
	List:   func(vs []MobileAppView) *MobileAppList { return &MobileAppList{MobileApps: vs} },
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
var credentials = &kernel.Resource[catalog.Credential, CredentialInput, CredentialView, CredentialList]{
	What: "credential", Path: "/workspaces/{workspace_id}/credentials", Param: "credential_id", ID: "Credential", IDs: "Credentials",
	NoGet:   true,
	Summary: map[string]string{"create": "Create a scoped server credential; the answer holds it, once.", "list": "List credentials."},
	// the workspace at catalog.MaxCredentialsPerWorkspace
	CreateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	Table:        func(c *catalog.Catalog) map[string]*catalog.Credential { return c.Credentials },
	Owner:        func(cr *catalog.Credential) string { return cr.WorkspaceID },
	Build: func(c *kernel.Call, in *CredentialInput, _ *catalog.Credential, workspaceID string) (catalog.Credential, string, error) {
		if err := kernel.ValidName("name", &in.Name); err != nil {
			return catalog.Credential{}, "", err
		}
		if len(in.Scopes) == 0 {
			return catalog.Credential{}, "", kernel.Invalid("scopes", "at least one scope is required")
		}
		for _, sc := range in.Scopes {
			if !slices.Contains(knownScopes, sc) {
				return catalog.Credential{}, "", kernel.Invalid("scopes", "unknown scope "+sc+" (known: "+strings.Join(knownScopes, ", ")+")")
			}
		}
		token := kernel.NewSecret("cred_")
		return catalog.Credential{ID: uuid.NewString(), WorkspaceID: workspaceID, Name: in.Name, Scopes: in.Scopes,
			TokenHash: catalog.HashSecret(token), CreatedAt: c.Now().UTC()}, token, nil
	},
	Create: func(cr catalog.Credential) catalog.Command { return &catalog.CreateCredential{Credential: cr} },
	Delete: func(cr *catalog.Credential, _ time.Time) catalog.Command {
		return &catalog.DeleteCredential{WorkspaceID: cr.WorkspaceID, ID: cr.ID}
	},
	View: func(_ *kernel.Call, cr *catalog.Credential, token string) *CredentialView {
		return &CredentialView{CredentialID: cr.ID, WorkspaceID: cr.WorkspaceID, Name: cr.Name, Scopes: cr.Scopes,
			Credential: token, CreatedAt: cr.CreatedAt}
	},
	SortID: func(v *CredentialView) string { return v.CredentialID },
	List:   func(vs []CredentialView) *CredentialList { return &CredentialList{Credentials: vs} },
}
