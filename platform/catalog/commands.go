package catalog

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
)

// Command is one change to the catalog. Commands are plain data: they are
// encoded into the Raft log and applied on every node, in the same order,
// by Apply, which must be deterministic.
type Command interface {
	// Kind names the command on the wire; it never changes once shipped.
	Kind() string
	// Apply changes tx and returns the command's result for the caller.
	Apply(tx *Tx) (any, error)
}

// commands maps a wire kind to a constructor of its command type.
var commands = map[string]func() Command{
	"admin_token.set":               func() Command { return &SetAdminToken{} },
	"node.heartbeat":                func() Command { return &NodeHeartbeat{} },
	"node.fence":                    func() Command { return &FenceNode{} },
	"node.remove":                   func() Command { return &RemoveNode{} },
	"signing_key.add":               func() Command { return &AddSigningKey{} },
	"signing_key.activate":          func() Command { return &ActivateSigningKey{} },
	"workspace.create":              func() Command { return &CreateWorkspace{} },
	"workspace.update":              func() Command { return &UpdateWorkspace{} },
	"workspace.delete":              func() Command { return &DeleteWorkspace{} },
	"site.create":                   func() Command { return &CreateSite{} },
	"site.update":                   func() Command { return &UpdateSite{} },
	"site.delete":                   func() Command { return &DeleteSite{} },
	"site.rotate_secret":            func() Command { return &RotateSiteSecret{} },
	"mobile_app.create":             func() Command { return &CreateMobileApp{} },
	"mobile_app.delete":             func() Command { return &DeleteMobileApp{} },
	"credential.create":             func() Command { return &CreateCredential{} },
	"credential.delete":             func() Command { return &DeleteCredential{} },
	"rate_limit_policy.create":      func() Command { return &CreateRateLimitPolicy{} },
	"rate_limit_policy.replace":     func() Command { return &ReplaceRateLimitPolicy{} },
	"rate_limit_policy.delete":      func() Command { return &DeleteRateLimitPolicy{} },
	"api_protection_policy.create":  func() Command { return &CreateAPIProtectionPolicy{} },
	"api_protection_policy.replace": func() Command { return &ReplaceAPIProtectionPolicy{} },
	"api_protection_policy.delete":  func() Command { return &DeleteAPIProtectionPolicy{} },

	"detection_feedback.record": func() Command { return &RecordFeedback{} },
	// Traffic control.
	"concurrency_constraint.put":    func() Command { return &PutConcurrencyConstraint{} },
	"concurrency_constraint.delete": func() Command { return &DeleteConcurrencyConstraint{} },
	"dependency.put":                func() Command { return &PutDependency{} },
	"dependency.delete":             func() Command { return &DeleteDependency{} },
	// Agent Trust.
	"agent.put":        func() Command { return &PutAgent{} },
	"agent.delete":     func() Command { return &DeleteAgent{} },
	"approval.create":  func() Command { return &CreateApproval{} },
	"approval.decide":  func() Command { return &DecideApproval{} },
	"approval.consume": func() Command { return &ConsumeApproval{} },
	// Account Defence.
	"trusted_device.trust":  func() Command { return &TrustDevice{} },
	"trusted_device.revoke": func() Command { return &RevokeDevice{} },
	// Signed webhooks.
	"webhook_endpoint.create":        func() Command { return &CreateWebhookEndpoint{} },
	"webhook_endpoint.update":        func() Command { return &UpdateWebhookEndpoint{} },
	"webhook_endpoint.rotate_secret": func() Command { return &RotateWebhookSecret{} },
	"webhook_endpoint.delete":        func() Command { return &DeleteWebhookEndpoint{} },
	"webhook_event.emit":             func() Command { return &EmitWebhookEvent{} },
	"webhook_event.redeliver":        func() Command { return &RedeliverWebhookEvent{} },
	"webhook_attempts.record":        func() Command { return &RecordWebhookAttempts{} },
	"webhook_outbox.prune":           func() Command { return &PruneWebhookOutboxes{} },
	// Trust API.
	"trust_policy.put":    func() Command { return &PutTrustPolicy{} },
	"trust_policy.delete": func() Command { return &DeleteTrustPolicy{} },

	"messaging_settings.put":    func() Command { return &PutMessagingSettings{} },
	"messaging_settings.delete": func() Command { return &DeleteMessagingSettings{} },
	"branding_profile.put":      func() Command { return &PutBrandingProfile{} },
	"branding_profile.delete":   func() Command { return &DeleteBrandingProfile{} },
	// Workspace console users and the audit log.
	"console_user.create":         func() Command { return &CreateConsoleUser{} },
	"console_user.update":         func() Command { return &UpdateConsoleUser{} },
	"console_user.delete":         func() Command { return &DeleteConsoleUser{} },
	"console_user.use_link":       func() Command { return &UseConsoleLink{} },
	"audit.record":                func() Command { return &RecordAudit{} },
	"identity_session.put":        func() Command { return &PutIdentitySession{} },
	"identity.prune":              func() Command { return &PruneIdentity{} },
	"identity_session.ack_events": func() Command { return &AckIdentityEvents{} },
	"review_case.put":             func() Command { return &PutReviewCase{} },
	"journey.put":                 func() Command { return &PutJourney{} },
	"journey.delete":              func() Command { return &DeleteJourney{} },
	"journey_session.create":      func() Command { return &CreateJourneySession{} },
	"journey_session.transition":  func() Command { return &TransitionJourneySession{} },
	"journey_session.read":        func() Command { return &ReadJourneySession{} },
	"passkey.put":                 func() Command { return &PutPasskey{} },
	"face_template.put":           func() Command { return &PutFaceTemplate{} },
	"journey_subject.delete":      func() Command { return &DeleteSubjectCredentials{} },
	// Admin idempotency keys: a create recorded under its key.
	"idempotent.create": func() Command { return &IdempotentCreate{} },
}

