package ratecheck

import "github.com/trustd/trustd/platform/errcode"

// Errors of a check: the spec's codes (7.3) and, after them, the documented
// additions for input the spec does not name.
var (
	ErrInvalidAction     = errcode.New("invalid-action", errcode.Invalid, "action missing or malformed.")
	ErrMissingRoute      = errcode.New("missing-route", errcode.Invalid, "A route-scoped policy matched and no valid route (URL path only, no query string) was sent.")
	ErrInvalidSubject    = errcode.New("invalid-subject_id", errcode.Invalid, "A subject-scoped policy matched and subject_id is missing or invalid.")
	ErrInvalidDevice     = errcode.New("invalid-device_id", errcode.Invalid, "A device-scoped policy matched and device_id is missing or invalid.")
	ErrInvalidScopeKey   = errcode.New("invalid-scope_key", errcode.Invalid, "A custom-scoped policy matched and scope_key is missing or invalid.")
	ErrDisabled          = errcode.New("rate-limiting-disabled", errcode.Forbidden, "The workspace disabled Rate Limiting.")
	ErrInvalidMethod     = errcode.New("invalid-method", errcode.Invalid, "trustd: method is not an HTTP method token.")
	ErrInvalidCost       = errcode.New("invalid-cost", errcode.Invalid, "trustd: cost is not an integer from 1 to 1000000000.")
	ErrInvalidAssessment = errcode.New("invalid-api_protection_assessment_id", errcode.Invalid, "trustd: api_protection_assessment_id is not a UUID.")
)

// Errors lists every code Check returns, in the contract's order.
var Errors = []*errcode.Code{ErrInvalidAction, ErrMissingRoute, ErrInvalidSubject, ErrInvalidDevice, ErrInvalidScopeKey,
	ErrDisabled, ErrInvalidMethod, ErrInvalidCost, ErrInvalidAssessment}
