// Package pow is the widget's proof of work: find the smallest decimal n
// whose PBKDF2-HMAC-SHA256 under the challenge salt has enough leading
// zero bits. Browsers compute it with WebCrypto's native PBKDF2, so the
// cost is real CPU time for the client and one PBKDF2 for the server. The
// package is pure computation: no clock, no I/O.
package pow

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"math/bits"
	"strconv"
)

// Algorithm is the name the challenge protocol announces.
const Algorithm = "pbkdf2-sha256"

// Bounds of the parameters the server hands out and accepts.
const (
	DefaultIterations = 1000
	MaxIterations     = 100_000
	MaxDifficulty     = 24
	// MaxNonceDigits bounds the decimal nonce (uint64 range).
	MaxNonceDigits = 20
)

// Derive returns PBKDF2-HMAC-SHA256(password = decimal n, salt, iterations, 32).
func Derive(nonce string, salt []byte, iterations int) []byte {
	dk, err := pbkdf2.Key(sha256.New, nonce, salt, iterations, 32)
	if err != nil {
		// Only an over-long key length or FIPS-mode refusals fail; 32
		// bytes of SHA-256 never do. Return a value no difficulty accepts.
		return make([]byte, 0)
	}
	return dk
}

// LeadingZeroBits counts the zero bits at the start of b.
func LeadingZeroBits(b []byte) int {
	n := 0
	for _, x := range b {
		if x != 0 {
			return n + bits.LeadingZeros8(x)
		}
		n += 8
	}
	return n
}

// ValidNonce reports whether s is the canonical decimal of a uint64: digits
// only, no sign, no leading zero (except "0" itself).
func ValidNonce(s string) bool {
	if s == "" || len(s) > MaxNonceDigits || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// Check reports whether nonce solves the challenge (salt, iterations,
// difficulty). Any nonce with enough zero bits is accepted, not only the
// first: the server cannot cheaply know which was first, and a later one
// cost the client at least as much work.
func Check(nonce string, salt []byte, iterations, difficulty int) bool {
	if !ValidNonce(nonce) || iterations < 1 || iterations > MaxIterations || difficulty < 0 || difficulty > MaxDifficulty {
		return false
	}
	dk := Derive(nonce, salt, iterations)
	return len(dk) == 32 && LeadingZeroBits(dk) >= difficulty
}

// Solve searches n = 0, 1, 2, … up to limit attempts and returns the first
// solution, as the widget does. Tests and the benchmark tool use it.
func Solve(salt []byte, iterations, difficulty int, limit uint64) (string, bool) {
	var buf [MaxNonceDigits]byte
	for n := uint64(0); n < limit; n++ {
		s := string(strconv.AppendUint(buf[:0], n, 10))
		if dk := Derive(s, salt, iterations); len(dk) == 32 && LeadingZeroBits(dk) >= difficulty {
			return s, true
		}
	}
	return "", false
}
