package passwords

import (
	"encoding/binary"
	"math/bits"
)

// md4Sum is MD4 (RFC 1320), needed only to compute NTLM hashes of the
// default corpus and of test passwords. MD4 is broken as a hash; it is here
// because NTLM is what Windows stores and what the Pwned Passwords NTLM
// corpus is keyed by, never for anything that needs collision resistance.
// (golang.org/x/crypto/md4 is deprecated; these 50 lines avoid the module.)
func md4Sum(msg []byte) [16]byte {
	a0, b0, c0, d0 := uint32(0x67452301), uint32(0xefcdab89), uint32(0x98badcfe), uint32(0x10325476)
	n := len(msg)
	padded := make([]byte, (n+8)/64*64+64)
	copy(padded, msg)
	padded[n] = 0x80
	binary.LittleEndian.PutUint64(padded[len(padded)-8:], uint64(n)*8)
	var x [16]uint32
	for off := 0; off < len(padded); off += 64 {
		for i := range x {
			x[i] = binary.LittleEndian.Uint32(padded[off+4*i:])
		}
		a, b, c, d := a0, b0, c0, d0
		for _, i := range [16]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} {
			s := [4]int{3, 7, 11, 19}[i%4]
			f := (b & c) | (^b & d)
			a, b, c, d = d, bits.RotateLeft32(a+f+x[i], s), b, c
		}
		for j, i := range [16]int{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15} {
			s := [4]int{3, 5, 9, 13}[j%4]
			g := (b & c) | (b & d) | (c & d)
			a, b, c, d = d, bits.RotateLeft32(a+g+x[i]+0x5a827999, s), b, c
		}
		for j, i := range [16]int{0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15} {
			s := [4]int{3, 9, 11, 15}[j%4]
			h := b ^ c ^ d
			a, b, c, d = d, bits.RotateLeft32(a+h+x[i]+0x6ed9eba1, s), b, c
		}
		a0, b0, c0, d0 = a0+a, b0+b, c0+c, d0+d
	}
	var out [16]byte
	binary.LittleEndian.PutUint32(out[0:], a0)
	binary.LittleEndian.PutUint32(out[4:], b0)
	binary.LittleEndian.PutUint32(out[8:], c0)
	binary.LittleEndian.PutUint32(out[12:], d0)
	return out
}
