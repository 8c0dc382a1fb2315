package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
)

// Sealer encrypts secrets that must be stored recoverably in replicated
// state (HMAC secrets the service signs or verifies with): AES-256-GCM
// under a key derived from the cluster key and a purpose label, with
// associated data naming the record, so a sealed value reads neither
// without the cluster key, nor under another purpose, nor moved to
// another record. Sealed form: nonce ‖ ciphertext ‖ tag.
type Sealer struct{ aead cipher.AEAD }

// NewSealer derives the sealing key HMAC-SHA-256(clusterKey, label).
func NewSealer(clusterKey, label string) *Sealer {
	m := hmac.New(sha256.New, []byte(clusterKey))
	m.Write([]byte(label))
	b, _ := aes.NewCipher(m.Sum(nil))
	g, _ := cipher.NewGCM(b)
	return &Sealer{aead: g}
}

// Seal encrypts secret bound to ad.
func (s *Sealer) Seal(ad string, secret []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, secret, []byte(ad))
}

// Open decrypts a value sealed for ad; ok is false for anything else.
func (s *Sealer) Open(ad string, sealed []byte) ([]byte, bool) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, false
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(ad))
	return b, err == nil
}
