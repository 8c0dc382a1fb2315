package jsonstrict

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// Flat is the service's one hand-written strict JSON scanner: an
// allocation-free reader for the body shape of the hot operations (the
// rate-limit check, siteverify), a single JSON object whose members are
// scalars (string, number, boolean or null). It keeps the strictness of
// DecodeStrict (invalid UTF-8, lone surrogates, trailing data and malformed
// syntax are refused here; the caller refuses unknown and duplicate names,
// which it can do with a bitmask because it knows its fields) without
// reflection. scanKnown is the variant for bodies whose unknown members
// may hold any JSON value (the siteverify dialects ignore them). Member
// names and string values are slices of the body, or of scratch when they
// held escapes; they are valid until the next scan.
type Flat struct {
	members [maxFlatMembers]flatMember
	n       int
	scratch []byte
}

// maxFlatMembers bounds the members of one body. A body with more has
// unknown or repeated names, so refusing it early loses nothing.
const maxFlatMembers = 24

// Kind is the JSON type of a member's value.
type Kind uint8

const (
	KindString Kind = iota + 1
	KindNumber
	KindBool
	KindNull
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindBool:
		return "boolean"
	case KindNull:
		return "null"
	}
	return "invalid"
}

type flatMember struct {
	name []byte
	kind Kind
	val  []byte // string contents, number literal, "true"/"false"
}

// errFlatSyntax is any malformed body; errFlatShape a body that is valid
// JSON but not a flat object (an array, a nested value).
var (
	errFlatSyntax = errors.New("the body is not valid JSON")
	errFlatShape  = errors.New("the body must be one JSON object of scalar members")
	errFlatUTF8   = errors.New("the body is not valid UTF-8")
	errFlatSize   = errors.New("the body has too many members")
)

// maxSkipDepth bounds the nesting of an ignored member's value.
const maxSkipDepth = 32

// Scan parses body. On success its members are Member(0) … Member(Len()-1).
func (o *Flat) Scan(body []byte) error { return o.ScanKnown(body, nil) }

// scanKnown is scan where, when known is not nil, only members whose name
// it knows and whose value is not null are kept: the others are checked
// (any JSON value, nested at most maxSkipDepth deep) and dropped.
func (o *Flat) ScanKnown(body []byte, known func(name []byte) bool) error {
	o.n = 0
	if !utf8.Valid(body) {
		return errFlatUTF8
	}
	// Unescaping never makes a string longer, so scratch never grows
	// during the scan and earlier slices of it stay valid.
	if cap(o.scratch) < len(body) {
		o.scratch = make([]byte, 0, len(body))
	}
	o.scratch = o.scratch[:0]
	i := skipSpace(body, 0)
	if i >= len(body) {
		return errFlatSyntax
	}
	if body[i] != '{' {
		if body[i] == '[' || body[i] == '"' || body[i] == 't' || body[i] == 'f' || body[i] == 'n' || body[i] == '-' || isDigit(body[i]) {
			return errFlatShape
		}
		return errFlatSyntax
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return o.end(body, i+1)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return errFlatSyntax
		}
		name, next, err := o.str(body, i)
		if err != nil {
			return err
		}
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return errFlatSyntax
		}
		i = skipSpace(body, i+1)
		if i >= len(body) {
			return errFlatSyntax
		}
		m := flatMember{name: name}
		if known != nil && !known(name) {
			if i, err = o.skip(body, i, 0); err != nil {
				return err
			}
			goto next
		}
		switch c := body[i]; {
		case c == '"':
			m.kind = KindString
			m.val, i, err = o.str(body, i)
		case c == '-' || isDigit(c):
			m.kind = KindNumber
			var end int
			if end, err = number(body, i); err == nil {
				m.val, i = body[i:end], end
			}
		case c == 't':
			m.kind, m.val, i, err = KindBool, body[i:min(i+4, len(body))], i+4, literal(body, i, "true")
		case c == 'f':
			m.kind, m.val, i, err = KindBool, body[i:min(i+5, len(body))], i+5, literal(body, i, "false")
		case c == 'n':
			m.kind, i, err = KindNull, i+4, literal(body, i, "null")
		case c == '{' || c == '[':
			return errFlatShape
		default:
			return errFlatSyntax
		}
		if err != nil {
			return err
		}
		if known != nil && m.kind == KindNull {
			goto next
		}
		if o.n == maxFlatMembers {
			return errFlatSize
		}
		o.members[o.n] = m
		o.n++
	next:
		i = skipSpace(body, i)
		if i >= len(body) {
			return errFlatSyntax
		}
		if body[i] == '}' {
			return o.end(body, i+1)
		}
		if body[i] != ',' {
			return errFlatSyntax
		}
		i = skipSpace(body, i+1)
	}
}

