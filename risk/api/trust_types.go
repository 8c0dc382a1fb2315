package api

import (
	"time"

	kernel "github.com/trustd/trustd/platform/http"
)

// The request and answer bodies of the Trust API (spec 4.9, 2.8), from
// which the contract is generated. Handlers are in trust.go.

// TrustDecisionInput is the request of POST /trust/decision (spec 4.9).
type TrustDecisionInput struct {
	Secret             string  `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	Action             string  `json:"action" required:"true" doc:"1 to 64 of A-Z a-z 0-9 _ - . /"`
	SubjectID          string  `json:"subject_id" required:"true" doc:"Your server-side id of the person; stored only as a keyed hash."`
	DeviceID           string  `json:"device_id,omitempty" doc:"Optional (an addition to the spec): your id of the device, stored only as a keyed hash; lets a trusted device count."`
	RequestedAssurance string  `json:"requested_assurance,omitempty" enum:"document_only|standard|high" doc:"The assurance the action needs if a step-up is required; levels are ordered document_only < standard < high."`
	RiskScore          float64 `json:"risk_score,omitempty" doc:"Hint, 0 to 1: your own score. Can raise the decision, never lower it."`
	RequestVelocity5m  int64   `json:"request_velocity_5m,omitempty" doc:"Hint: your count of requests in 5 minutes. Can only raise friction."`
	FailedAttempts5m   int64   `json:"failed_attempts_5m,omitempty" doc:"Hint: your count of failed attempts in 5 minutes. Can only raise friction."`
	TransactionAmount  int64   `json:"transaction_amount,omitempty" doc:"Amount in minor units, 0 to 10^15."`
	NewDevice          bool    `json:"new_device,omitempty" doc:"Hint: you believe the device is new. Can only raise friction."`
	CountryCode        string  `json:"country_code,omitempty" doc:"ISO 3166-1 alpha-2, upper case."`
	NetworkType        string  `json:"network_type,omitempty" doc:"At most 32 of a-z 0-9 _ - (for example wifi, mobile, vpn, tor)."`
}

// MobileTrustDecisionInput is POST /mobile/trust/decision.
type MobileTrustDecisionInput struct {
	kernel.AppIdentity
	TrustDecisionInput
}

// TrustRequirements are what the recommended step-up must establish.
type TrustRequirements struct {
	Identity      bool `json:"identity" required:"true"`
	Liveness      bool `json:"liveness" required:"true"`
	DeviceBinding bool `json:"device_binding" required:"true"`
}

// TrustMatchedRule names a rule that fired.
type TrustMatchedRule struct {
	PolicyName string `json:"policy_name" required:"true"`
	ReasonCode string `json:"reason_code" required:"true"`
}

// TrustRisk is the risk part of a decision.
type TrustRisk struct {
	Outcome      string             `json:"outcome" required:"true" enum:"allow|verify|review|block"`
	Score        float64            `json:"score" required:"true" doc:"0 to 1, higher is riskier: the service's own score, raised to risk_score when that is higher."`
	Level        string             `json:"level" required:"true" enum:"low|medium|high|critical"`
	EngineStatus string             `json:"engine_status" required:"true" enum:"ok|degraded|failed" doc:"ok: every rule evaluated; degraded: a rule failed at run time and was skipped; failed: the service's signals were unavailable, so the decision failed closed to review."`
	MatchedRules []TrustMatchedRule `json:"matched_rules" required:"true" doc:"Enforced rules that fired; observe-mode rules are only counted (admin API)."`
}

// TrustDecision is the answer of POST /trust/decision (spec 2.8).
type TrustDecision struct {
	Success             bool              `json:"success" required:"true"`
	DecisionID          string            `json:"decision_id" required:"true" format:"uuid" doc:"For POST /trust/feedback."`
	Decision            string            `json:"decision" required:"true" enum:"allow|verify|review|block" doc:"verify is a step-up."`
	Method              string            `json:"method" required:"true" enum:"human_verification|document_verification|facial_authorization"`
	RequestedAssurance  string            `json:"requested_assurance" required:"true" enum:"none|document_only|standard|high"`
	EnrollmentAvailable bool              `json:"enrollment_available" required:"true" doc:"The method can be completed now without a prior enrolment (true only for human_verification today: no face or document enrolments are held yet)."`
	Requirements        TrustRequirements `json:"requirements" required:"true"`
	Risk                TrustRisk         `json:"risk" required:"true"`
}

// TrustSiteverifyInput is the request of POST /trust/siteverify.
type TrustSiteverifyInput struct {
	Secret                  string `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	Response                string `json:"response" required:"true" doc:"A single-use proof: a step-up proof (tp1_…) or a human-verification response token (tv1_…, site callers only)."`
	Action                  string `json:"action,omitempty" doc:"The action expected; a proof bound to another is action-mismatch."`
	ExpectedAssurance       string `json:"expected_assurance,omitempty" enum:"none|document_only|standard|high" doc:"Minimum rank on the ladder document_only < standard < high; a higher proof satisfies a lower requirement."`
	RequireIdentity         bool   `json:"require_identity,omitempty"`
	RequireLiveness         bool   `json:"require_liveness,omitempty"`
	RequireOperationBinding bool   `json:"require_operation_binding,omitempty" doc:"Requires operation_reference and a proof bound to it."`
	OperationReference      string `json:"operation_reference,omitempty" doc:"At most 128 printable ASCII characters; compared with the proof's binding."`
	MaxAgeSeconds           int64  `json:"max_age_seconds,omitempty" doc:"Freshness (RFC 9470 max_age) of the step-up when an assurance is expected: default 600, at most 86400."`
}

