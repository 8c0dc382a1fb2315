package catalog

import (
	"crypto/sha256"
	"crypto/subtle"
	"time"

	"github.com/trustd/trustd/platform/lib/ident"
)

// Hash is the SHA-256 of a secret. Secrets are never stored, only hashes.
type Hash [32]byte

// HashSecret returns the stored form of secret.
func HashSecret(secret string) Hash { return sha256.Sum256([]byte(secret)) }

// Equal compares in constant time.
func (h Hash) Equal(o Hash) bool { return subtle.ConstantTimeCompare(h[:], o[:]) == 1 }

// Environments of a site.
const (
	EnvProduction  = "production"
	EnvStaging     = "staging"
	EnvDevelopment = "development"
	EnvSandbox     = "sandbox"
)

// Challenge modes of a site.
const (
	ModeCheckbox      = "checkbox"
	ModeVisual        = "visual"
	ModeScoreBased    = "score_based"
	ModeScoreEnforced = "score_enforced"
)

// Workspace is a tenant: everything else belongs to one.
type Workspace struct {
	ID        string            `json:"workspace_id"`
	Name      string            `json:"name"`
	CreatedAt time.Time         `json:"created_at"`
	Settings  WorkspaceSettings `json:"settings"`
	// ScopeKey keys the HMAC under which subject, device, route and custom
	// values are stored, so raw values never reach state.
	ScopeKey []byte `json:"scope_key"`
}

// WorkspaceSettings are the workspace-wide switches.
type WorkspaceSettings struct {
	RateLimitingEnabled       bool   `json:"rate_limiting_enabled"`
	AdaptiveCostEnabled       bool   `json:"adaptive_cost_enabled"`
	AdaptiveCostWindowSeconds int    `json:"adaptive_cost_window_seconds"`
	DefaultMode               string `json:"default_mode"`
	// IngressPerSecond and IngressBurst bound how fast one credential may
	// call the service itself (HTTP 429 beyond); 0 means the node default.
	IngressPerSecond int `json:"ingress_per_second"`
	IngressBurst     int `json:"ingress_burst"`
}

// DefaultSettings are a new workspace's settings.
func DefaultSettings() WorkspaceSettings {
	return WorkspaceSettings{
		RateLimitingEnabled:       true,
		AdaptiveCostWindowSeconds: 300,
		DefaultMode:               "enforce",
	}
}

// Site is a protected web property with its public key and private secret.
type Site struct {
	ID                  string    `json:"site_id"`
	WorkspaceID         string    `json:"workspace_id"`
	Name                string    `json:"name"`
	SiteKey             string    `json:"site_key"`
	SecretHash          Hash      `json:"secret_hash"`
	PrevSecretHash      Hash      `json:"prev_secret_hash"`
	PrevSecretUntil     time.Time `json:"prev_secret_until"`
	Hostnames           []string  `json:"hostnames"`
	Environment         string    `json:"environment"`
	ChallengeMode       string    `json:"challenge_mode"`
	ScoreThreshold      float64   `json:"score_threshold"`
	TokenTTLSeconds     int       `json:"token_ttl_seconds"`
	ChallengeDifficulty int       `json:"challenge_difficulty"`
	CreatedAt           time.Time `json:"created_at"`
	// BrandingProfileID names the branding profile (of the same
	// workspace) the widget, the hosted identity page and the journey
	// pages of this site show; "" for the default look. Absent in logs
	// written before it existed, which therefore apply alike.
	BrandingProfileID string `json:"branding_profile_id,omitempty"`
}

// Sandbox reports whether the site only works with sandbox endpoints.
func (s *Site) Sandbox() bool { return s.Environment == EnvSandbox }

// AllowsHost reports whether host is on the site's allow-list: exact,
// case-insensitive match, never suffix matching.
func (s *Site) AllowsHost(host string) bool {
	for _, h := range s.Hostnames {
		if ident.EqualFoldASCII(h, host) {
			return true
		}
	}
	return false
}

// MobileApp is a registered native application with its server secret.
type MobileApp struct {
	ID          string    `json:"mobile_app_id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Platform    string    `json:"platform"`
	AppID       string    `json:"app_id"`
	SecretHash  Hash      `json:"secret_hash"`
	CreatedAt   time.Time `json:"created_at"`
	// BrandingProfileID: as Site's, for the journey pages of sessions
	// the app starts.
	BrandingProfileID string `json:"branding_profile_id,omitempty"`
}

// Credential is a scoped server credential.
type Credential struct {
	ID          string    `json:"credential_id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Scopes      []string  `json:"scopes"`
	TokenHash   Hash      `json:"token_hash"`
	CreatedAt   time.Time `json:"created_at"`
}

