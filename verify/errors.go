package verify

import "github.com/trustd/trustd/platform/errcode"

// Errors of human verification. Their codes and meanings are the
// contract's (they were http's before the module moved here).
var (
	ErrInvalidSitekey    = errcode.New("invalid-sitekey", errcode.Invalid, "The site key is unknown, or belongs to the wrong environment for this operation (sandbox keys only at /sandbox, others never there).")
	ErrInvalidOrigin     = errcode.ErrInvalidOrigin // shared with risk's password ranges
	ErrInvalidChallenge  = errcode.New("invalid-challenge", errcode.Invalid, "The challenge is malformed, forged, of another site, or redeemed from another origin or client address.")
	ErrChallengeExpired  = errcode.New("challenge-expired", errcode.Invalid, "The challenge's lifetime elapsed; request a new one.")
	ErrChallengeUsed     = errcode.New("challenge-used", errcode.Conflict, "The challenge was already redeemed; a challenge is single-use.")
	ErrInvalidSolution   = errcode.New("invalid-solution", errcode.Invalid, "The proof-of-work nonce or the visual answer is wrong.")
	ErrUnknownAssessment = errcode.New("unknown-assessment", errcode.NotFound, "No successful verification of this site has this assessment_id (or it expired).")
	ErrClearanceRequired = errcode.New("clearance-required", errcode.Unauthenticated, "No valid pre-clearance for this request: missing, forged, expired, or bound to another site, host, path, action, subject or device.")
)

// Errors lists the codes this package declares, in the contract's order.
// A missing puzzle and a second, different feedback label are the
// catalog's generic catalog.ErrNotFound and catalog.ErrConflict, and an
// owner or key that cannot answer wraps cluster.ErrUnavailable, so the
// contract documents each of those codes once, in the transport.
var Errors = []*errcode.Code{ErrInvalidSitekey, ErrInvalidOrigin, ErrInvalidChallenge, ErrChallengeExpired,
	ErrChallengeUsed, ErrInvalidSolution, ErrUnknownAssessment, ErrClearanceRequired}