// MobileTrustSiteverifyInput is POST /mobile/trust/siteverify.
type MobileTrustSiteverifyInput struct {
	kernel.AppIdentity
	TrustSiteverifyInput
}

// TrustProofResult is what a proof established.
type TrustProofResult struct {
	Method               string `json:"method" required:"true"`
	AssuranceLevel       string `json:"assurance_level" required:"true" enum:"none|document_only|standard|high"`
	IdentityBound        bool   `json:"identity_bound" required:"true"`
	LivenessVerified     bool   `json:"liveness_verified" required:"true"`
	DeviceBound          bool   `json:"device_bound" required:"true"`
	OperationBound       bool   `json:"operation_bound" required:"true"`
	AuthorizationCapable bool   `json:"authorization_capable" required:"true" doc:"The proof is bound to identity and an operation, so it can back an authorization."`
	Action               string `json:"action" required:"true"`
}

// TrustSiteverifyResult is the answer of POST /trust/siteverify (spec 2.8).
type TrustSiteverifyResult struct {
	Success      bool              `json:"success" required:"true"`
	Trust        *TrustProofResult `json:"trust,omitempty" doc:"What the proof established; absent for a proof that is not recognised (invalid-input-response)."`
	ErrorCodes   []string          `json:"error-codes" required:"true" enum:"invalid-input-response|timeout-or-duplicate|action-mismatch|insufficient-assurance|identity-not-verified|liveness-not-verified|operation-not-bound|operation-mismatch|stale-authentication|remoteip-mismatch|low-score"`
	AssessmentID string            `json:"assessment_id,omitempty" format:"uuid" doc:"On success: for POST /trust/orchestrate."`
}

