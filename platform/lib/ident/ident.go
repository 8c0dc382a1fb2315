// Package ident holds the one rule for caller-supplied identifiers that
// the service hashes and keys state by: subject_id, device_id, scope_key
// and the like, in every module. A value that one operation accepts is
// accepted by all of them. It never allocates.
package ident

import (
	"net/netip"
	"unicode/utf8"
)

// MaxLen is the longest identifier in bytes.
const MaxLen = 256

// Valid reports whether v is an identifier: 1 to MaxLen bytes of valid
// UTF-8 with no control characters (C0, DEL, C1). Other Unicode is fine:
// subject ids are often e-mail addresses or names in any script.
func Valid[T ~string | ~[]byte](v T) bool {
	if len(v) == 0 || len(v) > MaxLen {
		return false
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		var r rune
		var size int
		switch s := any(v).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(s[i:])
		case []byte:
			r, size = utf8.DecodeRune(s[i:])
		default:
			r, size = utf8.DecodeRuneInString(string(v[i:]))
		}
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		if r >= 0x80 && r <= 0x9f {
			return false
		}
		i += size
	}
	return true
}

// Rule describes Valid for error messages and the contract.
const Rule = "1 to 256 bytes of UTF-8 without control characters"

// UUID reports whether s is a UUID in the canonical 8-4-4-4-12 hexadecimal
// form (either case): the form of every id the service issues.
func UUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// MaxRouteLen is the longest route in bytes.
const MaxRouteLen = 2048

// Route reports whether v is a route: a URL path only, starting with '/',
// with no query or fragment and no spaces or control characters (spec 8).
func Route[T ~string | ~[]byte](v T) bool {
	if len(v) == 0 || len(v) > MaxRouteLen || v[0] != '/' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= 0x20 || c == 0x7f || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

// Hostname reports whether h is a site hostname as the catalog stores
// them: a lowercase DNS name (labels of 1 to 63 of a-z 0-9 '-', not
// starting or ending with '-'), localhost, or an IP literal; at most 253
// bytes. It is the rule of a site's allow-list and of every hostname a
// token or clearance binds.
func Hostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	label := 0
	for i := 0; i <= len(h); i++ {
		if i == len(h) || h[i] == '.' {
			if label == 0 || h[i-1] == '-' || h[i-label] == '-' || label > 63 {
				return false
			}
			label = 0
			continue
		}
		ch := h[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
		label++
	}
	return true
}

// MaxActionLen is the longest action name in bytes.
const MaxActionLen = 64

// Action reports whether s is an action name: 1 to MaxActionLen of
// A-Z a-z 0-9 _ - . / (spec 4.9). Trust decisions, journeys and identity
// sessions bind actions by this one rule, so an action one accepts is
// accepted by the others.
func Action(s string) bool {
	if len(s) == 0 || len(s) > MaxActionLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// Printable reports whether s is printable ASCII (0x20 to 0x7e) only, as
// operation references and consent versions are; "" is printable and the
// caller bounds the length.
func Printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// EqualFoldASCII reports whether a and b are equal when only ASCII letters
// are folded. strings.EqualFold would also fold Unicode (the Kelvin sign
// equals 'k'), which would let a value that fails validation match one
// that passes: hostnames, actions and methods compare by this one rule.
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
