package http

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/trustd/trustd/verify"
)

// Hand-written parsing of /siteverify bodies: the operation runs on every
// protected form post, so it neither reflects nor allocates per field.
// Form and JSON bodies are parsed into byte slices that point into the
// request body or, when a value had to be unescaped, into a scratch
// buffer sized to the body (unescaping never grows a value, so the buffer
// never moves and earlier slices stay valid).

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
// null, meaning absent). Unknown members of any type are skipped; the whole
// body must still be one valid JSON value.
func parseJSONBody(body []byte, scratch *[]byte, q *svRequest) bool {
	p := jsonScan{b: body, scratch: scratch}
	p.ws()
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		p.ws()
		name, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		switch string(name) {
		case "secret", "response", "remoteip", "action", "idempotency_key":
			if p.lit("null") {
				break
			}
			v, ok := p.str()
			if !ok || !q.set(name, v) {
				return false
			}
		default:
			if !p.skip(0) {
				return false
			}
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return p.end()
		}
		return false
	}
}

type jsonScan struct {
	b       []byte
	i       int
	scratch *[]byte
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScan) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonScan) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *jsonScan) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string; escapes are decoded into the scratch buffer.
func (p *jsonScan) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			v := p.b[start:p.i]
			p.i++
			return v, utf8.Valid(v)
		case c == '\\':
			return p.strEscaped(start)
		case c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *jsonScan) strEscaped(start int) ([]byte, bool) {
	out := append(*p.scratch, p.b[start:p.i]...)
	from := len(*p.scratch)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			*p.scratch = out
			v := out[from:len(out):len(out)]
			return v, utf8.Valid(v)
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return nil, false
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, false
			}
			if r >= 0xd800 && r < 0xdc00 {
				if !p.lit(`\u`) {
					return nil, false
				}
				lo, ok := p.hex4()
				if !ok || lo < 0xdc00 || lo >= 0xe000 {
					return nil, false
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			} else if r >= 0xdc00 && r < 0xe000 {
				return nil, false
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (p *jsonScan) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for j := 0; j < 4; j++ {
		h, ok := unhex(p.b[p.i+j])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	p.i += 4
	return r, true
}

// skip passes over one JSON value of any type, to a bounded depth.
func (p *jsonScan) skip(depth int) bool {
	if depth > 32 || p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		mark := len(*p.scratch)
		_, ok := p.str()
		*p.scratch = (*p.scratch)[:mark]
		return ok
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.i++
		p.ws()
		if p.eat(closer) {
			return true
		}
		for {
			p.ws()
			if c == '{' {
				mark := len(*p.scratch)
				_, ok := p.str()
				*p.scratch = (*p.scratch)[:mark]
				if !ok {
					return false
				}
				p.ws()
				if !p.eat(':') {
					return false
				}
				p.ws()
			}
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat(closer)
		}
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return false
}

// number passes over a JSON number (RFC 8259 grammar).
func (p *jsonScan) number() bool {
	p.eat('-')
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.eat('0') {
		// no further integer digits allowed
	} else if digits() == 0 {
		return false
	}
	if p.eat('.') && digits() == 0 {
		return false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// bstr views b as a string without copying; the caller must not keep it
// past the request.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