// TrustOrchestrateInput is the request of POST /trust/orchestrate.
type TrustOrchestrateInput struct {
	Secret             string `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	AssessmentID       string `json:"assessment_id" required:"true" format:"uuid" doc:"From a successful /trust/siteverify or /siteverify."`
	SubjectID          string `json:"subject_id" required:"true" doc:"Your server-side id of the person; must match the proof's binding when it has one."`
	Action             string `json:"action" required:"true"`
	OperationReference string `json:"operation_reference" required:"true" doc:"Your server-side reference of the operation, 1 to 128 printable ASCII."`
	ReceiptAlg         string `json:"receipt_alg,omitempty" enum:"Ed25519|EdDSA" doc:"The receipt's JWS alg: Ed25519 (RFC 9864, the default) or EdDSA (RFC 8037, deprecated by RFC 9864) for a JOSE library that predates RFC 9864. The signature is the same."`
}

// MobileTrustOrchestrateInput is the request of POST /mobile/trust/orchestrate.
type MobileTrustOrchestrateInput struct {
	kernel.AppIdentity
	TrustOrchestrateInput
}

// TrustOrchestrateResult is the answer of POST /trust/orchestrate.
type TrustOrchestrateResult struct {
	TrustDecision
	AssuranceLevel   string `json:"assurance_level" required:"true" enum:"none|document_only|standard|high" doc:"What the verification achieved."`
	Receipt          string `json:"receipt,omitempty" doc:"When decision is allow: a compact JWS (alg Ed25519 per RFC 9864, or EdDSA when receipt_alg asks for it) verifiable against GET /.well-known/jwks.json; claims iss, aud (workspace), sub (subject hash), jti (decision_id), iat, nbf, exp, action, operation_reference, decision, assurance_level, method, assessment_id."`
	ReceiptExpiresAt int64  `json:"receipt_expires_at,omitempty" doc:"Unix seconds."`
}

// TrustReceiptVerifyInput is the request of POST /trust/receipts/verify.
type TrustReceiptVerifyInput struct {
	Secret             string `json:"secret,omitempty"`
	Receipt            string `json:"receipt" required:"true"`
	Action             string `json:"action,omitempty" doc:"When given, must equal the receipt's."`
	OperationReference string `json:"operation_reference,omitempty" doc:"When given, must equal the receipt's."`
	SubjectID          string `json:"subject_id,omitempty" doc:"When given, its keyed hash must equal the receipt's sub."`
}

// MobileTrustReceiptVerifyInput is the request of POST /mobile/trust/receipts/verify.
type MobileTrustReceiptVerifyInput struct {
	kernel.AppIdentity
	TrustReceiptVerifyInput
}

// TrustReceiptClaims are a verified receipt's claims.
type TrustReceiptClaims struct {
	Issuer             string `json:"iss" required:"true"`
	Audience           string `json:"aud" required:"true"`
	Subject            string `json:"sub" required:"true"`
	ID                 string `json:"jti" required:"true"`
	IssuedAt           int64  `json:"iat" required:"true"`
	NotBefore          int64  `json:"nbf" required:"true"`
	Expires            int64  `json:"exp" required:"true"`
	Action             string `json:"action" required:"true"`
	OperationReference string `json:"operation_reference" required:"true"`
	Decision           string `json:"decision" required:"true"`
	AssuranceLevel     string `json:"assurance_level" required:"true"`
	Method             string `json:"method" required:"true"`
	AssessmentID       string `json:"assessment_id" required:"true"`
}

// TrustReceiptVerifyResult is the answer of POST /trust/receipts/verify.
type TrustReceiptVerifyResult struct {
	Success    bool                `json:"success" required:"true" doc:"true when the receipt verified and every binding given matched."`
	Claims     *TrustReceiptClaims `json:"claims,omitempty" doc:"Present when the signature verified, even if a binding did not."`
	ErrorCodes []string            `json:"error-codes" required:"true" enum:"invalid-receipt|unknown-receipt-key|receipt-expired|workspace-mismatch|action-mismatch|operation-mismatch|subject-mismatch"`
}

// TrustFeedbackInput is the request of POST /trust/feedback.
type TrustFeedbackInput struct {
	Secret     string `json:"secret,omitempty"`
	DecisionID string `json:"decision_id" required:"true" format:"uuid"`
	Label      string `json:"label" required:"true" enum:"legitimate|fraudulent"`
	ReasonCode string `json:"reason_code" required:"true" enum:"passed_step_up|failed_step_up|customer_confirmed|account_takeover|chargeback|false_positive|other"`
}

// MobileTrustFeedbackInput is the request of POST /mobile/trust/feedback.
type MobileTrustFeedbackInput struct {
	kernel.AppIdentity
	TrustFeedbackInput
}

// TrustFeedbackResult is the answer of POST /trust/feedback.
type TrustFeedbackResult struct {
	Success    bool   `json:"success" required:"true"`
	FeedbackID string `json:"feedback_id" required:"true" format:"uuid"`
	Duplicate  bool   `json:"duplicate" required:"true" doc:"An exact retry within 5 minutes: the first feedback's id, counted once."`
}

// JWK is one public key of the JWKS.
type JWK struct {
	Kty string `json:"kty" required:"true" enum:"OKP"`
	Crv string `json:"crv" required:"true" enum:"Ed25519"`
	X   string `json:"x" required:"true"`
	Kid string `json:"kid" required:"true"`
	Alg string `json:"alg" required:"true" enum:"Ed25519|EdDSA" doc:"Each key is listed once per alg name, under the same kid."`
	Use string `json:"use" required:"true" enum:"sig"`
}

// JWKS is GET /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys" required:"true"`
}

// TrustPolicyInput creates or replaces a trust policy.
type TrustPolicyInput struct {
	Name       string `json:"name" required:"true" doc:"1 to 64 of a-z 0-9 _ - ., unique in the workspace."`
	Condition  string `json:"condition" required:"true" doc:"A CEL expression of type bool over the documented variables (request.*, hints.*, signals.*, risk.score); compiled and type-checked when written, at most 2048 bytes."`
	ReasonCode string `json:"reason_code" required:"true" doc:"1 to 64 of a-z 0-9 _ -, reported in matched_rules."`
	Outcome    string `json:"outcome" required:"true" enum:"allow|verify|review|block" doc:"The least friction a match forces; decisions take the most severe outcome, so no rule lowers another's."`
	Mode       string `json:"mode,omitempty" enum:"enforce|observe" doc:"Default observe: evaluated and counted, never applied."`
}

// TrustPolicyView is a trust policy.
type TrustPolicyView struct {
	TrustPolicyID string    `json:"trust_policy_id,omitempty" format:"uuid" doc:"Absent for built-in rules."`
	Name          string    `json:"name" required:"true"`
	Condition     string    `json:"condition" required:"true"`
	ReasonCode    string    `json:"reason_code" required:"true"`
	Outcome       string    `json:"outcome" required:"true" enum:"allow|verify|review|block"`
	Mode          string    `json:"mode" required:"true" enum:"enforce|observe"`
	MatchesToday  int64     `json:"matches_today" required:"true" doc:"Times the rule fired (or, in observe mode, would have) in the current UTC day, across the cluster."`
	CreatedAt     time.Time `json:"created_at,omitzero"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
}

// TrustPolicyList lists a workspace's trust policies.
type TrustPolicyList struct {
	Policies       []TrustPolicyView `json:"policies" required:"true"`
	BuiltinsActive bool              `json:"builtins_active" required:"true" doc:"true while the workspace enforces no policy of its own: the built-in rules apply."`
	Builtins       []TrustPolicyView `json:"builtins" required:"true"`
}
