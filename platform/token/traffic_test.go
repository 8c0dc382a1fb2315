package token

import (
	"errors"
	"strings"
	"testing"
)

func TestLeaseAndAdmissionRoundTripAndRefuseTampering(t *testing.T) {
	k := NewKey("k1", []byte("secret"))
	keys := func(id string) *Key {
		if id == "k1" {
			return k
		}
		return nil
	}
	l := Lease{ID: "lease-1", WorkspaceID: "ws", AppID: "app", Context: [16]byte{1, 2}, ExpiresMs: 1_800_000_000_000,
		Slots: []LeaseSlot{{ConstraintID: "c1", ScopeHash: [16]byte{9}, Fence: 7}, {ConstraintID: "c2", Fence: 1 << 40}}}
	lt := l.Sign(k)
	got, err := DecodeLease(lt, keys)
	if err != nil || got.ID != l.ID || got.KeyID != "k1" || len(got.Slots) != 2 || got.Slots[1].Fence != 1<<40 || got.Context != l.Context {
		t.Fatalf("lease round trip: %+v %v", got, err)
	}
	a := Admission{ID: "adm-1", WorkspaceID: "ws", AppID: "app", DependencyID: "dep", ExpiresMs: 42}
	at := a.Sign(k)
	if got, err := DecodeAdmission(at, keys); err != nil || got != (Admission{KeyID: "k1", ID: "adm-1", WorkspaceID: "ws", AppID: "app", DependencyID: "dep", ExpiresMs: 42}) {
		t.Fatalf("admission round trip: %+v %v", got, err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name string
		err  error
		run  func() error
	}{
		{"a lease with one character changed is refused", ErrSignature, func() error { _, err := DecodeLease(flip(lt, len(LeasePrefix)+5), keys); return err }},
		{"an admission passed off as a lease is refused", ErrMalformed, func() error { _, err := DecodeLease(at, keys); return err }},
		{"a lease passed off as an admission is refused", ErrMalformed, func() error { _, err := DecodeAdmission(lt, keys); return err }},
		{"an admission under the lease prefix fails the MAC", ErrSignature, func() error {
			_, err := DecodeLease(LeasePrefix+strings.TrimPrefix(at, AdmissionPrefix), keys)
			return err
		}},
		{"a lease of an unknown key is refused", ErrUnknownKey, func() error {
			_, err := DecodeLease(l.Sign(NewKey("k2", []byte("secret"))), keys)
			return err
		}},
		{"an over-long text is refused before decoding", ErrMalformed, func() error {
			_, err := DecodeLease(LeasePrefix+strings.Repeat("A", 9000), keys)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
		})
	}
}

func FuzzDecodeLease(f *testing.F) {
	k := NewKey("k1", []byte("secret"))
	keys := func(id string) *Key {
		if id == "k1" {
			return k
		}
		return nil
	}
	l := Lease{ID: "l", WorkspaceID: "w", AppID: "a", ExpiresMs: 5, Slots: []LeaseSlot{{ConstraintID: "c", Fence: 3}}}
	f.Add(l.Sign(k))
	f.Add("lease_AQ")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := DecodeLease(text, keys)
		if err != nil {
			return
		}
		if again := got.Sign(k); again != text {
			t.Fatalf("accepted %q, which is not its own canonical encoding %q", text, again)
		}
	})
}
