package api

import (
	"time"

	"github.com/trustd/trustd/console/branding"
	kernel "github.com/trustd/trustd/platform/http"
)

// The request and answer bodies of journeys (spec 4.8, 2.7), from which
// the contract is generated. Handlers are in journeys.go.

// JourneyConsentView is a journey's consent.
type JourneyConsentView struct {
	Required bool   `json:"required" required:"true"`
	Version  string `json:"version" required:"true" doc:"At most 64 printable characters; required when required is true."`
}

// JourneyRequirementsView are what a journey's proof establishes.
type JourneyRequirementsView struct {
	Identity         bool `json:"identity" required:"true"`
	Liveness         bool `json:"liveness" required:"true"`
	Authorization    bool `json:"authorization" required:"true"`
	OperationBinding bool `json:"operation_binding" required:"true"`
}

// JourneyEscalationView is a journey's risk-based escalation.
type JourneyEscalationView struct {
	Enabled          bool   `json:"enabled" required:"true"`
	HighRiskMethod   string `json:"high_risk_method" doc:"Method used when the subject's risk level is high or critical (empty: unchanged)."`
	MediumRiskMethod string `json:"medium_risk_method" doc:"Method used when the subject's risk level is medium (empty: unchanged)."`
	ReviewOnHighRisk bool   `json:"review_on_high_risk" doc:"A high-risk start opens the session escalated (assisted review) instead."`
}

// JourneyInput defines or replaces a journey (admin).
type JourneyInput struct {
	Name                   string                  `json:"name" required:"true" doc:"1 to 128 printable characters."`
	Method                 string                  `json:"method" required:"true" enum:"human_verification|facial_liveness|facial_enrollment|facial_authorization|device_authorization"`
	RequestedAssurance     string                  `json:"requested_assurance,omitempty" enum:"none|document_only|standard|high" doc:"Must be achievable by the method (and every escalation method)."`
	Consent                JourneyConsentView      `json:"consent"`
	Requirements           JourneyRequirementsView `json:"requirements"`
	SessionLifetimeSeconds int                     `json:"session_lifetime_seconds,omitempty" doc:"30 to 300; 0 or absent: 300."`
	Escalation             JourneyEscalationView   `json:"escalation"`
}

// JourneyView is a journey definition.
type JourneyView struct {
	Key                    string                  `json:"key" required:"true"`
	Name                   string                  `json:"name" required:"true"`
	Method                 string                  `json:"method" required:"true"`
	RequestedAssurance     string                  `json:"requested_assurance" required:"true"`
	Consent                JourneyConsentView      `json:"consent" required:"true"`
	PolicyVersion          int                     `json:"policy_version" required:"true" doc:"1 on creation, +1 on every change."`
	Requirements           JourneyRequirementsView `json:"requirements" required:"true"`
	SessionLifetimeSeconds int                     `json:"session_lifetime_seconds" required:"true"`
	Escalation             JourneyEscalationView   `json:"escalation" required:"true"`
	CreatedAt              time.Time               `json:"created_at" required:"true"`
	UpdatedAt              time.Time               `json:"updated_at" required:"true"`
}

// JourneyList is a workspace's journeys.
type JourneyList struct {
	Journeys []JourneyView `json:"journeys" required:"true"`
}

// JourneySubjectErase names a subject whose journey credentials go.
type JourneySubjectErase struct {
	SubjectID string `json:"subject_id" required:"true"`
}

// JourneySubjectErased is how many records went.
type JourneySubjectErased struct {
	Deleted int `json:"deleted" required:"true" doc:"Face templates and passkeys deleted."`
}

