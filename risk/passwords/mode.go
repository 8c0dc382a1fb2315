package passwords

import (
	"crypto/sha1"
	"encoding/binary"
	"unicode/utf16"
)

// Mode is the hash function a corpus holds.
type Mode uint8

// The hash modes of the Pwned Passwords corpus.
const (
	SHA1 Mode = 1 // SHA-1 of the UTF-8 password, 40 hex digits
	NTLM Mode = 2 // MD4 of the UTF-16LE password, 32 hex digits
)

// Modes lists every mode, in file order.
var Modes = []Mode{SHA1, NTLM}

// ParseMode reads a mode name as the HIBP API spells it ("sha1", "ntlm");
// the empty string is sha1, HIBP's default.
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "", "sha1":
		return SHA1, true
	case "ntlm":
		return NTLM, true
	}
	return 0, false
}

func (m Mode) String() string {
	switch m {
	case SHA1:
		return "sha1"
	case NTLM:
		return "ntlm"
	}
	return "unknown"
}

func (m Mode) valid() bool { return m == SHA1 || m == NTLM }

// HashBytes is the length of a full hash: 20 for SHA-1, 16 for NTLM.
func (m Mode) HashBytes() int {
	if m == NTLM {
		return 16
	}
	return 20
}

// HexLen is the number of hex digits of a full hash (40 or 32).
func (m Mode) HexLen() int { return 2 * m.HashBytes() }

// SuffixLen is the number of hex digits after the 5-digit prefix (35 or 27).
func (m Mode) SuffixLen() int { return m.HexLen() - PrefixLen }

// recordSize is the width of one stored record: the hash minus its first
// two bytes (the high nibble of the third byte repeats the prefix and is
// checked on every read) plus a 32-bit count.
func (m Mode) recordSize() int { return m.HashBytes() - 2 + 4 }

// FileName is the corpus file of this mode inside a passwords directory.
func (m Mode) FileName() string { return m.String() + ".pwd" }

// Hash returns the mode's hash of password: SHA-1 of its UTF-8 bytes, or
// NTLM (MD4 of its UTF-16LE code units) — what the HIBP corpus holds.
func (m Mode) Hash(password string) Hash {
	var h Hash
	if m == NTLM {
		units := utf16.Encode([]rune(password))
		b := make([]byte, 2*len(units))
		for i, u := range units {
			binary.LittleEndian.PutUint16(b[2*i:], u)
		}
		sum := md4Sum(b)
		copy(h[:], sum[:])
		return h
	}
	sum := sha1.Sum([]byte(password))
	copy(h[:], sum[:])
	return h
}

// Hash holds a hash of either mode, left-aligned (NTLM uses 16 bytes).
type Hash [20]byte

// Prefix is the hash's first 20 bits, the range it falls in.
func (h Hash) Prefix() uint32 { return uint32(h[0])<<12 | uint32(h[1])<<4 | uint32(h[2])>>4 }

const upperHex = "0123456789ABCDEF"

// Hex is the hash in uppercase hex, as the corpus spells it.
func (h Hash) Hex(m Mode) string {
	b := make([]byte, m.HexLen())
	for i := 0; i < m.HashBytes(); i++ {
		b[2*i], b[2*i+1] = upperHex[h[i]>>4], upperHex[h[i]&0xf]
	}
	return string(b)
}

// AppendSuffix appends the hash's uppercase hex digits after the prefix.
func (h Hash) AppendSuffix(dst []byte, m Mode) []byte {
	dst = append(dst, upperHex[h[2]&0xf])
	for i := 3; i < m.HashBytes(); i++ {
		dst = append(dst, upperHex[h[i]>>4], upperHex[h[i]&0xf])
	}
	return dst
}

// PrefixLen is the length of a range prefix in hex digits.
const PrefixLen = 5

// Buckets is the number of distinct prefixes, 16^5.
const Buckets = 1 << 20

// ParsePrefix reads a 5-digit hex prefix, either case (HIBP accepts both).
func ParsePrefix(s string) (uint32, bool) {
	if len(s) != PrefixLen {
		return 0, false
	}
	var p uint32
	for i := 0; i < PrefixLen; i++ {
		v, ok := hexVal(s[i])
		if !ok {
			return 0, false
		}
		p = p<<4 | uint32(v)
	}
	return p, true
}

// FormatPrefix spells a prefix as 5 uppercase hex digits.
func FormatPrefix(p uint32) string {
	var b [PrefixLen]byte
	for i := PrefixLen - 1; i >= 0; i-- {
		b[i] = upperHex[p&0xf]
		p >>= 4
	}
	return string(b[:])
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// parseHexInto decodes hex digits s into dst starting at nibble offset
// start; false when a digit is not hex.
func parseHexInto(dst *Hash, start int, s []byte) bool {
	for i, c := range s {
		v, ok := hexVal(c)
		if !ok {
			return false
		}
		n := start + i
		if n%2 == 0 {
			dst[n/2] = dst[n/2]&0x0f | v<<4
		} else {
			dst[n/2] = dst[n/2]&0xf0 | v
		}
	}
	return true
}