// Decode turns a wire kind and JSON body back into a Command.
func Decode(kind string, body []byte) (Command, error) {
	mk, ok := commands[kind]
	if !ok {
		return nil, fmt.Errorf("catalog: unknown command kind %q", kind)
	}
	c := mk()
	if err := json.Unmarshal(body, c); err != nil {
		return nil, fmt.Errorf("catalog: decode %s: %w", kind, err)
	}
	return c, nil
}

// Encode returns the JSON body of c.
func Encode(c Command) ([]byte, error) { return json.Marshal(c) }

// SetAdminToken installs the hash of the cluster's admin token. Only the
// first one takes effect, so two nodes racing at bootstrap cannot swap it.
type SetAdminToken struct {
	Hash Hash `json:"hash"`
}

func (*SetAdminToken) Kind() string { return "admin_token.set" }
func (c *SetAdminToken) Apply(tx *Tx) (any, error) {
	if tx.next.HasAdminToken {
		return false, nil
	}
	tx.next.AdminTokenHash, tx.next.HasAdminToken = c.Hash, true
	return true, nil
}

// AddSigningKey adds a key; it signs once committed everywhere.
type AddSigningKey struct {
	Key SigningKey `json:"key"`
}

func (*AddSigningKey) Kind() string { return "signing_key.add" }
func (c *AddSigningKey) Apply(tx *Tx) (any, error) {
	for _, k := range tx.next.Keys {
		if k.ID == c.Key.ID {
			return nil, fmt.Errorf("%w: key %s exists", ErrConflict, k.ID)
		}
	}
	k := c.Key
	tx.next.Keys = append(append([]*SigningKey(nil), tx.next.Keys...), &k)
	return &k, nil
}

// CreateWorkspace adds a workspace.
type CreateWorkspace struct {
	Workspace Workspace `json:"workspace"`
}

func (*CreateWorkspace) Kind() string { return "workspace.create" }
func (c *CreateWorkspace) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.Workspace.ID]; ok {
		return nil, fmt.Errorf("%w: workspace %s exists", ErrConflict, c.Workspace.ID)
	}
	w := c.Workspace
	tx.workspaces()[w.ID] = &w
	return &w, nil
}

// WorkspacePatch holds the fields a PATCH may change; nil means unchanged.
type WorkspacePatch struct {
	Name                      *string `json:"name,omitzero"`
	RateLimitingEnabled       *bool   `json:"rate_limiting_enabled,omitzero"`
	AdaptiveCostEnabled       *bool   `json:"adaptive_cost_enabled,omitzero"`
	AdaptiveCostWindowSeconds *int    `json:"adaptive_cost_window_seconds,omitzero"`
	DefaultMode               *string `json:"default_mode,omitzero"`
	IngressPerSecond          *int    `json:"ingress_per_second,omitzero"`
	IngressBurst              *int    `json:"ingress_burst,omitzero"`
}

