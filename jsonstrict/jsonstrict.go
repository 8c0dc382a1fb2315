// Package jsonstrict holds the one strict JSON decoding policy of trustd,
// shared by http/ (every request body) and product modules that decode
// bodies themselves (agents/: a signed body is decoded only after its
// signature is verified, by the module, so what was signed is what runs).
package jsonstrict

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Options refuse unknown members, duplicate names, names that differ only
// in case, invalid UTF-8 and trailing data, so a body means exactly one
// thing.
var Options = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// Unmarshal decodes body into v under Options.
func Unmarshal(body []byte, v any) error { return json.Unmarshal(body, v, Options) }
