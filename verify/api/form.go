package api

import (
	"bytes"

	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"github.com/trustd/trustd/verify"
)

// Hand-written parsing of /siteverify bodies: the operation runs on every
// protected form post, so it neither reflects nor allocates per field.
// Form and JSON bodies are parsed into byte slices that point into the
// request body or, when a value had to be unescaped, into a scratch
// buffer sized to the body (unescaping never grows a value, so the buffer
// never moves and earlier slices stay valid). JSON is read by the one
// strict scanner of the transport (jsonstrict.Flat).

// svRequest holds the fields of a siteverify request: the secret, which
// the transport authenticates, and the module's request.
type svRequest struct {
	secret []byte
	verify.Request
	// seen marks fields present, to refuse a field sent twice.
	seen uint8
}

// set stores a known field; false means the field was sent twice.
func (q *svRequest) set(name, v []byte) bool {
	var dst *[]byte
	var bit uint8
	switch string(name) {
	case "secret":
		dst, bit = &q.secret, 1
	case "response":
		dst, bit = &q.Response, 2
	case "remoteip":
		dst, bit = &q.RemoteIP, 4
	case "action":
		dst, bit = &q.Action, 8
	case "idempotency_key":
		dst, bit = &q.IdempotencyKey, 16
	default:
		return true // unknown fields are ignored, as the drop-in services do
	}
	if q.seen&bit != 0 {
		return false
	}
	q.seen |= bit
	*dst = bytes.TrimSpace(v)
	return true
}

// parseForm parses an application/x-www-form-urlencoded body.
func parseForm(body []byte, scratch *[]byte, q *svRequest) bool {
	for len(body) > 0 {
		var pair []byte
		if i := bytes.IndexByte(body, '&'); i >= 0 {
			pair, body = body[:i], body[i+1:]
		} else {
			pair, body = body, nil
		}
		if len(pair) == 0 {
			continue
		}
		k, v := pair, []byte(nil)
		if i := bytes.IndexByte(pair, '='); i >= 0 {
			k, v = pair[:i], pair[i+1:]
		}
		var ok bool
		if k, ok = unescapeForm(k, scratch); !ok {
			return false
		}
		if v, ok = unescapeForm(v, scratch); !ok {
			return false
		}
		if !q.set(k, v) {
			return false
		}
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescapeForm decodes %XX and '+'; a value without either is returned as is.
func unescapeForm(s []byte, scratch *[]byte) ([]byte, bool) {
	if bytes.IndexByte(s, '%') < 0 && bytes.IndexByte(s, '+') < 0 {
		return s, true
	}
	start := len(*scratch)
	out := *scratch
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			out = append(out, ' ')
		case '%':
			if i+2 >= len(s) {
				return nil, false
			}
			h, ok1 := unhex(s[i+1])
			l, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return nil, false
			}
			out = append(out, h<<4|l)
			i += 2
		default:
			out = append(out, c)
		}
	}
	*scratch = out
	return out[start:len(out):len(out)], true
}

// parseJSONBody parses a JSON object whose known members are strings (or
// null, meaning absent) with the transport's one strict scanner. Unknown
// members of any type are skipped; the whole body must still be one valid
// JSON value.
func parseJSONBody(obj *jsonstrict.Flat, body []byte, q *svRequest) bool {
	if obj.ScanKnown(body, svKnownField) != nil {
		return false
	}
	for i := range obj.Len() {
		name, kind, val := obj.Member(i)
		if kind != jsonstrict.KindString || !q.set(name, val) {
			return false
		}
	}
	return true
}

// svKnownField reports the members a siteverify body defines.
func svKnownField(name []byte) bool {
	switch string(name) {
	case "secret", "response", "remoteip", "action", "idempotency_key":
		return true
	}
	return false
}
