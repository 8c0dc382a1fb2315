package token

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

func TestProofAndReceiptDecodingNeverPanics(t *testing.T) {
	k := NewKey("k", []byte("0123456789abcdef0123456789abcdef"))
	p := (&Proof{WorkspaceID: "w", Method: "m", Assurance: 2, Action: "a", Issued: 1, Expires: 2}).Sign(k)
	lookup := func(id string) *Key {
		if id == "k" {
			return k
		}
		return nil
	}
	if got, err := DecodeProof(p, lookup); err != nil || got.WorkspaceID != "w" || got.Assurance != 2 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	inputs := []string{"", "tp1_", "tp1_" + strings.Repeat("A", 5000), p[:len(p)/2], p + "A", "a.b", "a.b.c.d", "..", "e30.e30.e30",
		strings.Repeat(".", 3000)}
	for i := len(ProofPrefix); i < len(p); i++ {
		c := byte('A')
		if p[i] == 'A' {
			c = 'B'
		}
		inputs = append(inputs, p[:i]+string(c)+p[i+1:])
	}
	for _, in := range inputs {
		if _, err := DecodeProof(in, lookup); err == nil {
			t.Errorf("%q decoded", in)
		}
		if _, _, err := VerifyJWS(in, func(string) ed25519.PublicKey { return nil }); err == nil {
			t.Errorf("%q verified as a receipt", in)
		}
	}
}

func TestReceiptJWSRoundTrip(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	keys := func(kid string) ed25519.PublicKey {
		if kid == "r1" {
			return pub
		}
		return nil
	}
	for _, tc := range []struct {
		name, alg, wantAlg string
	}{
		{"the default is RFC 9864's Ed25519", "", AlgEd25519},
		{"Ed25519 on request", AlgEd25519, AlgEd25519},
		{"the deprecated EdDSA for older verifiers", AlgEdDSA, AlgEdDSA},
		{"an unknown name signs Ed25519", "ES256", AlgEd25519},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jws := SignJWS(priv, "r1", tc.alg, []byte(`{"a":1}`))
			hb, _ := b64.DecodeString(strings.Split(jws, ".")[0])
			if want := `{"alg":"` + tc.wantAlg + `","kid":"r1","typ":"JWT"}`; string(hb) != want {
				t.Fatalf("header %s, want %s", hb, want)
			}
			if b, kid, err := VerifyJWS(jws, keys); err != nil || kid != "r1" || string(b) != `{"a":1}` {
				t.Fatalf("round trip: %s %s %v", b, kid, err)
			}
			if _, _, err := VerifyJWS(SignJWS(other, "r1", tc.alg, []byte(`{"a":1}`)), keys); err != ErrReceipt {
				t.Errorf("another key's signature: %v", err)
			}
			if _, _, err := VerifyJWS(SignJWS(priv, "r2", tc.alg, []byte(`{}`)), keys); err != ErrReceiptKey {
				t.Errorf("unknown kid: %v", err)
			}
		})
	}
	jws := SignJWS(priv, "r1", "", []byte(`{"a":1}`))
	parts := strings.Split(jws, ".")
	// Renaming the alg of a signed receipt breaks it: the header is signed.
	if _, _, err := VerifyJWS(b64.EncodeToString([]byte(`{"alg":"EdDSA","kid":"r1","typ":"JWT"}`))+"."+parts[1]+"."+parts[2], keys); err != ErrReceipt {
		t.Errorf("a renamed alg verified: %v", err)
	}
	for _, h := range []string{`{"alg":"none","kid":"r1","typ":"JWT"}`, `{"alg":"Ed25519","kid":"r1"}`, `{"alg":"EdDSA","kid":"r1"}`,
		`{"alg":"Ed25519","kid":"r1","typ":"JWT","jwk":{}}`, `{"alg":"HS256","kid":"r1","typ":"JWT"}`, `{"alg":"Ed448","kid":"r1","typ":"JWT"}`,
		`{"alg":"ed25519","kid":"r1","typ":"JWT"}`} {
		if _, _, err := VerifyJWS(b64.EncodeToString([]byte(h))+"."+parts[1]+"."+parts[2], keys); err == nil {
			t.Errorf("header %s accepted", h)
		}
	}
}
