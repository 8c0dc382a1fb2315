package documents

import "github.com/trustd/trustd/platform/errcode"

// Domain errors of document screening. Image errors are 400s the caller
// fixes by sending a different file; none of them echoes image bytes.
var (
	ErrImageMissing     = errcode.New("missing-image", errcode.Invalid, "front_image is required")
	ErrImageEncoding    = errcode.New("invalid-image-encoding", errcode.Invalid, "an image is not valid base64")
	ErrImageTooLarge    = errcode.New("image-too-large", errcode.Invalid, "an image exceeds the byte, dimension or pixel limit")
	ErrImageTooSmall    = errcode.New("image-too-small", errcode.Invalid, "an image is below the minimum dimensions")
	ErrImageFormat      = errcode.New("unsupported-image-format", errcode.Invalid, "an image is not JPEG, PNG or WebP")
	ErrImageMalformed   = errcode.New("malformed-image", errcode.Invalid, "an image could not be decoded (truncated or corrupt)")
	ErrImageAnimated    = errcode.New("animated-image", errcode.Invalid, "an image holds more than one frame")
	ErrCountry          = errcode.New("invalid-country", errcode.Invalid, "country must be three upper-case letters")
	ErrDocumentType     = errcode.New("invalid-document-type", errcode.Invalid, "document_type is not one of the supported types")
	ErrBackImageMissing = errcode.New("missing-back-image", errcode.Invalid, "this document type needs back_image")
	ErrMRZFormat        = errcode.New("invalid-mrz", errcode.Invalid, "the text is not a TD1, TD2 or TD3 machine-readable zone")
	ErrBusy             = errcode.New("screening-busy", errcode.Unavailable, "the node's document decode memory budget is in use by other screenings; retry after Retry-After (GET /v1/documents/supported states the budget)")
	ErrSandboxOutage    = errcode.ErrUnavailable.Detail("document screening is unavailable (sandbox outage scenario)")
)

// Errors lists every code this module returns, for the contract.
var Errors = []*errcode.Code{ErrImageMissing, ErrImageEncoding, ErrImageTooLarge, ErrImageTooSmall,
	ErrImageFormat, ErrImageMalformed, ErrImageAnimated, ErrCountry, ErrDocumentType, ErrBackImageMissing, ErrBusy, ErrSandboxOutage.Code}
