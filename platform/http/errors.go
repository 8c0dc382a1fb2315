package http

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/persistence"
)

// ErrorCode is a stable, documented error code. Its HTTP status is fixed
// here, in one place.
type ErrorCode struct {
	Code    string
	Status  int
	Meaning string
}

// The error codes of the ApiError body. /siteverify and the rate-limit
// check keep the spec's own codes and shapes (see their files).
var (
	ErrMalformedJSON   = ErrorCode{"malformed-json", 400, "The body is not one valid JSON object: syntax error, duplicate key, invalid UTF-8 or trailing data."}
	ErrUnknownField    = ErrorCode{"unknown-field", 400, "The body has a member the operation does not define (names are case-sensitive)."}
	ErrInvalidField    = ModuleCode(errcode.ErrInvalidField)
	ErrUnsupportedType = ErrorCode{"unsupported-media-type", 415, "Content-Type is not one the operation accepts."}
	ErrBodyTooLarge    = ErrorCode{"body-too-large", 413, "The request body exceeds the size limit."}
	ErrHeadersTooLarge = ErrorCode{"headers-too-large", 431, "The request headers exceed the size limit."}
	ErrBadRequest      = ErrorCode{"bad-request", 400, "The HTTP request or its body could not be parsed: malformed HTTP, a body that is not form-encoded, multipart or JSON where those are accepted, or a field sent twice."}
	ErrUnauthorized    = ErrorCode{"unauthorized", 401, "Missing or invalid credential."}
	ErrForbidden       = ErrorCode{"forbidden", 403, "The credential may not perform this operation."}
	ErrNotFound        = ModuleCode(errcode.ErrNotFound)
	ErrMethod          = ErrorCode{"method-not-allowed", 405, "The path exists but not with this method; see the Allow header."}
	ErrConflict        = ErrorCode{"conflict", 409, "The change conflicts with current state: a name or registration already in use, a version changed meanwhile, or the workspace already holds the most records the collection allows per workspace: sites 500, mobile apps 100, credentials 100, concurrency constraints 200, dependencies 200, rate-limit and API Protection policies 200 each, agents 200, trust policies 64, journeys 64, webhook endpoints 16, branding profiles 16, console users 100)."}
	ErrRateLimited     = ErrorCode{"rate-limit-exceeded", 429, "The caller is over the service's ingress limit; honour Retry-After."}
	ErrUnavailable     = ModuleCode(errcode.ErrUnavailable)
	// The secret errors of spec sections 7.2 and 7.3 (siteverify and the
	// rate-limit check answer them in their own {success,error} shape).
	ErrMissingSecret = ErrorCode{"missing-input-secret", 400, "No secret supplied (the body field secret, or Authorization: Bearer where the operation accepts it)."}
	ErrInvalidSecret = ErrorCode{"invalid-input-secret", 400, "The secret is unknown, or a sandbox secret at a production endpoint (and the other way round)."}
	ErrInternal      = ModuleCode(errcode.ErrInternal)

	// Shared by the areas: a browser Origin no site allows, a mobile
	// app's declared identity that is not its secret's (errcode's).
	ErrInvalidOrigin      = ModuleCode(errcode.ErrInvalidOrigin)
	ErrInvalidAppIdentity = ModuleCode(errcode.ErrInvalidAppIdentity)
)

// contractErrors is every ApiError code the contract documents: the
// transport's and each product module's (an area's from Config.Areas).
func (s *Server) contractErrors() []ErrorCode {
	// Human verification's codes (verify/api) sit where they were in
	// apiErrors; the shared two are the kernel's when it is absent.
	out := WithModuleCodes(apiErrors, s.areaErrors("verify"))
	out = WithModuleCodes(out, []*errcode.Code{errcode.ErrInvalidOrigin, errcode.ErrInvalidAppIdentity})
	for _, mod := range [][]*errcode.Code{
		s.areaErrors("traffic"),
		s.areaErrors("identity/documents"),
		s.areaErrors("risk/account"),
		s.areaErrors("events"),
		s.areaErrors("agents"),
		s.areaErrors("risk/passwords"),
		s.areaErrors("risk/trust"),
		s.areaErrors("risk/messaging"),
		s.areaErrors("branding"),
		s.areaErrors("console"),
		s.areaErrors("identity/sessions"),
		s.areaErrors("journeys"),
	} {
		out = WithModuleCodes(out, mod)
	}
	for _, a := range s.cfg.Areas {
		if !placed[a.Name] {
			out = WithModuleCodes(out, a.Errors)
		}
	}
	return out
}

// apiErrors lists the transport's ApiError codes.
var apiErrors = []ErrorCode{
	ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrHeadersTooLarge, ErrBadRequest,
	ErrUnauthorized, ErrForbidden, ErrNotFound, ErrMethod, ErrConflict, ErrRateLimited,
	ErrUnavailable, ErrInternal, ErrInvalidIdempotencyKey, ErrIdempotencyKeyReused,
}

