package errcode

// The codes several modules answer. Each code string is declared once in
// the tree (TestEveryCodeIsDeclaredOnce); a module that answers one of
// these in its own words declares a sentinel with Detail, and the
// transport lists the code once, with the meaning below, in the contract.
var (
	// ErrUnavailable is a failure to be retried later: no Raft leader, an
	// owner or a counter that did not answer, a key not there yet.
	ErrUnavailable = New("service-unavailable", Unavailable, "The service cannot complete the operation now; back off and retry. For /siteverify: the token's owner did not confirm an answer in time, so the token may or may not have been consumed (fail closed); a retry with the same idempotency_key gets the first answer back, or 503 again while it is still unknown, never timeout-or-duplicate for its own first use. For an admin create: it may have been committed; retry it with the same Idempotency-Key to get the record it created instead of a second one.")
	// ErrNotFound is a path, or a named resource, that does not exist for
	// the caller.
	ErrNotFound = New("not-found", NotFound, "No such path, or the named resource does not exist.")
	// ErrInternal is a bug; the transport logs it with the request id.
	ErrInternal = New("internal-error", Internal, "An unexpected failure; it is logged with the request id.")
)

// The error-codes of the siteverify family (spec 7.2) that more than one
// of /siteverify, /trust/siteverify, /trust/receipts/verify and
// /journeys/siteverify answers in its {success, error-codes} body (HTTP
// 200). Each is declared here once (TestEveryCodeIsDeclaredOnce); a
// module's own codes stay in the module.
const (
	CodeInvalidResponse    = "invalid-input-response"
	CodeTimeoutOrDuplicate = "timeout-or-duplicate"
	CodeActionMismatch     = "action-mismatch"
	CodeOperationMismatch  = "operation-mismatch"
	CodeInsufficient       = "insufficient-assurance"
	CodeSubjectMismatch    = "subject-mismatch"
	CodeRemoteIPMismatch   = "remoteip-mismatch"
	CodeLowScore           = "low-score"
)
