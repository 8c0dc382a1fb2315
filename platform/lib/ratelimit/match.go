package ratelimit

import "github.com/trustd/trustd/platform/lib/ident"

// Limits of the names a policy matches on.
const (
	MaxActionLen = 128
	MaxMethodLen = 32
)

// ValidAction reports whether action is a well-formed protected action name:
// 1 to MaxActionLen characters of letters, digits, '_', '.', ':' and '-',
// where '.' separates non-empty segments ("otp.send", not ".otp" or
// "otp..send"). It is checked once per request, so MatchAction can assume
// it.
func ValidAction(action string) bool {
	if len(action) == 0 || len(action) > MaxActionLen {
		return false
	}
	prev := byte('.') // a leading '.' is an empty first segment
	for i := 0; i < len(action); i++ {
		c := action[i]
		if !actionByte(c) || (c == '.' && prev == '.') {
			return false
		}
		prev = c
	}
	return prev != '.'
}

// ValidPattern reports whether p is an action pattern a policy may hold:
// "*", a valid action, or a valid action followed by ".*".
func ValidPattern(p string) bool {
	if p == "*" {
		return true
	}
	if prefix, ok := wildcardPrefix(p); ok {
		return ValidAction(prefix[:len(prefix)-1])
	}
	return ValidAction(p)
}

// MatchAction reports whether pattern covers action. "*" covers every
// action; "payment.*" covers every action below payment ("payment.card",
// "payment.card.refund") but neither "payment" itself nor "paymentx";
// anything else must equal the action. Letters compare case-insensitively,
// as ValidAction admits both cases; callers that key state by action should
// lower-case it first. Invalid input simply does not match.
func MatchAction(pattern, action string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := wildcardPrefix(pattern); ok {
		return len(action) > len(prefix) && ident.EqualFoldASCII(action[:len(prefix)], prefix)
	}
	return ident.EqualFoldASCII(pattern, action)
}

// wildcardPrefix returns "payment." for "payment.*".
func wildcardPrefix(p string) (string, bool) {
	n := len(p)
	if n < 3 || p[n-2] != '.' || p[n-1] != '*' {
		return "", false
	}
	return p[:n-1], true
}

// ValidMethod reports whether m is a plausible HTTP method: 1 to
// MaxMethodLen letters, digits, '-' or '_'. "*" is a pattern, not a method.
func ValidMethod(m string) bool {
	if len(m) == 0 || len(m) > MaxMethodLen {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(isAlnum(c) || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ValidMethodPattern reports whether p is "*" or a valid method.
func ValidMethodPattern(p string) bool {
	return p == "*" || ValidMethod(p)
}

// MatchMethod reports whether pattern ("*" or a method) covers method.
// HTTP methods are case-sensitive on the wire, but policies are typed by
// people, so "post" in a policy matches a POST request.
func MatchMethod(pattern, method string) bool {
	return pattern == "*" || ident.EqualFoldASCII(pattern, method)
}

func actionByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '-'
}

func isAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
