package http

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/catalog"
)

func tokenCatalog(t testing.TB, keys ...catalog.SigningKey) *catalog.Catalog {
	t.Helper()
	tx := catalog.Begin(catalog.Empty())
	for _, k := range keys {
		if _, err := (&catalog.AddSigningKey{Key: k}).Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	return tx.Commit(1)
}

var (
	liveKey    = catalog.SigningKey{ID: "l1", Purpose: catalog.KeyLive, Secret: bytes.Repeat([]byte{1}, 32), CreatedAt: time.Unix(1, 0)}
	otherKey   = catalog.SigningKey{ID: "l2", Purpose: catalog.KeyLive, Secret: bytes.Repeat([]byte{2}, 32), CreatedAt: time.Unix(2, 0)}
	sandboxKey = catalog.SigningKey{ID: "s1", Purpose: catalog.KeySandbox, Secret: bytes.Repeat([]byte{3}, 32), CreatedAt: time.Unix(1, 0)}
)

func sampleLease() leaseClaims {
	return leaseClaims{leaseID: "lease-1", workspaceID: "ws", appID: "site", context: [16]byte{1, 2, 3},
		expiresMs: 1_700_000_000_000, slots: []leaseSlot{{"c1", [16]byte{4}, 7}, {"c2", [16]byte{5}, 1 << 60}}}
}

func TestLeaseTokenRoundTripsAndRefusesTampering(t *testing.T) {
	cat := tokenCatalog(t, liveKey, otherKey, sandboxKey)
	l := sampleLease()
	tok := l.seal(&liveKey)
	got, ok := openLease(cat, tok)
	if !ok || got.leaseID != l.leaseID || got.workspaceID != l.workspaceID || got.appID != l.appID ||
		got.context != l.context || got.expiresMs != l.expiresMs || len(got.slots) != 2 || got.slots[1] != l.slots[1] {
		t.Fatalf("round trip: %v %+v", ok, got)
	}
	flip := func(i int) string {
		b := []byte(tok)
		b[i] ^= 0x01
		return string(b)
	}
	tests := []struct {
		name string
		tok  string
	}{
		{"a flipped payload bit", flip(len(leasePrefix) + 5)},
		{"a flipped MAC bit", flip(len(tok) - 2)},
		{"a truncated token", tok[:len(tok)-4]},
		{"a missing MAC", tok[:bytes.IndexByte([]byte(tok), '.')]},
		{"another prefix over the same body", admissionPrefix + tok[len(leasePrefix):]},
		{"a token signed by a sandbox key", l.sealWithSandbox()},
		{"an empty token", ""},
		{"garbage", "lease_!!!.???"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			if _, ok := openLease(cat, tc.tok); ok {
				t.Fatalf("accepted %q", tc.tok)
			}
		})
	}
	t.Run("a token of a key that is no longer in the catalog is refused", func(t *testing.T) {
		if _, ok := openLease(tokenCatalog(t, otherKey), tok); ok {
			t.Fatal("accepted a token whose key is gone")
		}
	})
}

// sealWithSandbox signs with the sandbox key but claims the live purpose.
func (l *leaseClaims) sealWithSandbox() string { return l.seal(&sandboxKey) }

func TestAdmissionTokenRoundTrips(t *testing.T) {
	cat := tokenCatalog(t, liveKey)
	a := admissionClaims{admissionID: "a1", workspaceID: "ws", appID: "app", dependencyID: "dep", context: [16]byte{9}, expiresMs: 42}
	got, ok := openAdmission(cat, a.seal(&liveKey))
	if !ok || *got != a {
		t.Fatalf("round trip: %v %+v", ok, got)
	}
	if _, ok := openLease(cat, a.seal(&liveKey)); ok {
		t.Fatal("an admission token opened as a lease")
	}
}

func FuzzOpenLease(f *testing.F) {
	cat := tokenCatalog(f, liveKey)
	l := sampleLease()
	f.Add(l.seal(&liveKey))
	f.Add("lease_AQ.AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		if c, ok := openLease(cat, tok); ok && c.seal(&liveKey) != tok {
			t.Fatalf("accepted a token that is not its own canonical encoding: %q", tok)
		}
	})
}

func TestAdmissionTokensNoLongerShareTheAdminTokensPrefix(t *testing.T) {
	cat := tokenCatalog(t, liveKey)
	a := admissionClaims{admissionID: "a1", workspaceID: "ws", appID: "site", dependencyID: "d1", expiresMs: 1_700_000_000_000}
	tok := a.seal(&liveKey)
	if !strings.HasPrefix(tok, "admit_") {
		t.Fatalf("admission token %q", tok)
	}
	if got, ok := openAdmission(cat, tok); !ok || got.admissionID != "a1" {
		t.Fatalf("open = %+v %v", got, ok)
	}
	// A token issued by an older node (the legacy prefix) still opens.
	w := newTokenWriter(&liveKey)
	w.str(a.admissionID)
	w.str(a.workspaceID)
	w.str(a.appID)
	w.str(a.dependencyID)
	w.bytes16(a.context)
	w.u64(uint64(a.expiresMs))
	if got, ok := openAdmission(cat, sealToken(legacyAdmissionPrefix, &liveKey, w.b)); !ok || got.admissionID != "a1" {
		t.Fatalf("a legacy admission token: %+v %v", got, ok)
	}
}
