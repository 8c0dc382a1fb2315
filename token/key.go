package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// MACSize is the length of every signature.
const MACSize = sha256.Size

// Key is one HMAC-SHA-256 signing key. It keeps a pool of keyed hash
// states so signing and verifying do not rebuild the HMAC pads each time.
type Key struct {
	ID   string
	pool sync.Pool
	// aead seals what a token says about the client (score, reasons,
	// bindings) so that only the service reads it: AES-256-GCM under a
	// key derived from the secret, never the secret itself.
	aead cipher.AEAD
}

// NewKey returns the key id with secret. The secret is copied.
func NewKey(id string, secret []byte) *Key {
	sec := append([]byte(nil), secret...)
	k := &Key{ID: id}
	k.pool.New = func() any { return hmac.New(sha256.New, sec) }
	m := hmac.New(sha256.New, sec)
	m.Write([]byte("trustd token sealing v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err == nil {
		k.aead, _ = cipher.NewGCM(block)
	}
	return k
}

// Sum appends HMAC(key, parts…) to dst. The parts are written one after
// the other, so callers must frame them unambiguously (the token formats
// do: a fixed prefix followed by a self-delimiting payload).
func (k *Key) Sum(dst []byte, parts ...[]byte) []byte {
	h := k.pool.Get().(hash.Hash)
	h.Reset()
	for _, p := range parts {
		h.Write(p)
	}
	dst = h.Sum(dst)
	k.pool.Put(h)
	return dst
}

// sum2 is Sum for a string prefix and a payload, without the variadic slice.
func (k *Key) sum2(dst []byte, prefix string, payload []byte) []byte {
	h := k.pool.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte(prefix))
	h.Write(payload)
	dst = h.Sum(dst)
	k.pool.Put(h)
	return dst
}

// Hash16 returns a 16-byte keyed hash of v under label, used to bind a
// token to a value (a client IP, a subject) without carrying the value.
func (k *Key) Hash16(label string, v string) [16]byte {
	h := k.pool.Get().(hash.Hash)
	h.Reset()
	var n [1]byte
	n[0] = byte(len(label))
	h.Write(n[:])
	h.Write([]byte(label))
	h.Write([]byte(v))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	k.pool.Put(h)
	var out [16]byte
	copy(out[:], sum[:16])
	return out
}

// Lookup finds a verification key by id; nil means unknown or retired.
type Lookup func(id string) *Key
