package verify

import (
	"testing"

	"github.com/trustd/trustd/platform/token"
)

// siteverify hashes a remote address without making its canonical string:
// the hash must be IPHash of CanonicalIP for every input.
func TestRemoteIPHashIsIPHashOfCanonicalIP(t *testing.T) {
	k := token.NewKey("k1", []byte("0123456789abcdef0123456789abcdef"))
	for _, s := range []string{"203.0.113.7", " 203.0.113.7 ", "::ffff:203.0.113.7", "2001:db8::1", "2001:DB8:0:0::1",
		"fe80::1%eth0", "0.0.0.0", "::", "::1", "", "x", "203.0.113", "203.0.113.7:80", "[2001:db8::1]"} {
		want, wok := CanonicalIP(s)
		got, ok := remoteIPHash(k, s)
		if ok != wok || (ok && got != IPHash(k, want)) {
			t.Errorf("%q: remoteIPHash ok=%v, CanonicalIP %q ok=%v", s, ok, want, wok)
		}
	}
}
