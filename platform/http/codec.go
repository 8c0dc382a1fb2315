package http

import (
	"bytes"
	"errors"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trustd/trustd/platform/lib/jsonstrict"
)

// strict are the decoding options of every request body (see jsonstrict).
var strict = jsonstrict.Options

// decodeError is a body that could not be decoded, with its ApiError code.
type decodeError struct {
	Code ErrorCode
	Msg  string
}

func (e *decodeError) Error() string { return e.Code.Code + ": " + e.Msg }

// DecodeStrict decodes body into v (a pointer to a struct) under the strict
// options. It never panics, whatever the input.
func DecodeStrict(body []byte, v any) error {
	switch trimmed := bytes.TrimSpace(body); {
	case len(trimmed) == 0:
		return &decodeError{ErrMalformedJSON, "the body is empty; a JSON object is required"}
	case string(trimmed) == "null":
		// The decoder leaves v untouched for null, which would make a
		// PATCH or PUT an empty change instead of an error.
		return &decodeError{ErrMalformedJSON, "the body is null; a JSON object is required"}
	}
	err := json.Unmarshal(body, v, strict)
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		if errors.Is(err, json.ErrUnknownName) {
			return &decodeError{ErrUnknownField, "unknown field " + strings.TrimPrefix(string(se.JSONPointer), "/")}
		}
		if se.JSONPointer != "" && se.Err == nil || se.JSONKind != 0 {
			field := strings.TrimPrefix(string(se.JSONPointer), "/")
			if field == "" {
				return &decodeError{ErrMalformedJSON, "the body must be a JSON object"}
			}
			return &decodeError{ErrInvalidField, field + ": wrong type (" + se.JSONKind.String() + ")"}
		}
		if se.Err != nil {
			var fe *fieldError
			if errors.As(se.Err, &fe) {
				return fe
			}
		}
		return &decodeError{ErrInvalidField, se.Error()}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return &decodeError{ErrMalformedJSON, syn.Error()}
	}
	return &decodeError{ErrMalformedJSON, err.Error()}
}

// IsJSON reports whether the request's Content-Type is JSON.
func (c *Call) IsJSON() bool {
	ct := c.Ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	return bytes.EqualFold(ct, []byte("application/json"))
}

// Decode reads the JSON body into v, answering the error itself and
// returning false when the body is unacceptable.
func (c *Call) Decode(v any) bool {
	if !c.IsJSON() {
		c.fail(ErrUnsupportedType, "Content-Type must be application/json")
		return false
	}
	if err := DecodeStrict(c.Ctx.Request.Body(), v); err != nil {
		c.failDecode(err)
		return false
	}
	return true
}

func (c *Call) failDecode(err error) {
	var de *decodeError
	var fe *fieldError
	switch {
	case errors.As(err, &de):
		c.fail(de.Code, de.Msg)
	case errors.As(err, &fe):
		c.fail(ErrInvalidField, fe.Error())
	default:
		c.fail(ErrMalformedJSON, err.Error())
	}
}
