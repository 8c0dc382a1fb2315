package catalog

// Caps of the tables that had none until issue 24 (a workspace editor
// had made 980 sites in one workspace, every one a Raft entry). A create
// past a cap fails with ErrConflict, which the API answers 409 conflict,
// the code every other cap answers. The numbers are far above what one
// customer's configuration needs and far below what makes the catalog,
// copied on every write and held on every node, expensive.
const (
	MaxSitesPerWorkspace                  = 500
	MaxMobileAppsPerWorkspace             = 100
	MaxCredentialsPerWorkspace            = 100
	MaxConcurrencyConstraintsPerWorkspace = 200
	MaxDependenciesPerWorkspace           = 200
)

// Bound says how one table of the Catalog stays finite.
type Bound struct {
	// Table is the Catalog field's JSON name.
	Table string
	// Limit is the most records the table holds per workspace (or, for
	// the audit ring, in all); 0 only for a table no tenant writes.
	Limit int
	// How names what happens at the limit, or why no tenant writes the
	// table.
	How string
}

// Refusals and evictions at a limit.
const (
	refused = "a create past the limit is refused"
	evicted = "past the limit the oldest finished record leaves"
)

// Bounds lists every table of the Catalog with its bound. A table that a
// workspace (its admin-API credential, its console users, or its public
// traffic) can write has a Limit; TestEveryCatalogTableIsBounded walks the
// Catalog's fields and fails on a table missing here, so a new table
// cannot forget its cap.
var Bounds = []Bound{
	{"workspaces", 0, "created only with the cluster admin token, never by a workspace"},
	{"nodes", 0, "cluster membership, written only by member nodes over mutual TLS; MaxNodes records, fenced ones reaped with their Raft server"},
	{"keys", 0, "written by the node and the cluster admin's rotation; superseded keys leave KeyRetention after"},
	{"feedback", 0, "no longer written: detection feedback keeps only the tally; holds records of older builds"},
	{"sites", MaxSitesPerWorkspace, refused},
	{"mobile_apps", MaxMobileAppsPerWorkspace, refused},
	{"credentials", MaxCredentialsPerWorkspace, refused},
	{"rate_limit_policies", MaxRateLimitPolicies, refused},
	{"api_protection_policies", MaxAPIProtectionPolicies, refused},
	{"feedback_tallies", MaxSitesPerWorkspace + MaxMobileAppsPerWorkspace, "one per live site or mobile app; removed with it"},
	{"concurrency_constraints", MaxConcurrencyConstraintsPerWorkspace, refused},
	{"dependencies", MaxDependenciesPerWorkspace, refused},
	{"agents", MaxAgentsPerWorkspace, refused},
	{"approvals", MaxApprovalsPerWorkspace, "decided approvals past retention are pruned; then " + refused},
	{"trusted_devices", MaxTrustedDevicesPerWorkspace, "also MaxTrustedDevicesPerSubject; lapsed trusts are reclaimed, then " + refused},
	{"webhook_endpoints", MaxWebhookEndpointsPerWorkspace, refused},
	{"webhook_outboxes", MaxWebhookEventsPerWorkspace, "one outbox per workspace; " + evicted},
	{"trust_policies", MaxTrustPoliciesPerWorkspace, refused},
	{"messaging", 1, "one settings record per workspace, with MaxMessagingKeys keys and MaxMessagingCountries countries"},
	{"branding_profiles", MaxBrandingProfilesPerWorkspace, refused},
	{"console_users", MaxConsoleUsersPerWorkspace, refused},
	{"audit", MaxAuditEntries, "a ring over every workspace: the oldest entry leaves; entries older than AuditRetention too"},
	{"identity", MaxIdentitySessionsPerWorkspace, "sessions and MaxReviewCasesPerWorkspace review cases; expired ones are pruned, then " + refused},
	{"journeys", MaxJourneysPerWorkspace, refused},
	{"journey_sessions", MaxJourneySessionsPerWorkspace, "finished sessions are pruned past half the limit, then " + refused},
	{"passkeys", MaxPasskeysPerWorkspace, "also MaxPasskeysPerSubject; " + refused},
	{"journey_faces", MaxFaceTemplatesPerWorkspace, "one template per subject; lapsed templates are reclaimed, then " + refused},
	{"idempotency_keys", MaxIdempotencyKeysPerWorkspace, "admin creates' keys (workspace creation under \"\"); expired keys (IdempotencyRetention) are pruned, then the one that expires first leaves"},
}