// skip passes over the JSON value starting at body[i], returning the index
// after it.
func (o *Flat) skip(body []byte, i, depth int) (int, error) {
	if depth > maxSkipDepth || i >= len(body) {
		return 0, errFlatSyntax
	}
	switch c := body[i]; {
	case c == '"':
		mark := len(o.scratch)
		_, next, err := o.str(body, i)
		o.scratch = o.scratch[:mark]
		return next, err
	case c == '-' || isDigit(c):
		return number(body, i)
	case c == 't':
		return i + 4, literal(body, i, "true")
	case c == 'f':
		return i + 5, literal(body, i, "false")
	case c == 'n':
		return i + 4, literal(body, i, "null")
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(body, i+1)
		if i < len(body) && body[i] == closer {
			return i + 1, nil
		}
		for {
			if c == '{' {
				if i >= len(body) || body[i] != '"' {
					return 0, errFlatSyntax
				}
				mark := len(o.scratch)
				_, next, err := o.str(body, i)
				o.scratch = o.scratch[:mark]
				if err != nil {
					return 0, err
				}
				i = skipSpace(body, next)
				if i >= len(body) || body[i] != ':' {
					return 0, errFlatSyntax
				}
				i = skipSpace(body, i+1)
			}
			var err error
			if i, err = o.skip(body, i, depth+1); err != nil {
				return 0, err
			}
			i = skipSpace(body, i)
			if i >= len(body) {
				return 0, errFlatSyntax
			}
			if body[i] == closer {
				return i + 1, nil
			}
			if body[i] != ',' {
				return 0, errFlatSyntax
			}
			i = skipSpace(body, i+1)
		}
	}
	return 0, errFlatSyntax
}

// end refuses anything but whitespace after the object.
func (o *Flat) end(body []byte, i int) error {
	if skipSpace(body, i) != len(body) {
		return errFlatSyntax
	}
	return nil
}

// str reads the string starting at body[i] == '"', returning its contents
// and the index after the closing quote.
func (o *Flat) str(body []byte, i int) ([]byte, int, error) {
	start := i + 1
	j := start
	for j < len(body) {
		// Plain bytes, the bulk of any string, skip by table.
		for j < len(body) && strPlain[body[j]] {
			j++
		}
		if j == len(body) {
			break
		}
		c := body[j]
		switch {
		case c == '"':
			return body[start:j], j + 1, nil
		case c == '\\':
			return o.unescape(body, start, j)
		case c < 0x20:
			return nil, 0, errFlatSyntax
		}
		j++
	}
	return nil, 0, errFlatSyntax
}

// strPlain marks the bytes that neither end a string nor start an escape
// and are allowed unescaped in one.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescape continues str for a string with escapes, building it in scratch.
func (o *Flat) unescape(body []byte, start, j int) ([]byte, int, error) {
	from := len(o.scratch)
	o.scratch = append(o.scratch, body[start:j]...)
	for j < len(body) {
		c := body[j]
		switch {
		case c == '"':
			return o.scratch[from:], j + 1, nil
		case c < 0x20:
			return nil, 0, errFlatSyntax
		case c != '\\':
			o.scratch = append(o.scratch, c)
			j++
			continue
		}
		if j+1 >= len(body) {
			return nil, 0, errFlatSyntax
		}
		switch e := body[j+1]; e {
		case '"', '\\', '/':
			o.scratch = append(o.scratch, e)
		case 'b':
			o.scratch = append(o.scratch, '\b')
		case 'f':
			o.scratch = append(o.scratch, '\f')
		case 'n':
			o.scratch = append(o.scratch, '\n')
		case 'r':
			o.scratch = append(o.scratch, '\r')
		case 't':
			o.scratch = append(o.scratch, '\t')
		case 'u':
			r, ok := hex4(body, j+2)
			if !ok {
				return nil, 0, errFlatSyntax
			}
			j += 6
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one is
				// a character; a lone half is not valid UTF-8.
				if j+1 >= len(body) || body[j] != '\\' || body[j+1] != 'u' {
					return nil, 0, errFlatUTF8
				}
				lo, ok := hex4(body, j+2)
				r = utf16.DecodeRune(r, lo)
				if !ok || r == utf8.RuneError {
					return nil, 0, errFlatUTF8
				}
				j += 6
			}
			o.scratch = utf8.AppendRune(o.scratch, r)
			continue
		default:
			return nil, 0, errFlatSyntax
		}
		j += 2
	}
	return nil, 0, errFlatSyntax
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number returns the end of the RFC 8259 number starting at i.
func number(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, errFlatSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, errFlatSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, errFlatSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func literal(b []byte, i int, lit string) error {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return errFlatSyntax
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Uint parses a number literal as a non-negative integer of at most
// 18 digits; signs, fractions and exponents are refused rather than
// rounded.
func Uint(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Len is the number of members of the last scan.
func (o *Flat) Len() int { return o.n }

// Member is the i-th member of the last scan: its name and value are views
// of the body (or of the scanner's scratch), valid until the next scan.
func (o *Flat) Member(i int) (name []byte, kind Kind, val []byte) {
	m := &o.members[i]
	return m.name, m.kind, m.val
}
