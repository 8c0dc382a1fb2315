package events

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"time"

	"github.com/trustd/trustd/catalog"
)

// Sealer seals endpoint secrets for the catalog: AES-256-GCM under a key
// derived from the cluster key, with the endpoint id as associated data,
// so a sealed secret reads neither without the cluster key nor under
// another endpoint. Signing needs the secret itself, so it cannot be
// stored hashed; the Raft log and snapshots hold only sealed bytes. (The
// construction is agents.Sealer's with its own derivation label.)
type Sealer struct{ aead cipher.AEAD }

// NewSealer derives the sealing key from the cluster key.
func NewSealer(clusterKey string) *Sealer {
	m := hmac.New(sha256.New, []byte(clusterKey))
	m.Write([]byte("trustd webhooks secret seal v1"))
	b, _ := aes.NewCipher(m.Sum(nil))
	g, _ := cipher.NewGCM(b)
	return &Sealer{aead: g}
}

func (s *Sealer) seal(endpointID, secret string) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(endpointID))
}

func (s *Sealer) open(endpointID string, sealed []byte) (string, bool) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", false
	}
	b, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(endpointID))
	return string(b), err == nil
}

// secrets returns the endpoint's secrets valid at now, current first.
func (s *Sealer) secrets(e *catalog.WebhookEndpoint, now time.Time) []string {
	var out []string
	for _, k := range e.Secrets {
		if !k.NotAfter.IsZero() && !k.NotAfter.After(now) {
			continue
		}
		if sec, ok := s.open(e.ID, k.Sealed); ok {
			out = append(out, sec)
		}
	}
	return out
}
