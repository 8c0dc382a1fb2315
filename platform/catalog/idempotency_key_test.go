package catalog

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestValidIdempotencyKeyIsOneTo128VisibleASCII(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		want bool
	}{
		{"a UUID is valid", "6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d", true},
		{"one character is valid", "x", true},
		{"128 characters are valid", strings.Repeat("k", 128), true},
		{"an empty key is invalid", "", false},
		{"129 characters are invalid", strings.Repeat("k", 129), false},
		{"a space is invalid", "a b", false},
		{"a control character is invalid", "a\tb", false},
		{"DEL is invalid", "a\x7fb", false},
		{"non-ASCII is invalid", "clé", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidIdempotencyKey([]byte(tc.key)); got != tc.want {
				t.Fatalf("ValidIdempotencyKey(%q) = %v", tc.key, got)
			}
		})
	}
}

// TestIdempotencyKeyHashesArePinned: the lookup and the fingerprint are in
// the Raft log and the snapshots, so a build that hashed them otherwise
// would treat a retry across an upgrade as a new request. The vector was
// computed by the transport's code before it moved here.
func TestIdempotencyKeyHashesArePinned(t *testing.T) {
	body := map[string]any{"name": "a", "b": 1}
	for _, tc := range []struct {
		name, cred, lookup string
	}{
		{"an API caller's key", "bearer\x00tok-123", "fc2ebad5c38b05ca8e50aa315efc6c5c5f526a47d8f0710c2ae333f40cf03f1a"},
		{"a console session's key", "console", "dd5575881d5afee590c5f0e2f43f4d04afd4dd324d73a2c9caf73b76364f201c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := NewIdempotencyKey([]byte("key-abc"), tc.cred, []byte("POST"), []byte("/admin/v1/workspaces"), body, nil)
			if k.Lookup != tc.lookup {
				t.Errorf("lookup %s, want %s", k.Lookup, tc.lookup)
			}
			if fp := hex.EncodeToString(k.Fingerprint[:]); fp != "106c936579811ee5768e5548481265716bbce9f8e175fab2479ff33e15ed263b" {
				t.Errorf("fingerprint %s", fp)
			}
		})
	}
}

func TestIdempotencyKeyBindsTheCredentialAndTheRequest(t *testing.T) {
	key := []byte("key-abc")
	base := NewIdempotencyKey(key, "bearer\x00a", []byte("POST"), []byte("/p"), map[string]any{"x": 1, "y": "z"}, nil)
	for _, tc := range []struct {
		name               string
		k                  *IdempotencyKey
		sameLookup, sameFP bool
	}{
		{"the same body with its members in another order is the same request",
			NewIdempotencyKey(key, "bearer\x00a", []byte("POST"), []byte("/p"), map[string]any{"y": "z", "x": 1}, nil), true, true},
		{"another credential's same key is another key",
			NewIdempotencyKey(key, "bearer\x00b", []byte("POST"), []byte("/p"), map[string]any{"x": 1, "y": "z"}, nil), false, true},
		{"another key of the same credential is another key",
			NewIdempotencyKey([]byte("key-abd"), "bearer\x00a", []byte("POST"), []byte("/p"), map[string]any{"x": 1, "y": "z"}, nil), false, true},
		{"another body is another request",
			NewIdempotencyKey(key, "bearer\x00a", []byte("POST"), []byte("/p"), map[string]any{"x": 2, "y": "z"}, nil), true, false},
		{"another path is another request",
			NewIdempotencyKey(key, "bearer\x00a", []byte("POST"), []byte("/q"), map[string]any{"x": 1, "y": "z"}, nil), true, false},
		{"a body that does not encode is fingerprinted as sent",
			NewIdempotencyKey(key, "bearer\x00a", []byte("POST"), []byte("/p"), func() {}, []byte(`{ "x": 1, "y": "z" }`)), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.k.Lookup == base.Lookup; got != tc.sameLookup {
				t.Errorf("same lookup: %v, want %v", got, tc.sameLookup)
			}
			if got := tc.k.Fingerprint.Equal(base.Fingerprint); got != tc.sameFP {
				t.Errorf("same fingerprint: %v, want %v", got, tc.sameFP)
			}
		})
	}
}

func TestASealedSecretOpensOnlyUnderItsKey(t *testing.T) {
	req := func(key, cred string) *IdempotencyKey {
		return NewIdempotencyKey([]byte(key), cred, []byte("POST"), []byte("/p"), map[string]any{}, nil)
	}
	k := req("key-abc", "bearer\x00a")
	sealed := k.Seal("whsec_once")
	if strings.Contains(string(sealed), "whsec_once") {
		t.Fatal("the secret is readable in the sealed box")
	}
	if got, err := req("key-abc", "bearer\x00a").Open(sealed); err != nil || got != "whsec_once" {
		t.Fatalf("the same key and credential open %q, %v", got, err)
	}
	if k.Seal("") != nil {
		t.Fatal("no secret seals to something")
	}
	if got, err := k.Open(nil); err != nil || got != "" {
		t.Fatalf("nothing sealed opens to %q, %v", got, err)
	}
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	for _, tc := range []struct {
		name   string
		k      *IdempotencyKey
		sealed []byte
	}{
		{"another key cannot open it", req("key-abd", "bearer\x00a"), sealed},
		{"another credential cannot open it", req("key-abc", "bearer\x00b"), sealed},
		{"a changed box does not open", k, tampered},
		{"a box shorter than its nonce does not open", k, sealed[:5]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.k.Open(tc.sealed); err == nil {
				t.Fatalf("opened to %q", got)
			}
		})
	}
}