// JourneyStartInput is POST /journeys/start.
type JourneyStartInput struct {
	Secret             string  `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	JourneyKey         string  `json:"journey_key" required:"true"`
	SubjectID          string  `json:"subject_id,omitempty" doc:"Server-derived id of the person, stored as a keyed hash; required by identity-bound journeys and the methods that keep credentials."`
	Action             string  `json:"action,omitempty"`
	OperationReference string  `json:"operation_reference,omitempty" doc:"At most 128 printable ASCII characters; required by journeys with requirements.operation_binding."`
	RiskLevel          string  `json:"risk_level,omitempty" enum:"low|medium|high|critical" doc:"Hint: can raise the escalation level, never lower the service's own."`
	RiskScore          float64 `json:"risk_score,omitempty" doc:"Hint, 0 to 1: can raise, never lower."`
	ConsentVersion     string  `json:"consent_version,omitempty" doc:"The consent version your page shows; another than the journey's is 409 journey-consent-outdated."`
	RequestReference   string  `json:"request_reference,omitempty" doc:"Your reference of the request (not stored)."`
}

// MobileJourneyStartInput is POST /mobile/journeys/start.
type MobileJourneyStartInput struct {
	kernel.AppIdentity
	JourneyStartInput
}

// JourneyRef names a journey in answers.
type JourneyRef struct {
	Key  string `json:"key" required:"true"`
	Name string `json:"name,omitempty"`
}

// JourneyStartResult is spec 2.7 start.
type JourneyStartResult struct {
	Success            bool                    `json:"success" required:"true"`
	Journey            JourneyRef              `json:"journey" required:"true"`
	SessionToken       string                  `json:"session_token" required:"true" doc:"Short-lived, single-use: keep it on your server; exchange it once at /journeys/siteverify."`
	ExpiresIn          int                     `json:"expires_in" required:"true" doc:"Seconds (300 unless the journey sets less)."`
	Method             string                  `json:"method" required:"true" doc:"The method after risk-based escalation."`
	RequestedAssurance string                  `json:"requested_assurance" required:"true"`
	PolicyVersion      int                     `json:"policy_version" required:"true"`
	Consent            JourneyConsentView      `json:"consent" required:"true"`
	Endpoint           string                  `json:"endpoint" required:"true" doc:"Where the person completes the method: the page address with the person's capability in the fragment (never sent to a server by the browser)."`
	Requirements       JourneyRequirementsView `json:"requirements" required:"true"`
	Status             string                  `json:"status" required:"true" enum:"started|escalated"`
	RiskLevel          string                  `json:"risk_level" required:"true" enum:"low|medium|high|critical" doc:"The level escalation acted on."`
}

// JourneySessionInput names a session (status).
type JourneySessionInput struct {
	Secret       string `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	SessionToken string `json:"session_token" required:"true"`
}

// MobileJourneySessionInput is POST /mobile/journeys/status.
type MobileJourneySessionInput struct {
	kernel.AppIdentity
	JourneySessionInput
}

// JourneyStatusResult is a session read without consuming it.
type JourneyStatusResult struct {
	Success        bool       `json:"success" required:"true"`
	Journey        JourneyRef `json:"journey" required:"true"`
	Status         string     `json:"status" required:"true" enum:"started|proof_pending|completed|failed|escalated|expired"`
	Verified       bool       `json:"verified" required:"true" doc:"The session was exchanged successfully at siteverify (it is spent)."`
	Method         string     `json:"method" required:"true"`
	PolicyVersion  int        `json:"policy_version" required:"true"`
	ExpiresIn      int        `json:"expires_in" required:"true"`
	Attempts       int        `json:"attempts" required:"true"`
	FailedAttempts int        `json:"failed_attempts" required:"true"`
	CaseReference  string     `json:"case_reference,omitempty"`
	NextStep       string     `json:"next_step,omitempty" enum:"retry_with_fresh_proof|start_new_journey|await_review"`
}

