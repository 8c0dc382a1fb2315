package ratecheck

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"hash"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// scopeMAC is ratelimit.HashScope under one workspace's scope key with
// the key's two pad blocks hashed once per catalog version instead of on
// every check: the SHA-256 states after the inner and the outer pad are
// kept, and a check restores them (RFC 2104 unchanged, two block
// compressions of four saved; equality with HashScope is a test).
type scopeMAC struct {
	key          []byte
	inner, outer []byte // marshalled SHA-256 states
}

func newScopeMAC(key []byte) *scopeMAC {
	pad := ratelimit.ScopeInnerPad(key)
	h := sha256.New()
	h.Write(pad[:])
	inner, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	ratelimit.ToOuterPad(&pad)
	h.Reset()
	h.Write(pad[:])
	outer, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	return &scopeMAC{key: bytes.Clone(key), inner: inner, outer: outer}
}

// scopeHasher is a check's scratch for scope hashes (pooled with its
// Result).
type scopeHasher struct {
	h   hash.Hash
	buf []byte
}

// hash returns ratelimit.HashScope(key, name+"\x00"+value); mac, when it
// was made from key, saves the pad blocks.
func (s *scopeHasher) hash(mac *scopeMAC, key []byte, name string, value []byte) [32]byte {
	if mac == nil || !bytes.Equal(mac.key, key) {
		return ratelimit.HashScope(key, name+"\x00"+string(value))
	}
	if s.h == nil {
		s.h = sha256.New()
	}
	u := s.h.(encoding.BinaryUnmarshaler)
	if u.UnmarshalBinary(mac.inner) != nil {
		return ratelimit.HashScope(key, name+"\x00"+string(value))
	}
	b := append(append(append(s.buf[:0], name...), 0), value...)
	s.h.Write(b)
	b = s.h.Sum(b[:0])
	if u.UnmarshalBinary(mac.outer) != nil {
		return ratelimit.HashScope(key, name+"\x00"+string(value))
	}
	s.h.Write(b)
	b = s.h.Sum(b[:0])
	var out [32]byte
	copy(out[:], b)
	s.buf = b
	return out
}
