package ratelimit

import "crypto/sha256"

// HashScope returns HMAC-SHA-256(key, value): the only form in which a
// subject, device, route or custom scope value is stored or replicated
// (spec 2.11), so a snapshot or log leaks no identifiers. Use one key per
// workspace so equal values in two workspaces give unrelated hashes.
//
// It is RFC 2104 written out over sha256.New, whose digest the compiler
// keeps on the stack, because crypto/hmac allocates about seven times per
// call; the value is fed through a stack buffer for the same reason.
// Equality with crypto/hmac is a test.
func HashScope(key []byte, value string) [32]byte {
	pad := ScopeInnerPad(key)
	h := sha256.New()
	h.Write(pad[:])
	var chunk [256]byte
	for len(value) > 0 {
		n := copy(chunk[:], value)
		h.Write(chunk[:n])
		value = value[n:]
	}
	var inner [32]byte
	h.Sum(inner[:0])

	ToOuterPad(&pad)
	h.Reset()
	h.Write(pad[:])
	h.Write(inner[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// ScopeInnerPad is HashScope's key block XOR the HMAC inner pad (RFC 2104):
// the key, hashed first when longer than SHA-256's 64-byte block.
func ScopeInnerPad(key []byte) (pad [64]byte) {
	if len(key) > len(pad) {
		sum := sha256.Sum256(key)
		copy(pad[:], sum[:])
	} else {
		copy(pad[:], key)
	}
	for i := range pad {
		pad[i] ^= 0x36
	}
	return pad
}

// ToOuterPad turns an inner pad from ScopeInnerPad into the outer pad.
func ToOuterPad(pad *[64]byte) {
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
}
