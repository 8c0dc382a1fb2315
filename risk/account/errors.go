package account

import "github.com/trustd/trustd/platform/errcode"

// Domain errors of Account Defence. platform/http/ maps each Kind to a status and
// lists Errors in the contract.
var (
	// ErrInvalidEvent is an event_type or outcome outside the vocabulary.
	ErrInvalidEvent = errcode.New("invalid-event", errcode.Invalid,
		"event_type must be login, registration, password_reset, profile_update, transaction, challenge or custom; outcome attempted, succeeded or failed")
	// ErrInvalidSubject is a missing or malformed subject_id.
	ErrInvalidSubject = errcode.New("invalid-subject-id", errcode.Invalid, "subject_id is required: 1 to 256 bytes of UTF-8 without control characters")
	// ErrInvalidDevice is a malformed device_id (or a missing one where required).
	ErrInvalidDevice = errcode.New("invalid-device-id", errcode.Invalid, "device_id must be 1 to 256 bytes of UTF-8 without control characters (required for trusted devices)")
	// ErrInvalidHint is an out-of-range caller hint.
	ErrInvalidHint = errcode.New("invalid-account-age", errcode.Invalid, "account_age_days must be 0 to 36500")
	// ErrInvalidFeedback is a label or reason_code outside the taxonomy, or
	// a reason that does not belong to the label.
	ErrInvalidFeedback = errcode.New("invalid-feedback", errcode.Invalid,
		"assessment_id must be a UUID, label legitimate or fraudulent, and reason_code one of that label's reasons (see the contract)")
	// ErrAssessmentNotFound is an assessment id this workspace never got
	// from /account/assess, or one that expired.
	ErrAssessmentNotFound = errcode.New("account-assessment-not-found", errcode.NotFound,
		"no Account Defence assessment of this workspace has this assessment_id (assessments are kept 24 hours)")
	// ErrInvalidTrustAction is an action other than trust or revoke, or a
	// bad label.
	ErrInvalidTrustAction = errcode.New("invalid-trusted-device", errcode.Invalid, "action must be trust or revoke; label at most 64 bytes without control characters")
	// ErrTrustedDevicesFull is a trust refused by the caps.
	ErrTrustedDevicesFull = errcode.New("trusted-devices-full", errcode.Conflict,
		"the subject already has 20 trusted devices, or the workspace 100000: revoke one first (trusts lapse 180 days after they were last given)")
	// ErrUnavailable is a counter or the catalog that did not answer.
	ErrUnavailable = errcode.ErrUnavailable.Detail("the service cannot complete the operation now; back off and retry")
)

// Errors lists every code the module answers, for the contract.
var Errors = []*errcode.Code{ErrInvalidEvent, ErrInvalidSubject, ErrInvalidDevice, ErrInvalidHint, ErrInvalidFeedback,
	ErrAssessmentNotFound, ErrInvalidTrustAction, ErrTrustedDevicesFull, ErrUnavailable.Code}