// APIError is the one error body of every operation other than the two
// whose shapes the spec fixes.
type APIError struct {
	Success   bool   `json:"success" doc:"Always false."`
	Error     string `json:"error" doc:"Stable error code."`
	Message   string `json:"message" doc:"Human-readable detail; not stable."`
	RequestID string `json:"request_id" doc:"Correlates with the X-Request-Id header and server logs."`
}

// fail writes an ApiError body.
func (c *Call) fail(code ErrorCode, msg string) {
	c.failStatus(code.Status, code.Code, msg)
}

func (c *Call) failStatus(status int, code, msg string) {
	if msg == "" {
		msg = code
	}
	c.Ctx.Response.Header.Del("Cache-Control")
	retryLater(&c.Ctx.Response.Header, status)
	c.json(status, &APIError{Error: code, Message: msg, RequestID: c.RequestID()})
}

// FailErr maps a domain error to its ApiError.
func (c *Call) FailErr(err error) {
	var fe *fieldError
	if code, msg, ok := errcode.From(err); ok {
		if code.Kind == errcode.Internal {
			c.s.log.ErrorContext(c.Context(), "request failed", "request_id", c.RequestID(), "op", c.route.ID, "err", err)
		}
		c.failStatus(kindStatus(code.Kind), code.Code, msg)
		return
	}
	switch {
	case errors.As(err, &fe):
		c.fail(ErrInvalidField, fe.Error())
	case errors.Is(err, catalog.ErrNotFound):
		c.fail(ErrNotFound, err.Error())
	case errors.Is(err, catalog.ErrIdempotencyKeyReused):
		c.fail(ErrIdempotencyKeyReused, "the Idempotency-Key was used for another request")
	case errors.Is(err, catalog.ErrConflict):
		c.fail(ErrConflict, err.Error())
	case isUnavailable(err):
		c.fail(ErrUnavailable, "the service cannot complete the operation now")
	default:
		c.s.log.ErrorContext(c.Context(), "request failed", "request_id", c.RequestID(), "op", c.route.ID, "err", err)
		c.fail(ErrInternal, "internal error")
	}
}

// fieldError names an invalid request field.
type fieldError struct {
	Field string
	Msg   string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Msg }

func Invalid(field, msg string) error { return &fieldError{Field: field, Msg: msg} }

func setRetryAfter(h *fasthttp.ResponseHeader, seconds int64) {
	if seconds < 1 {
		seconds = 1
	}
	h.Set("Retry-After", strconv.FormatInt(seconds, 10))
}

// DefaultRetryAfter is the Retry-After, in seconds, of a 503 whose
// handler knows no better: long enough that a client backs off instead of
// hammering a node that is electing a leader or moving partitions, short
// enough that it barely delays the retry that succeeds.
const DefaultRetryAfter = 1

// retryLater gives a 503 answer its Retry-After: the one the handler set
// (a module that knows how long, such as screening-busy's 2 s), else
// DefaultRetryAfter. Both error writers call it (the ApiError shape,
// failStatus, and the spec's own shape, specError), so every 503 of the
// contract carries the header the contract declares on it.
func retryLater(h *fasthttp.ResponseHeader, status int) {
	if status == 503 && len(h.Peek("Retry-After")) == 0 {
		setRetryAfter(h, DefaultRetryAfter)
	}
}

// isUnavailable reports errors that mean "try again later": no Raft
// leader, a store shutting down, an owner that did not answer.
func isUnavailable(err error) bool {
	return errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, persistence.ErrNotLeader) ||
		errors.Is(err, persistence.ErrClosed) || errors.Is(err, context.DeadlineExceeded)
}

// kindStatus is the one mapping from a module's kind of failure to an HTTP
// status.
func kindStatus(k errcode.Kind) int {
	switch k {
	case errcode.Invalid:
		return 400
	case errcode.Unauthenticated:
		return 401
	case errcode.Forbidden:
		return 403
	case errcode.NotFound:
		return 404
	case errcode.Conflict:
		return 409
	case errcode.TooLarge:
		return 413
	case errcode.Unsupported:
		return 415
	case errcode.RateLimited:
		return 429
	case errcode.Unavailable:
		return 503
	default:
		return 500
	}
}

// WithModuleCodes appends a module's codes to list, skipping codes already
// in it (the module's 503 is the shared service-unavailable).
func WithModuleCodes(list []ErrorCode, mod []*errcode.Code) []ErrorCode {
	out := append([]ErrorCode(nil), list...)
	for _, m := range mod {
		if !slices.ContainsFunc(out, func(e ErrorCode) bool { return e.Code == m.Code }) {
			out = append(out, ModuleCode(m))
		}
	}
	return out
}

// ModuleCode turns a module's sentinel into the contract's ErrorCode, so a
// route can list it among its errors and apiErrors can document it.
func ModuleCode(c *errcode.Code) ErrorCode {
	return ErrorCode{Code: c.Code, Status: kindStatus(c.Kind), Meaning: c.Meaning}
}
