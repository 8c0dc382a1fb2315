package journeys

import "github.com/trustd/trustd/platform/errcode"

// Domain errors of the journey operations.
var (
	ErrInvalidJourney    = errcode.New("invalid-journey", errcode.Invalid, "a journey definition field is out of range; the message names it")
	ErrJourneyNotFound   = errcode.New("journey-not-found", errcode.NotFound, "the workspace has no journey with this key")
	ErrInvalidRequest    = errcode.New("invalid-journey-request", errcode.Invalid, "a field of the journey request is missing or out of its documented range; the message names it")
	ErrConsentOutdated   = errcode.New("journey-consent-outdated", errcode.Conflict, "consent_version is not the version the journey currently asks for; show the current consent and start again")
	ErrInvalidSession    = errcode.New("invalid-journey-session", errcode.NotFound, "the session token or capability is not one this workspace issued, or the session is gone")
	ErrSessionClosed     = errcode.New("journey-session-closed", errcode.Conflict, "the session expired, was verified, escalated or ran out of attempts; start a new journey")
	ErrWrongMethod       = errcode.New("journey-method-mismatch", errcode.Conflict, "this step belongs to another method than the session's")
	ErrNoChallenge       = errcode.New("journey-attempt-not-started", errcode.Conflict, "begin an attempt before completing it")
	ErrMethodUnavailable = errcode.New("journey-method-unavailable", errcode.Unavailable, "the method's engine (face engine, presence check, human verification verdict or review queue) is not configured on this node")
	ErrNotEnrolled       = errcode.New("journey-not-enrolled", errcode.Conflict, "facial_authorization needs a face enrolled for this subject (a facial_enrollment journey)")
	ErrBusy              = errcode.New("journey-session-busy", errcode.Conflict, "the session changed concurrently too often; retry")
	ErrNoSigningKey      = errcode.New("journey-key-unavailable", errcode.Unavailable, "the cluster has no live signing key yet")
	ErrSessionsFull      = errcode.New("journey-sessions-full", errcode.RateLimited, "the workspace holds the most live journey sessions allowed; wait for some to expire")
)

// Errors lists the module's domain errors, for the contract.
var Errors = []*errcode.Code{ErrInvalidJourney, ErrJourneyNotFound, ErrInvalidRequest, ErrConsentOutdated, ErrInvalidSession,
	ErrSessionClosed, ErrWrongMethod, ErrNoChallenge, ErrMethodUnavailable, ErrNotEnrolled, ErrBusy, ErrNoSigningKey, ErrSessionsFull}

// Error codes of /journeys/siteverify (the error-codes array, HTTP 200)
// besides the family's shared ones (errcode.CodeInvalidResponse, …).
const (
	CodeInvalidSession     = "invalid-session-token"
	CodeProofNotForSession = "proof-session-mismatch"
	CodeSubjectRequired    = "subject-required"
	CodeConsentRequired    = "consent-required"
	CodeConsentMismatch    = "consent-version-mismatch"
	CodeNotCompleted       = "journey-not-completed"
	CodeEscalated          = "journey-escalated"
)

// SiteverifyCodes lists every error code /journeys/siteverify answers.
var SiteverifyCodes = []string{CodeInvalidSession, errcode.CodeInvalidResponse, errcode.CodeTimeoutOrDuplicate, CodeProofNotForSession,
	errcode.CodeSubjectMismatch, CodeSubjectRequired, errcode.CodeActionMismatch, errcode.CodeOperationMismatch, CodeConsentRequired,
	CodeConsentMismatch, errcode.CodeInsufficient, CodeNotCompleted, CodeEscalated}