// HasScope reports whether the credential carries scope.
func (c *Credential) HasScope(scope string) bool {
	for _, s := range c.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Signing key purposes.
const (
	KeyLive    = "live"
	KeySandbox = "sandbox"
	// KeyReceipt keys are Ed25519: Secret is the 32-byte seed. They sign
	// Trust API decision receipts; their public halves are published at
	// /.well-known/jwks.json.
	KeyReceipt = "receipt"
)

// SigningKey signs tokens, leases, clearances and receipts. Keys are
// distributed through Raft; the newest key of a purpose signs, every key
// that is not retired verifies.
type SigningKey struct {
	ID        string    `json:"key_id"`
	Purpose   string    `json:"purpose"`
	Secret    []byte    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
	Retired   bool      `json:"retired"`
	// ActiveFrom is when the key starts signing (zero: at once). A key
	// added to a running cluster verifies from the moment it is applied,
	// but signs only from CreatedAt + KeyActivationDelay, so every node
	// has it before any token signed with it reaches one (see keys.go).
	ActiveFrom time.Time `json:"active_from,omitzero"`
	// SupersededAt is when a newer key of the purpose started signing:
	// from then this key only verifies, and KeyRetention later it is
	// dropped at the next rotation.
	SupersededAt time.Time `json:"superseded_at,omitzero"`
}

// Catalog is one immutable version of the replicated configuration. Never
// modify a Catalog you did not create in a Tx.
type Catalog struct {
	Index uint64 `json:"index"`
	// ConfigIndex is the Index of the last change that was not a
	// membership change (liveness renewals move Index every second):
	// caches of compiled configuration key on it.
	ConfigIndex           uint64                          `json:"config_index"`
	AdminTokenHash        Hash                            `json:"admin_token_hash"`
	HasAdminToken         bool                            `json:"has_admin_token"`
	Workspaces            map[string]*Workspace           `json:"workspaces"`
	Sites                 map[string]*Site                `json:"sites"`
	MobileApps            map[string]*MobileApp           `json:"mobile_apps"`
	Credentials           map[string]*Credential          `json:"credentials"`
	Keys                  []*SigningKey                   `json:"keys"`
	RateLimitPolicies     map[string]*RateLimitPolicy     `json:"rate_limit_policies"`
	APIProtectionPolicies map[string]*APIProtectionPolicy `json:"api_protection_policies"`
	// Feedback and FeedbackTallies are detection feedback (feedback.go).
	Feedback        map[string]*FeedbackRecord `json:"feedback"`
	FeedbackTallies map[string]*FeedbackTally  `json:"feedback_tallies"`

	// Traffic control (concurrency.go, dependency.go).
	ConcurrencyConstraints map[string]*ConcurrencyConstraint `json:"concurrency_constraints"`
	Dependencies           map[string]*Dependency            `json:"dependencies"`

	// Agent Trust registry (agent.go).
	Agents    map[string]*Agent    `json:"agents"`
	Approvals map[string]*Approval `json:"approvals"`

	// Account Defence trusted devices by workspace (trusted_device.go).
	TrustedDevices map[string]*WorkspaceDevices `json:"trusted_devices"`
	// Signed webhooks (webhook.go): endpoints, and one outbox per workspace.
	WebhookEndpoints map[string]*WebhookEndpoint `json:"webhook_endpoints"`
	WebhookOutboxes  map[string]*WebhookOutbox   `json:"webhook_outboxes"`
	// Trust API rules (trust_policy.go).
	TrustPolicies map[string]*TrustPolicy `json:"trust_policies"`
	// Messaging preflight settings by workspace (messaging.go) and
	// branding profiles (branding.go).
	Messaging        map[string]*MessagingSettings `json:"messaging"`
	BrandingProfiles map[string]*BrandingProfile   `json:"branding_profiles"`
	// Console users (console_user.go) and the audit ring (audit.go).
	ConsoleUsers map[string]*ConsoleUser `json:"console_users"`
	Audit        []AuditEntry            `json:"audit"`
	// Identity verification sessions and review cases by workspace
	// (identity.go).
	Identity map[string]*IdentityWorkspace `json:"identity"`
	// Journeys (journey.go, journey_credentials.go): definitions, sessions
	// by workspace, and what a subject enrolled (passkeys, face templates).
	Journeys        map[string]*Journey                  `json:"journeys"`
	JourneySessions map[string]*WorkspaceJourneySessions `json:"journey_sessions"`
	Passkeys        map[string]*WorkspacePasskeys        `json:"passkeys"`
	JourneyFaces    map[string]map[string]*FaceTemplate  `json:"journey_faces"`

	// IdempotencyKeys are the admin creates' idempotency keys, by
	// workspace ("" for workspace creation), then key hash
	// (idempotency.go).
	IdempotencyKeys map[string]map[string]*IdempotencyRecord `json:"idempotency_keys,omitempty"`

	// Cluster membership as the quorum decides it (nodes.go): liveness
	// records, the ring they make and the ring before it.
	Nodes    map[string]*NodeRecord `json:"nodes,omitempty"`
	Ring     RingState              `json:"ring,omitzero"`
	PrevRing RingState              `json:"prev_ring,omitzero"`

	// Derived indexes, rebuilt on restore, never serialised.
	sitesByKey    map[string]*Site
	sitesBySecret map[Hash]*Site
	appsBySecret  map[Hash]*MobileApp
	credsByHash   map[Hash]*Credential
	agentsByThumb map[thumbKey][]*Agent
	// siteSecrets and appSecrets remember the secrets that matched in
	// this version (secretcache.go); nil in a transaction's working copy.
	siteSecrets, appSecrets *secretCache

	traffic trafficIndex
}

// Empty returns the catalog of a new cluster.
func Empty() *Catalog {
	c := &Catalog{
		Workspaces:            map[string]*Workspace{},
		Sites:                 map[string]*Site{},
		MobileApps:            map[string]*MobileApp{},
		Credentials:           map[string]*Credential{},
		RateLimitPolicies:     map[string]*RateLimitPolicy{},
		APIProtectionPolicies: map[string]*APIProtectionPolicy{},
	}
	c.reindex()
	return c
}

// reindex rebuilds every derived index from the tables.
func (c *Catalog) reindex() {
	c.sitesByKey = make(map[string]*Site, len(c.Sites))
	c.sitesBySecret = make(map[Hash]*Site, len(c.Sites))
	for _, s := range c.Sites {
		c.sitesByKey[s.SiteKey] = s
		c.sitesBySecret[s.SecretHash] = s
		if !s.PrevSecretUntil.IsZero() {
			c.sitesBySecret[s.PrevSecretHash] = s
		}
	}
	c.appsBySecret = make(map[Hash]*MobileApp, len(c.MobileApps))
	for _, a := range c.MobileApps {
		c.appsBySecret[a.SecretHash] = a
	}
	c.siteSecrets, c.appSecrets = newSecretCache(len(c.Sites)), newSecretCache(len(c.MobileApps))
	c.credsByHash = make(map[Hash]*Credential, len(c.Credentials))
	for _, cr := range c.Credentials {
		c.credsByHash[cr.TokenHash] = cr
	}
	c.reindexAgents()
	c.reindexTraffic()
}

// SiteByKey finds a site by its public site key.
func (c *Catalog) SiteByKey(key string) *Site { return c.sitesByKey[key] }

// SiteBySecret finds the site a private secret belongs to. A rotated-out
// secret keeps working until its grace period ends at now. A secret that
// matched before in this version is found without hashing (secretcache.go).
func (c *Catalog) SiteBySecret(secret string, now time.Time) *Site {
	return c.SiteBySecretAt(secret, func() time.Time { return now })
}

// SiteBySecretAt is SiteBySecret reading the clock only when a rotated-out
// secret's grace period is to be checked.
func (c *Catalog) SiteBySecretAt(secret string, now func() time.Time) *Site {
	if e := c.siteSecrets.get(secret); e != nil {
		if !e.prev || now().Before(e.site.PrevSecretUntil) {
			return e.site
		}
		return nil
	}
	h := HashSecret(secret)
	s := c.sitesBySecret[h]
	if s == nil {
		return nil
	}
	if s.SecretHash.Equal(h) {
		c.siteSecrets.put(secret, s, nil, false)
		return s
	}
	if s.PrevSecretHash.Equal(h) && now().Before(s.PrevSecretUntil) {
		c.siteSecrets.put(secret, s, nil, true)
		return s
	}
	return nil
}

// AppBySecret finds the mobile app a server secret belongs to.
func (c *Catalog) AppBySecret(secret string) *MobileApp {
	if e := c.appSecrets.get(secret); e != nil {
		return e.app
	}
	h := HashSecret(secret)
	if a := c.appsBySecret[h]; a != nil && a.SecretHash.Equal(h) {
		c.appSecrets.put(secret, nil, a, false)
		return a
	}
	return nil
}

// CredentialByToken finds a scoped credential by its bearer token.
func (c *Catalog) CredentialByToken(token string) *Credential {
	h := HashSecret(token)
	if cr := c.credsByHash[h]; cr != nil && cr.TokenHash.Equal(h) {
		return cr
	}
	return nil
}

// CheckAdminToken reports whether token is the cluster's admin token.
func (c *Catalog) CheckAdminToken(token string) bool {
	return c.HasAdminToken && c.AdminTokenHash.Equal(HashSecret(token))
}

// SigningKey returns the key that signs for purpose now, or nil: the
// newest active unretired key (SigningKeyAt).
func (c *Catalog) SigningKey(purpose string) *SigningKey { return c.SigningKeyAt(purpose, time.Now()) }

// KeyByID returns an unretired key of purpose by id, for verification.
func (c *Catalog) KeyByID(purpose, id string) *SigningKey {
	for _, k := range c.Keys {
		if k.ID == id && k.Purpose == purpose && !k.Retired {
			return k
		}
	}
	return nil
}

// SitesOf lists the sites of a workspace.
func (c *Catalog) SitesOf(workspaceID string) []*Site {
	return sitesTable.of(c, workspaceID)
}
