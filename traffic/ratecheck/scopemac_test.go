package ratecheck

import (
	"strings"
	"testing"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// The precomputed pads give exactly ratelimit.HashScope, for every key
// and value length, with one scratch reused, and fall back to it when the
// precomputed key is not the caller's.
func TestScopeMACIsHashScope(t *testing.T) {
	var s scopeHasher
	for _, kl := range []int{0, 1, 16, 32, 63, 64, 65, 100} {
		key := []byte(strings.Repeat("k", kl))
		mac := newScopeMAC(key)
		for _, vl := range []int{0, 1, 7, 40, 55, 56, 64, 200, 300} {
			v := []byte(strings.Repeat("v", vl))
			want := ratelimit.HashScope(key, "subject\x00"+string(v))
			if got := s.hash(mac, key, "subject", v); got != want {
				t.Fatalf("key %d value %d: differs from HashScope", kl, vl)
			}
			if got := s.hash(nil, key, "subject", v); got != want {
				t.Fatalf("key %d value %d: fallback differs", kl, vl)
			}
			if got := s.hash(newScopeMAC([]byte("another key")), key, "subject", v); got != want {
				t.Fatalf("key %d value %d: another key's pads were used", kl, vl)
			}
		}
	}
}

func BenchmarkScopeHash(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	mac := newScopeMAC(key)
	var s scopeHasher
	v := []byte("user-42")
	b.ReportAllocs()
	for b.Loop() {
		s.hash(mac, key, "subject", v)
	}
}
