package token

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"unsafe"
)

// Errors of Decode. Callers treat all of them alike (the value is not one
// this service issued) and only log the distinction.
var (
	// ErrMalformed is a value that does not parse: wrong prefix, bad
	// base64, truncated or over-long payload, unknown version.
	ErrMalformed = errors.New("token: malformed")
	// ErrUnknownKey is a well-formed value signed by a key this cluster
	// does not know or has retired.
	ErrUnknownKey = errors.New("token: unknown signing key")
	// ErrSignature is a value whose MAC does not match.
	ErrSignature = errors.New("token: bad signature")
)

// maxText bounds the text of any value, so garbage costs little to refuse.
const maxText = 2048

// b64 is strict: one text per payload, so no two strings carry one claim.
var b64 = base64.RawURLEncoding.Strict()

// writer builds a canonical payload: fixed-width integers and bytes,
// length-prefixed strings.
type writer struct{ b []byte }

func (w *writer) u8(v byte)        { w.b = append(w.b, v) }
func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }

// uvarintWidth writes v as a uvarint of exactly width bytes, padding it
// with continuation bytes (a non-minimal uvarint that reader.uvarint and
// encoding/binary read as v). A v wider than 7*width bits is written
// minimally (longer) rather than cut.
func (w *writer) uvarintWidth(v uint64, width int) {
	if v>>(7*width) != 0 {
		w.uvarint(v)
		return
	}
	for i := 0; i < width-1; i++ {
		w.b = append(w.b, byte(v)|0x80)
		v >>= 7
	}
	w.b = append(w.b, byte(v))
}
func (w *writer) fixed(p []byte) { w.b = append(w.b, p...) }
func (w *writer) str(s string)   { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) flag(v bool)    { w.u8(b2u(v)) }
func b2u(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// reader walks a payload held as one string, so every string field is a
// substring of it and decoding allocates once.
type reader struct {
	s   string
	bad bool
}

func (r *reader) u8() byte {
	if r.bad || len(r.s) < 1 {
		r.bad = true
		return 0
	}
	v := r.s[0]
	r.s = r.s[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			v |= uint64(c) << (7 * i)
			r.s = r.s[i+1:]
			return v
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	r.bad = true
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *reader) fixed(dst []byte) {
	if r.bad || len(r.s) < len(dst) {
		r.bad = true
		return
	}
	copy(dst, r.s[:len(dst)])
	r.s = r.s[len(dst):]
}

func (r *reader) str(max int) string {
	n := r.uvarint()
	if r.bad || n > uint64(max) || n > uint64(len(r.s)) {
		r.bad = true
		return ""
	}
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

func (r *reader) flag() bool {
	v := r.u8()
	if v > 1 {
		r.bad = true
	}
	return v == 1
}

// done reports whether the payload parsed exactly, with nothing left over.
func (r *reader) done() bool { return !r.bad && len(r.s) == 0 }

// seal returns prefix + base64url(payload ‖ MAC(prefix ‖ payload)).
func seal(k *Key, prefix string, payload []byte) string {
	buf := make([]byte, 0, len(payload)+MACSize)
	buf = append(buf, payload...)
	buf = k.sum2(buf, prefix, payload)
	out := make([]byte, len(prefix)+b64.EncodedLen(len(buf)))
	copy(out, prefix)
	b64.Encode(out[len(prefix):], buf)
	return string(out)
}

// open checks the prefix and MAC of text and returns a reader over the
// payload positioned after the key id, with the key id itself. scratch
// may be used as the decode buffer.
func open(text, prefix string, keys Lookup, scratch []byte) (reader, string, error) {
	return openMax(text, prefix, keys, scratch, maxText)
}

// openMax is open for a format whose text may be up to limit long.
func openMax(text, prefix string, keys Lookup, scratch []byte, limit int) (reader, string, error) {
	if len(text) > limit || !strings.HasPrefix(text, prefix) {
		return reader{}, "", ErrMalformed
	}
	enc := text[len(prefix):]
	// The decoder skips CR and LF even in strict mode; a token has one
	// text, so they are refused here.
	if strings.ContainsAny(enc, "\r\n") {
		return reader{}, "", ErrMalformed
	}
	n := b64.DecodedLen(len(enc))
	if n < MACSize+2 {
		return reader{}, "", ErrMalformed
	}
	if cap(scratch) < n {
		scratch = make([]byte, n)
	}
	raw := scratch[:n]
	// Decode only reads src, so viewing the string's bytes is safe and
	// saves a copy of every token on the hot path.
	m, err := b64.Decode(raw, unsafe.Slice(unsafe.StringData(enc), len(enc)))
	if err != nil || m < MACSize+2 {
		return reader{}, "", ErrMalformed
	}
	raw = raw[:m]
	payload, mac := raw[:m-MACSize], raw[m-MACSize:]
	// The payload is copied into one string: every field is a substring.
	r := reader{s: string(payload)}
	kid := r.str(32)
	if r.bad {
		return reader{}, "", ErrMalformed
	}
	k := keys(kid)
	if k == nil {
		return reader{}, "", ErrUnknownKey
	}
	if !k.verify2(prefix, payload, mac) {
		return reader{}, "", ErrSignature
	}
	return r, kid, nil
}
