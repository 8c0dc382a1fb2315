package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

func TestSealer(t *testing.T) {
	s := NewSealer("cluster-key", "purpose v1")
	sealed := s.Seal("record-1", []byte("secret"))
	if b, ok := s.Open("record-1", sealed); !ok || string(b) != "secret" {
		t.Fatalf("open = %q %v", b, ok)
	}
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	for _, tc := range []struct {
		name   string
		s      *Sealer
		ad     string
		sealed []byte
	}{
		{"another record cannot open it", s, "record-2", sealed},
		{"another purpose cannot open it", NewSealer("cluster-key", "purpose v2"), "record-1", sealed},
		{"another cluster key cannot open it", NewSealer("other-key", "purpose v1"), "record-1", sealed},
		{"a tampered value does not open", s, "record-1", tampered},
		{"a truncated value does not open", s, "record-1", sealed[:5]},
	} {
		if _, ok := tc.s.Open(tc.ad, tc.sealed); ok {
			t.Errorf("%s", tc.name)
		}
	}
	// The format is the one agents/ sealed with before this type existed:
	// AES-256-GCM under HMAC-SHA-256(cluster key, label), nonce ‖ sealed.
	m := hmac.New(sha256.New, []byte("cluster-key"))
	m.Write([]byte("purpose v1"))
	b, _ := aes.NewCipher(m.Sum(nil))
	g, _ := cipher.NewGCM(b)
	nonce := make([]byte, g.NonceSize())
	old := g.Seal(nonce, nonce, []byte("older"), []byte("record-1"))
	if got, ok := s.Open("record-1", old); !ok || string(got) != "older" {
		t.Fatal("a value sealed in the earlier format does not open")
	}
}
