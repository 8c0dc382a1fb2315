package ratelimit

import (
	"crypto/hmac"
	"crypto/sha256"
	"math/rand/v2"
	"strings"
	"testing"
)

func stdHMAC(key []byte, value string) [32]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(value))
	var out [32]byte
	m.Sum(out[:0])
	return out
}

func TestHashScope(t *testing.T) {
	tests := []struct {
		name  string
		key   []byte
		value string
	}{
		{"an empty value hashes like crypto/hmac", []byte("k"), ""},
		{"a short subject hashes like crypto/hmac", []byte("workspace-key"), "subject-123"},
		{"a value longer than the stack chunk hashes like crypto/hmac", []byte("k"), strings.Repeat("r/", 700)},
		{"a key of exactly one block is used as is", make([]byte, 64), "x"},
		{"a key longer than a block is hashed first", make([]byte, 65), "x"},
		{"an empty key still gives the HMAC", nil, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := HashScope(tt.key, tt.value), stdHMAC(tt.key, tt.value); got != want {
				t.Errorf("HashScope = %x, want %x", got, want)
			}
		})
	}
	if HashScope([]byte("a"), "v") == HashScope([]byte("b"), "v") {
		t.Error("two keys gave the same hash for one value")
	}
}

func TestHashScopeMatchesCryptoHMAC(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 5000; i++ {
		key := make([]byte, r.IntN(150))
		val := make([]byte, r.IntN(1200))
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		for j := range val {
			val[j] = byte(r.Uint32())
		}
		if got, want := HashScope(key, string(val)), stdHMAC(key, string(val)); got != want {
			t.Fatalf("key %x value %x: HashScope = %x, want %x", key, val, got, want)
		}
	}
}
