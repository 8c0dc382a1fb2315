package catalog

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/go-json-experiment/json"
)

// An Idempotency-Key as the catalog keeps it (idempotency.go): the key is
// never stored as sent. Lookup, the name it is kept under, hashes the key
// with the credential that sent it, so two callers' keys never meet;
// Fingerprint hashes the request (method, path and the decoded body's
// canonical JSON), so a retry that encodes the same body with its members
// in another order or other whitespace is the same request; the secret a
// create showed once is sealed with AES-GCM under a key derived from the
// idempotency key and the credential, so neither the catalog nor a
// snapshot reveals it to whoever lacks the key. The hashes are in the Raft
// log: changing them makes a retry across an upgrade a new request
// (TestIdempotencyKeyHashesArePinned).

// MaxIdempotencyKeyLen bounds an Idempotency-Key.
const MaxIdempotencyKeyLen = 128

// ValidIdempotencyKey accepts 1 to 128 visible ASCII characters.
func ValidIdempotencyKey(k []byte) bool {
	if len(k) == 0 || len(k) > MaxIdempotencyKeyLen {
		return false
	}
	for _, ch := range k {
		if ch < 0x21 || ch > 0x7e {
			return false
		}
	}
	return true
}

// IdempotencyKey is one request's Idempotency-Key, bound to its
// credential and to the request.
type IdempotencyKey struct {
	raw  []byte
	cred [32]byte
	// Lookup is the hash of the credential and the key: the name the
	// catalog keeps the create under (IdempotentCreate.Key).
	Lookup string
	// Fingerprint is the hash of the request.
	Fingerprint Hash
}

// NewIdempotencyKey binds a valid key to credential (what identifies the
// caller, never stored) and to the request: method, path and body, the
// decoded body whose canonical JSON is hashed (raw, the body as sent,
// when body does not encode).
func NewIdempotencyKey(key []byte, credential string, method, path []byte, body any, raw []byte) *IdempotencyKey {
	k := &IdempotencyKey{raw: append([]byte(nil), key...)}
	k.cred = sha256.Sum256([]byte(credential))
	h := sha256.New()
	h.Write([]byte("trustd admin idempotency key v1\x00"))
	h.Write(k.cred[:])
	h.Write(k.raw)
	k.Lookup = hex.EncodeToString(h.Sum(nil))
	h.Reset()
	canon, err := json.Marshal(body, json.Deterministic(true))
	if err != nil {
		canon = raw
	}
	for _, part := range [][]byte{method, path, canon} {
		var n [8]byte
		for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write(part)
	}
	copy(k.Fingerprint[:], h.Sum(nil))
	return k
}

// aead is the cipher that seals a create's secret under this key.
func (k *IdempotencyKey) aead() cipher.AEAD {
	m := hmac.New(sha256.New, k.raw)
	m.Write([]byte("trustd admin idempotency seal v1\x00"))
	m.Write(k.cred[:])
	b, _ := aes.NewCipher(m.Sum(nil)) // a 32-byte key never fails
	g, _ := cipher.NewGCM(b)
	return g
}

// Seal seals the secret a create showed once (nil for none), bound to
// Lookup.
func (k *IdempotencyKey) Seal(secret string) []byte {
	if secret == "" {
		return nil
	}
	g := k.aead()
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(secret)+g.Overhead())
	_, _ = rand.Read(nonce)
	return g.Seal(nonce, nonce, []byte(secret), []byte(k.Lookup))
}

// Open is the secret Seal sealed under this key ("" for none); another
// key or credential, or a changed box, is an error.
func (k *IdempotencyKey) Open(sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	g := k.aead()
	if len(sealed) < g.NonceSize() {
		return "", errors.New("catalog: sealed secret too short")
	}
	b, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], []byte(k.Lookup))
	return string(b), err
}
