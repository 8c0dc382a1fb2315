package pow

import (
	"encoding/hex"
	"testing"
)

func TestLeadingZeroBits(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want int
	}{
		{"a first byte with its top bit set has none", []byte{0x80, 0}, 0},
		{"0x01 has seven", []byte{0x01}, 7},
		{"a zero byte then 0x40 has nine", []byte{0x00, 0x40}, 9},
		{"all zero counts every bit", []byte{0, 0}, 16},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeadingZeroBits(tc.in); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestValidNonce(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"zero is a nonce", "0", true},
		{"a plain decimal is a nonce", "12345", true},
		{"the largest uint64 is a nonce", "18446744073709551615", true},
		{"leading zeros are refused", "007", false},
		{"a sign is refused", "-1", false},
		{"an empty string is refused", "", false},
		{"hex is refused", "0x10", false},
		{"a value above uint64 is refused", "18446744073709551616", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidNonce(tc.in); got != tc.ok {
				t.Fatalf("ValidNonce(%q) = %v", tc.in, got)
			}
		})
	}
}

// TestDeriveMatchesRFC6070Style pins the derivation to a known vector so
// the widget's WebCrypto implementation and the server agree: PBKDF2-
// HMAC-SHA256("password", "salt", 1, 32).
func TestDeriveMatchesKnownVector(t *testing.T) {
	got := hex.EncodeToString(Derive("password", []byte("salt"), 1))
	want := "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestSolveFindsTheFirstSolutionAndCheckAcceptsIt(t *testing.T) {
	salt := []byte("0123456789abcdef")
	n, ok := Solve(salt, 100, 6, 1<<16)
	if !ok {
		t.Fatal("no solution found")
	}
	if !Check(n, salt, 100, 6) {
		t.Fatalf("Check refused the solution %s", n)
	}
	if n != "0" && Check("0", salt, 100, 6) {
		t.Fatal("an earlier nonce also solved it: Solve did not return the first")
	}
	if Check(n, salt, 100, 30) {
		t.Fatal("a harder difficulty accepted the same nonce (astronomically unlikely)")
	}
	if Check(n, []byte("another salt...."), 100, 6) && Check(n, []byte("third salt......"), 100, 6) {
		t.Fatal("the nonce solved unrelated salts")
	}
}
