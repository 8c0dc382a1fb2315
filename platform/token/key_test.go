package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"
)

// The pooled states feed the hash through their own buffer: every
// method must equal crypto/hmac over the same bytes, whatever the
// lengths (longer than the buffer included).
func TestKeyMethodsEqualHMAC(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	k := NewKey("k1", secret)
	ref := func(parts ...string) []byte {
		m := hmac.New(sha256.New, secret)
		for _, p := range parts {
			m.Write([]byte(p))
		}
		return m.Sum(nil)
	}
	for _, n := range []int{0, 1, 127, 128, 129, 300} {
		v := strings.Repeat("v", n)
		if got := k.Sum([]byte("dst:"), []byte("a"), []byte(v)); string(got) != "dst:"+string(ref("a", v)) {
			t.Fatalf("Sum, %d bytes", n)
		}
		if got := k.sum2([]byte("d"), v, []byte("payload")); string(got) != "d"+string(ref(v, "payload")) {
			t.Fatalf("sum2, %d bytes", n)
		}
		mac := ref(v, "payload")
		if !k.verify2(v, []byte("payload"), mac) || k.verify2(v, []byte("payloaD"), mac) || k.verify2(v, []byte("payload"), mac[:31]) {
			t.Fatalf("verify2, %d bytes", n)
		}
		h := k.Hash16("ip", v)
		if want := ref("\x02ip", v); string(h[:]) != string(want[:16]) {
			t.Fatalf("Hash16, %d bytes", n)
		}
	}
}

// DecodeResponse uses its scratch for the sealed part when it is large
// enough and allocates otherwise: the token read is the same.
func TestDecodeResponseWithAnyScratch(t *testing.T) {
	k, keys := mustKeys(t)
	in := sampleResponse()
	in.CData = strings.Repeat("c", MaxCData)
	text := in.Sign(k, LivePrefix)
	in.KeyID = k.ID
	for _, scratch := range [][]byte{nil, make([]byte, 10), make([]byte, 512), make([]byte, 4096)} {
		out, err := DecodeResponse(text, LivePrefix, keys, scratch)
		if err != nil || out != in {
			t.Fatalf("scratch of %d: %v\n got %+v\nwant %+v", cap(scratch), err, out, in)
		}
		for i := range scratch {
			scratch[i] = 0xff // the token's strings must not point into it
		}
		if out != in {
			t.Fatalf("scratch of %d: the token changed with its scratch", cap(scratch))
		}
	}
}
