package messaging

import "github.com/trustd/trustd/platform/errcode"

// Failures of signed-request verification.
var (
	ErrNotConfigured    = errcode.New("messaging-not-configured", errcode.Unauthenticated, "X-Service-Workspace is missing or names a workspace without a messaging signing secret")
	ErrTimestampFormat  = errcode.New("messaging-timestamp-invalid", errcode.Unauthenticated, "X-Service-Timestamp is missing or not exactly 10 digits")
	ErrTimestampStale   = errcode.New("messaging-timestamp-stale", errcode.Unauthenticated, "X-Service-Timestamp is further from the server clock than the tolerance (300 s)")
	ErrNonceInvalid     = errcode.New("messaging-nonce-invalid", errcode.Unauthenticated, "X-Service-Nonce is missing, not 16–128 characters, or has a character outside [A-Za-z0-9._~-]")
	ErrNonceReused      = errcode.New("messaging-nonce-reused", errcode.Conflict, "this nonce was already used by this workspace's messaging integration (replay)")
	ErrSignatureInvalid = errcode.New("messaging-signature-invalid", errcode.Unauthenticated, "X-Service-Signature is missing, malformed, or does not match")
)

// Failures of the request body and of the operations.
var (
	ErrBodyInvalid      = errcode.New("messaging-body-invalid", errcode.Invalid, "the signed body is not exactly one JSON object of the documented fields (duplicate or case-folded names, unknown fields, trailing data and invalid UTF-8 are refused)")
	ErrContentRefused   = errcode.New("messaging-content-refused", errcode.Invalid, "the body carries a one-time code or a message body (fields such as code, otp, message, body, text): never send them")
	ErrDestination      = errcode.New("messaging-destination-invalid", errcode.Invalid, "send exactly one of destination_number (E.164: + and 8 to 15 digits, no leading 0) and destination_prefix (+ and 4 to 11 digits)")
	ErrCountry          = errcode.New("messaging-country-invalid", errcode.Invalid, "country must be an ISO 3166-1 alpha-2 code, two upper-case letters")
	ErrChannel          = errcode.New("messaging-channel-invalid", errcode.Invalid, "channel must be sms, voice or whatsapp")
	ErrTemplateKind     = errcode.New("messaging-template-kind-invalid", errcode.Invalid, "template_kind must be one of otp_login, otp_signup, otp_password_reset, otp_transaction, otp_step_up, otp_other")
	ErrReference        = errcode.New("messaging-reference-invalid", errcode.Invalid, "message_reference must be 1 to 128 bytes of UTF-8 without control characters")
	ErrSubject          = errcode.New("messaging-subject-invalid", errcode.Invalid, "subject_id must be 1 to 256 bytes of UTF-8 without control characters")
	ErrEventStatus      = errcode.New("messaging-event-status-invalid", errcode.Invalid, "status must be delivered, verified or failed")
	ErrReferenceReused  = errcode.New("messaging-reference-reused", errcode.Conflict, "a preflight with this message_reference was already allowed: use a new reference per message")
	ErrMessageUnknown   = errcode.New("messaging-message-unknown", errcode.NotFound, "no allowed preflight with this message_reference in the last 24 hours")
	ErrPolicyInvalid    = errcode.New("messaging-policy-invalid", errcode.Invalid, "a messaging policy value is out of its documented range")
	ErrUnavailable      = errcode.ErrUnavailable.Detail("the counters could not be read or written; fail closed (do not send) or retry with backoff")
	ErrSettingsNotFound = errcode.New("messaging-settings-not-found", errcode.NotFound, "the workspace has no messaging settings")
)

// Errors lists every code of the package for the contract.
var Errors = []*errcode.Code{ErrNotConfigured, ErrTimestampFormat, ErrTimestampStale, ErrNonceInvalid, ErrNonceReused,
	ErrSignatureInvalid, ErrBodyInvalid, ErrContentRefused, ErrDestination, ErrCountry, ErrChannel, ErrTemplateKind,
	ErrReference, ErrSubject, ErrEventStatus, ErrReferenceReused, ErrMessageUnknown, ErrPolicyInvalid, ErrUnavailable.Code,
	ErrSettingsNotFound}

// SignatureErrors are the codes of a signed request's verification.
var SignatureErrors = []*errcode.Code{ErrNotConfigured, ErrTimestampFormat, ErrTimestampStale, ErrNonceInvalid,
	ErrNonceReused, ErrSignatureInvalid, ErrBodyInvalid}
