// Package errcode is the domain error of every product module: a stable,
// documented code string and the kind of failure. Modules return these and
// never know HTTP; platform/http/ maps each Kind to a status in one table
// (platform/http/errors.go), and lists every module's codes in the contract.
package errcode

import (
	"errors"
	"fmt"
)

// Kind classifies a failure the way a caller must react to it. platform/http/ owns
// the one mapping from Kind to status.
type Kind uint8

// The kinds of failure.
const (
	Invalid         Kind = iota + 1 // the request is wrong; do not retry it as is (400)
	Unauthenticated                 // missing or invalid credential or capability (401)
	Forbidden                       // the credential may not do this (403)
	NotFound                        // the named thing does not exist for this caller (404)
	Conflict                        // refused by current state: used, expired, illegal transition (409)
	TooLarge                        // a body or a field exceeds its limit (413)
	Unsupported                     // a media type or format the operation does not accept (415)
	RateLimited                     // over a limit; honour Retry-After (429)
	Unavailable                     // the service cannot complete it now; back off and retry (503)
	Internal                        // a bug; logged with the request id (500)
)

// Code is a sentinel domain error. Declare one per failure as a package
// variable with New; compare with errors.Is.
type Code struct {
	Code    string // stable, documented, kebab-case
	Kind    Kind
	Meaning string // the contract's description of the code
}

// New declares a code.
func New(code string, kind Kind, meaning string) *Code {
	return &Code{Code: code, Kind: kind, Meaning: meaning}
}

func (c *Code) Error() string { return c.Code }

// With returns an error that matches c under errors.Is and carries a
// message for the caller (never secrets or personal data).
func (c *Code) With(format string, args ...any) error {
	return &Detailed{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Detail is c with a fixed message, as a sentinel of its own: a module
// that answers a shared code (ErrUnavailable, ErrNotFound, …) in its own
// words declares it with Detail instead of declaring the code again.
// errors.Is matches both the sentinel and c.
func (c *Code) Detail(message string) *Detailed {
	return &Detailed{Code: c, Message: message}
}

// Detailed is a Code with a message for this occurrence.
type Detailed struct {
	Code    *Code
	Message string
	// parent is the Detailed sentinel this one refines (see With), so
	// errors.Is matches it too.
	parent *Detailed
}

func (d *Detailed) Error() string { return d.Code.Code + ": " + d.Message }

// Unwrap lets errors.Is(err, code) match, and errors.Is(err, sentinel)
// for an error made by a Detailed sentinel's With.
func (d *Detailed) Unwrap() error {
	if d.parent != nil {
		return d.parent
	}
	return d.Code
}

// With returns an error with another message that matches d (and its code)
// under errors.Is.
func (d *Detailed) With(format string, args ...any) error {
	return &Detailed{Code: d.Code, Message: fmt.Sprintf(format, args...), parent: d}
}

// From finds the domain error in err's chain and the message to show: the
// occurrence's detail when there is one, else the code's meaning.
func From(err error) (code *Code, message string, ok bool) {
	var d *Detailed
	if errors.As(err, &d) {
		return d.Code, d.Message, true
	}
	var c *Code
	if errors.As(err, &c) {
		return c, c.Meaning, true
	}
	return nil, "", false
}

// ErrInvalidField is a request field that is missing, of the wrong type or
// invalid; its message names the field. Every module uses this one code.
var ErrInvalidField = New("invalid-field", Invalid, "A field is missing, has the wrong type or an invalid value; message names it.")

// Field returns ErrInvalidField for the named field with why it is wrong.
func Field(name, why string) error { return ErrInvalidField.With("%s: %s", name, why) }

// ErrInvalidOrigin is a browser request whose Origin is missing,
// malformed or not one of the site's hostnames: the CORS rule of the
// widget's endpoints (verify) and of the breached-password ranges
// (risk), one code for both.
var ErrInvalidOrigin = New("invalid-origin", Forbidden, "The Origin header is missing, malformed, or its hostname is not on the site's allow-list (exact match, no suffix matching).")

// ErrInvalidAppIdentity is a mobile operation whose declared platform or
// application id is not the mobile secret's registration; every mobile
// operation of every area answers it.
var ErrInvalidAppIdentity = New("invalid-app-identity", Forbidden, "The mobile platform or application identifier does not match the registration of the mobile secret.")
