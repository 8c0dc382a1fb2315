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
	pool sync.Pool // *macState
	// aead seals what a token says about the client (score, reasons,
	// bindings) so that only the service reads it: AES-256-GCM under a
	// key derived from the secret, never the secret itself.
	aead cipher.AEAD
}

// macState is a pooled keyed hash with buffers of its own: what is fed
// to or read from the hash goes through them, so that no caller's stack
// buffer escapes to the heap through the hash.Hash interface.
type macState struct {
	h   hash.Hash
	buf [128]byte
	sum [MACSize]byte
}

// writeString feeds s to the hash through the state's buffer.
func (st *macState) writeString(s string) {
	for len(s) > 0 {
		n := copy(st.buf[:], s)
		st.h.Write(st.buf[:n])
		s = s[n:]
	}
}

func (k *Key) get() *macState {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	return st
}

// NewKey returns the key id with secret. The secret is copied.
func NewKey(id string, secret []byte) *Key {
	sec := append([]byte(nil), secret...)
	k := &Key{ID: id}
	k.pool.New = func() any { return &macState{h: hmac.New(sha256.New, sec)} }
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
	st := k.get()
	for _, p := range parts {
		st.h.Write(p)
	}
	dst = append(dst, st.h.Sum(st.sum[:0])...)
	k.pool.Put(st)
	return dst
}

// sum2 is Sum for a string prefix and a payload, without the variadic slice.
func (k *Key) sum2(dst []byte, prefix string, payload []byte) []byte {
	st := k.get()
	st.writeString(prefix)
	st.h.Write(payload)
	dst = append(dst, st.h.Sum(st.sum[:0])...)
	k.pool.Put(st)
	return dst
}

// verify2 reports, in constant time, whether mac is sum2 of prefix and
// payload.
func (k *Key) verify2(prefix string, payload, mac []byte) bool {
	st := k.get()
	st.writeString(prefix)
	st.h.Write(payload)
	ok := hmac.Equal(st.h.Sum(st.sum[:0]), mac)
	k.pool.Put(st)
	return ok
}

// Hash16 returns a 16-byte keyed hash of v under label, used to bind a
// token to a value (a client IP, a subject) without carrying the value.
func (k *Key) Hash16(label string, v string) [16]byte {
	st := k.get()
	st.buf[0] = byte(len(label))
	st.h.Write(st.buf[:1])
	st.writeString(label)
	st.writeString(v)
	var out [16]byte
	copy(out[:], st.h.Sum(st.sum[:0]))
	k.pool.Put(st)
	return out
}

// Lookup finds a verification key by id; nil means unknown or retired.
type Lookup func(id string) *Key
