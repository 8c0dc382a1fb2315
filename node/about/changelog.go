package about

import kernel "github.com/trustd/trustd/platform/http"

// Changelog is the answer of GET /changelog.json.
type Changelog struct {
	Current   string              `json:"current" required:"true"`
	Revisions []ChangelogRevision `json:"revisions" required:"true"`
}

// ChangelogRevision is one contract revision.
type ChangelogRevision struct {
	Version string   `json:"version" required:"true"`
	Date    string   `json:"date" required:"true" format:"date"`
	Changes []string `json:"changes" required:"true"`
}

// changelog lists the spec's contract revisions (section 9), then ours.
var changelog = Changelog{
	Current: kernel.ContractVersion + "+" + kernel.Build,
	Revisions: []ChangelogRevision{
		{"2026-08-05.2", "2026-08-05", []string{"Human verification, documents, identity sessions, journeys, trust, agents, account defence."}},
		{"2026-08-05.3", "2026-08-05", []string{"Contract revision (details not published)."}},
		{"2026-08-06.1", "2026-08-06", []string{"Contract revision (details not published)."}},
		{"2026-08-06.8", "2026-08-06", []string{"Contract revision (details not published)."}},
		{"2026-08-08.1", "2026-08-08", []string{"Rate limiting: POST /rate-limit/check and mobile counterpart."}},
		{"2026-08-08.2", "2026-08-08", []string{"Concurrency control: expiring leases."}},
		{"2026-08-08.3", "2026-08-08", []string{"Dependency resilience: admission and feedback. 121 public operations."}},
		{"2026-08-08.3+trustd.1", "2026-11-22", []string{
			"trustd: shapes designed for operations the spec leaves 'not shown' (ApiError body, admin API, challenge protocol, sandbox, leases, admission, pre-clearance).",
			"Legacy base served with Deprecation and Link rel=successor-version headers; no sunset.",
		}},
		{"2026-08-08.3+trustd.2", "2026-11-24", []string{
			"X-Service-Contract-Version is exactly the spec's revision; this build is named in X-Service-Build.",
			"/siteverify declares its body secret (no bearer scheme); the error schema is named ApiError; common and 429 headers are declared on responses.",
			"An equivalent OpenAPI 3.0 document at /openapi-3.0.json for generators that do not read 3.1.",
			"Admin: signing keys listed and rotated with a two-phase publish.",
		}},
		{"2026-08-08.3+" + kernel.Build, "2026-11-25", []string{
			"Account Defence: POST /account/assess, /account/feedback, /account/trusted-device with closed, documented vocabularies and reason codes.",
			"Breached-password ranges: POST /account/password/range gains optional mode (sha1|ntlm), add_padding and a corpus description (count_semantics); GET /passwords/{sitekey}/range/{prefix} serves the Pwned Passwords text form for unmodified clients.",
			"Agent Trust: RFC 9421 HTTP Message Signatures (Web Bot Auth profile, Ed25519) as a second signing method; DELETE of an agent.",
			"Signed webhooks: admin operations for endpoints, events, deliveries, redelivery and alerts.",
			"Lease and admission tokens use the service's one token format: tokens issued by an earlier build are refused (invalid-lease, invalid-admission); acquire a new lease.",
			"rate-limiting-unavailable now means only that the node has not loaded its configuration; a Raft leader election no longer stops checks.",
			"POST /documents/verify also takes multipart/form-data (the images as files).",
			"GET / links the contracts, the Postman collection, the changelog and the user guide, served at GET /docs/{page}.",
			"Agent Trust, RFC 9421: the Web Bot Auth draft is the default profile (keyid the JWK thumbprint, resolved only among the agents of the workspace named in X-Service-Workspace, or the agent_id; @authority covered); httpsig_profile strict per agent keeps @path and content-digest required; agents show ed25519_thumbprint.",
			"Trust API: mobile counterparts POST /mobile/trust/orchestrate, /mobile/trust/receipts/verify and /mobile/trust/feedback (spec 4.9: server and mobile decision operations, receipt verification and feedback).",
			"97 public operations: all 62 the specification names or implies, and 35 of trustd's own; the user guide (docs/README.md, How many operations) lists them and says why the rest of the reference contract's 121 are not operations here.",
			"Decision receipts are signed with alg Ed25519 (RFC 9864) instead of the deprecated EdDSA; POST /trust/orchestrate takes receipt_alg EdDSA for older JOSE libraries; the JWKS lists each key under both names; /trust/receipts/verify accepts both.",
			"Every 503 answer carries Retry-After (seconds; 1 unless the operation knows better, such as screening-busy's 2), declared on the 503 responses.",
		}},
	},
}
