// Package jsonstrict holds the one strict JSON decoding policy of trustd,
// shared by platform/http/ (every request body) and product modules that decode
// bodies themselves (agents/: a signed body is decoded only after its
// signature is verified, by the module, so what was signed is what runs).
package jsonstrict

import (
	"bytes"
	"strings"

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

// FindName returns the first object member name in body for which match
// (given the name in lower case) is true: only the top-level object's
// names, or names at any depth when deep. A malformed body ends the search
// with no match; the strict decoder reports it.
func FindName(body []byte, deep bool, match func(lower string) bool) (string, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		depth := dec.StackDepth()
		kind, n := dec.StackIndex(depth)
		isName := kind == '{' && n%2 == 0 && (deep || depth == 1)
		tok, err := dec.ReadToken()
		if err != nil {
			return "", false
		}
		if isName && tok.Kind() == '"' {
			if name := tok.String(); match(strings.ToLower(name)) {
				return name, true
			}
		}
		if dec.StackDepth() == 0 {
			return "", false // the first value is done; trailing data is the decoder's to refuse
		}
	}
}