// UpdateWorkspace applies a patch to a workspace.
type UpdateWorkspace struct {
	ID    string         `json:"workspace_id"`
	Patch WorkspacePatch `json:"patch"`
}

func (*UpdateWorkspace) Kind() string { return "workspace.update" }
func (c *UpdateWorkspace) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.Workspaces[c.ID]
	if !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.ID)
	}
	w := *cur
	c.Patch.ApplyTo(&w)
	tx.workspaces()[w.ID] = &w
	return &w, nil
}

// ApplyTo sets the fields p gives on w.
func (p *WorkspacePatch) ApplyTo(w *Workspace) {
	set(&w.Name, p.Name)
	set(&w.Settings.RateLimitingEnabled, p.RateLimitingEnabled)
	set(&w.Settings.AdaptiveCostEnabled, p.AdaptiveCostEnabled)
	set(&w.Settings.AdaptiveCostWindowSeconds, p.AdaptiveCostWindowSeconds)
	set(&w.Settings.DefaultMode, p.DefaultMode)
	set(&w.Settings.IngressPerSecond, p.IngressPerSecond)
	set(&w.Settings.IngressBurst, p.IngressBurst)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// DeleteWorkspace removes a workspace and everything that belongs to it.
type DeleteWorkspace struct {
	ID string `json:"workspace_id"`
}

func (*DeleteWorkspace) Kind() string { return "workspace.delete" }
func (c *DeleteWorkspace) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.ID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.ID)
	}
	delete(tx.workspaces(), c.ID)
	sitesTable.removeAllOf(tx, c.ID)
	mobileAppsTable.removeAllOf(tx, c.ID)
	credentialsTable.removeAllOf(tx, c.ID)
	for _, cascade := range workspaceCascades {
		cascade(tx, c.ID)
	}
	return nil, nil
}

// workspaceCascades remove a deleted workspace's records from tables that
// other files of this package add.
var workspaceCascades = []func(tx *Tx, workspaceID string){
	deleteRateLimitPolicies,
	deleteAPIProtectionPolicies,
	deleteWorkspaceFeedback,
	deleteConcurrencyConstraintsOf,
	deleteDependenciesOf,
	deleteAgentsOf,
	deleteApprovalsOf,
	deleteTrustedDevicesOf,
	deleteWebhooksOf,
	deleteTrustPoliciesOf,
	deleteMessagingOf,
	deleteBrandingOf,
	deleteConsoleUsersOf,
	deleteIdentityOf,
	deleteJourneysOf,
	deleteIdempotencyKeysOf,
}

// deleteOwned removes every value of the table named name owned by workspace.
func deleteOwned[V any](tx *Tx, name string, m *map[string]V, workspace string, owner func(V) string) {
	for id, v := range *m {
		if owner(v) == workspace {
			delete(Writable(tx, name, m), id)
		}
	}
}

// CreateSite adds a site.
type CreateSite struct {
	Site Site `json:"site"`
}

func (*CreateSite) Kind() string { return "site.create" }
func (c *CreateSite) Apply(tx *Tx) (any, error) {
	if err := needWorkspace(tx, c.Site.WorkspaceID); err != nil {
		return nil, err
	}
	if _, ok := tx.next.Sites[c.Site.ID]; ok {
		return nil, fmt.Errorf("%w: site %s exists", ErrConflict, c.Site.ID)
	}
	if err := needBrandingProfile(tx, c.Site.WorkspaceID, c.Site.BrandingProfileID); err != nil {
		return nil, err
	}
	if err := sitesTable.checkCreate(tx, &c.Site); err != nil {
		return nil, err
	}
	return sitesTable.store(tx, c.Site), nil
}

// SitePatch holds the fields a PATCH may change; nil means unchanged.
type SitePatch struct {
	Name                *string   `json:"name,omitzero"`
	Hostnames           *[]string `json:"hostnames,omitzero"`
	ChallengeMode       *string   `json:"challenge_mode,omitzero"`
	ScoreThreshold      *float64  `json:"score_threshold,omitzero"`
	TokenTTLSeconds     *int      `json:"token_ttl_seconds,omitzero"`
	ChallengeDifficulty *int      `json:"challenge_difficulty,omitzero"`
	// BrandingProfileID: "" removes the site's profile.
	BrandingProfileID *string `json:"branding_profile_id,omitzero"`
}

// UpdateSite applies a patch to a site of a workspace.
type UpdateSite struct {
	WorkspaceID string    `json:"workspace_id"`
	ID          string    `json:"site_id"`
	Patch       SitePatch `json:"patch"`
}