// JourneySiteverifyInput is POST /journeys/siteverify.
type JourneySiteverifyInput struct {
	Secret             string `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	SessionToken       string `json:"session_token" required:"true"`
	Response           string `json:"response" doc:"The proof (tp1_…) the person's completion returned."`
	SubjectID          string `json:"subject_id,omitempty" doc:"Server-derived; identity-bound journeys require the same subject as at start."`
	Action             string `json:"action,omitempty"`
	OperationReference string `json:"operation_reference,omitempty"`
	ConsentVersion     string `json:"consent_version,omitempty"`
	ConsentAccepted    bool   `json:"consent_accepted,omitempty"`
}

// MobileJourneySiteverifyInput is POST /mobile/journeys/siteverify.
type MobileJourneySiteverifyInput struct {
	kernel.AppIdentity
	JourneySiteverifyInput
}

// JourneyTrust is what a journey's proof established.
type JourneyTrust struct {
	Method               string `json:"method" required:"true"`
	AssuranceLevel       string `json:"assurance_level" required:"true" enum:"none|document_only|standard|high"`
	IdentityBound        bool   `json:"identity_bound" required:"true"`
	LivenessVerified     bool   `json:"liveness_verified" required:"true"`
	OperationBound       bool   `json:"operation_bound" required:"true"`
	AuthorizationCapable bool   `json:"authorization_capable" required:"true"`
}

// JourneyState is a journey's key and status in a verify answer.
type JourneyState struct {
	Key    string `json:"key" required:"true"`
	Status string `json:"status" required:"true" enum:"started|proof_pending|completed|failed|escalated|expired"`
}

// JourneySiteverifyResult is spec 2.7 verify. Continue only when success
// is true and journey.status is completed.
type JourneySiteverifyResult struct {
	Success    bool          `json:"success" required:"true"`
	Trust      *JourneyTrust `json:"trust,omitempty"`
	Journey    *JourneyState `json:"journey,omitempty"`
	ErrorCodes []string      `json:"error-codes" required:"true" enum:"invalid-session-token|invalid-input-response|timeout-or-duplicate|proof-session-mismatch|subject-mismatch|subject-required|action-mismatch|operation-mismatch|consent-required|consent-version-mismatch|insufficient-assurance|journey-not-completed|journey-escalated"`
	NextStep   string        `json:"next_step,omitempty" enum:"retry_with_fresh_proof|start_new_journey|await_review" doc:"After a failure: what the journey's policy allows."`
}

// JourneyEscalateInput is POST /journeys/escalate.
type JourneyEscalateInput struct {
	Secret         string `json:"secret,omitempty" doc:"The site's private secret (or Authorization: Bearer <secret>)."`
	SessionToken   string `json:"session_token" required:"true"`
	ReasonCode     string `json:"reason_code" required:"true" doc:"1 to 64 of a-z 0-9 _ - ."`
	Priority       string `json:"priority,omitempty" enum:"low|normal|high"`
	OperationLabel string `json:"operation_label,omitempty" doc:"A label (1 to 64 of a-z 0-9 _ - .), never personal data."`
}

// MobileJourneyEscalateInput is POST /mobile/journeys/escalate.
type MobileJourneyEscalateInput struct {
	kernel.AppIdentity
	JourneyEscalateInput
}

// JourneyEscalateResult names the review case.
type JourneyEscalateResult struct {
	Success       bool   `json:"success" required:"true"`
	CaseReference string `json:"case_reference" required:"true" doc:"The review case; it holds the session reference, reason, priority and label, no personal data."`
	Status        string `json:"status" required:"true" enum:"escalated"`
}

// JourneyPersonView is what the person's page reads.
type JourneyPersonView struct {
	Success       bool               `json:"success" required:"true"`
	JourneyName   string             `json:"journey_name" required:"true"`
	Method        string             `json:"method" required:"true"`
	Consent       JourneyConsentView `json:"consent" required:"true"`
	Status        string             `json:"status" required:"true"`
	ExpiresIn     int                `json:"expires_in" required:"true"`
	Attempts      int                `json:"attempts" required:"true"`
	Reference     string             `json:"reference" required:"true" doc:"The cdata a human-verification widget of this session must carry."`
	ReturnOrigins []string           `json:"return_origins" required:"true" doc:"Origins (https, the starting site's hostnames) the page hands the proof to by postMessage; empty for mobile sessions."`
	Branding      *branding.View     `json:"branding,omitempty" doc:"The branding profile of the starting site or mobile app, when it names one: the page links its stylesheet and shows its logo."`
	SiteKey       string             `json:"sitekey,omitempty" doc:"human_verification sessions of a site: the starting site's public key, for the widget the page renders (the page's host must be on that site's hostnames)."`
}

// JourneyHumanInput completes a human_verification session.
type JourneyHumanInput struct {
	Response string `json:"response" required:"true" doc:"The widget's response token, rendered with the session's sitekey and cdata = reference, solved from the address this call comes from; it is consumed as /siteverify consumes it."`
}

// JourneyAttemptResult is a completion: a proof, or why it failed.
type JourneyAttemptResult struct {
	Success  bool     `json:"success" required:"true"`
	Response string   `json:"response,omitempty" doc:"The single-use proof (tp1_…) to hand your backend for /journeys/siteverify."`
	Status   string   `json:"status" required:"true"`
	Reasons  []string `json:"reasons,omitempty"`
}

// JourneyChallenge is a facial attempt's liveness challenge.
type JourneyChallenge struct {
	Success  bool      `json:"success" required:"true"`
	Nonce    string    `json:"nonce" required:"true"`
	Actions  []string  `json:"actions" required:"true"`
	Deadline time.Time `json:"deadline" required:"true"`
}

// JourneyFrame is one captured frame (base64 of a JPEG or PNG).
type JourneyFrame struct {
	Image    string `json:"image" required:"true" doc:"Standard base64 of the frame image (JPEG or PNG), at most 1 MiB decoded."`
	OffsetMS int    `json:"offset_ms" required:"true"`
}

// JourneyFaceInput completes a facial attempt.
type JourneyFaceInput struct {
	Frames []JourneyFrame `json:"frames" required:"true" doc:"1 to 30 frames."`
}

// JourneyPasskeyCeremony is what the page passes to navigator.credentials.
type JourneyPasskeyCeremony struct {
	Success  bool           `json:"success" required:"true"`
	Ceremony string         `json:"ceremony" required:"true" enum:"registration|assertion"`
	Options  map[string]any `json:"options" required:"true" doc:"PublicKeyCredentialCreationOptions (registration) or PublicKeyCredentialRequestOptions (assertion), binary fields base64url."`
}

// JourneyPasskeyInput is the ceremony's PublicKeyCredential.
type JourneyPasskeyInput struct {
	Credential map[string]any `json:"credential" required:"true" doc:"The PublicKeyCredential (toJSON form: id, rawId, type, response with base64url fields)."`
}

// JourneyPasskeyResult is a finished ceremony.
type JourneyPasskeyResult struct {
	Success  bool                    `json:"success" required:"true"`
	Response string                  `json:"response,omitempty" doc:"The single-use proof after a passed assertion."`
	Status   string                  `json:"status" required:"true"`
	Reasons  []string                `json:"reasons,omitempty"`
	Next     *JourneyPasskeyCeremony `json:"next,omitempty" doc:"After a registration: the assertion to run with the new passkey."`
}