func (*UpdateSite) Kind() string { return "site.update" }
func (c *UpdateSite) Apply(tx *Tx) (any, error) {
	cur, err := sitesTable.get(tx, c.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	s := *cur
	p := c.Patch
	set(&s.Name, p.Name)
	set(&s.Hostnames, p.Hostnames)
	set(&s.ChallengeMode, p.ChallengeMode)
	set(&s.ScoreThreshold, p.ScoreThreshold)
	set(&s.TokenTTLSeconds, p.TokenTTLSeconds)
	set(&s.ChallengeDifficulty, p.ChallengeDifficulty)
	if p.BrandingProfileID != nil {
		if err := needBrandingProfile(tx, s.WorkspaceID, *p.BrandingProfileID); err != nil {
			return nil, err
		}
		s.BrandingProfileID = *p.BrandingProfileID
	}
	return sitesTable.store(tx, s), nil
}

// DeleteSite removes a site.
type DeleteSite struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"site_id"`
}

func (*DeleteSite) Kind() string { return "site.delete" }
func (c *DeleteSite) Apply(tx *Tx) (any, error) {
	if _, err := sitesTable.remove(tx, c.WorkspaceID, c.ID); err != nil {
		return nil, err
	}
	dropTally(tx, c.ID)
	return nil, nil
}

// RotateSiteSecret replaces a site's secret; the old one keeps working
// until GraceUntil so deployments can roll over.
type RotateSiteSecret struct {
	WorkspaceID string    `json:"workspace_id"`
	ID          string    `json:"site_id"`
	NewHash     Hash      `json:"new_hash"`
	GraceUntil  time.Time `json:"grace_until"`
}

func (*RotateSiteSecret) Kind() string { return "site.rotate_secret" }
func (c *RotateSiteSecret) Apply(tx *Tx) (any, error) {
	cur, err := sitesTable.get(tx, c.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	s := *cur
	s.PrevSecretHash, s.PrevSecretUntil = s.SecretHash, c.GraceUntil
	s.SecretHash = c.NewHash
	return sitesTable.store(tx, s), nil
}

// CreateMobileApp registers a mobile app.
type CreateMobileApp struct {
	App MobileApp `json:"app"`
}

func (*CreateMobileApp) Kind() string { return "mobile_app.create" }
func (c *CreateMobileApp) Apply(tx *Tx) (any, error) {
	if err := needWorkspace(tx, c.App.WorkspaceID); err != nil {
		return nil, err
	}
	for _, a := range tx.next.MobileApps {
		if a.WorkspaceID == c.App.WorkspaceID && a.Platform == c.App.Platform && a.AppID == c.App.AppID {
			return nil, fmt.Errorf("%w: %s app %s is already registered", ErrConflict, a.Platform, a.AppID)
		}
	}
	if err := needBrandingProfile(tx, c.App.WorkspaceID, c.App.BrandingProfileID); err != nil {
		return nil, err
	}
	if err := mobileAppsTable.checkCreate(tx, &c.App); err != nil {
		return nil, err
	}
	return mobileAppsTable.store(tx, c.App), nil
}

// DeleteMobileApp removes a mobile app.
type DeleteMobileApp struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"mobile_app_id"`
}

func (*DeleteMobileApp) Kind() string { return "mobile_app.delete" }
func (c *DeleteMobileApp) Apply(tx *Tx) (any, error) {
	if _, err := mobileAppsTable.remove(tx, c.WorkspaceID, c.ID); err != nil {
		return nil, err
	}
	dropTally(tx, c.ID)
	return nil, nil
}

// CreateCredential adds a scoped server credential.
type CreateCredential struct {
	Credential Credential `json:"credential"`
}

func (*CreateCredential) Kind() string { return "credential.create" }
func (c *CreateCredential) Apply(tx *Tx) (any, error) {
	if err := needWorkspace(tx, c.Credential.WorkspaceID); err != nil {
		return nil, err
	}
	if err := credentialsTable.checkCreate(tx, &c.Credential); err != nil {
		return nil, err
	}
	return credentialsTable.store(tx, c.Credential), nil
}

// DeleteCredential removes a credential.
type DeleteCredential struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"credential_id"`
}

func (*DeleteCredential) Kind() string { return "credential.delete" }
func (c *DeleteCredential) Apply(tx *Tx) (any, error) {
	return credentialsTable.remove(tx, c.WorkspaceID, c.ID)
}
