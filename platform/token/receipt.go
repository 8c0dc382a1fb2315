package token

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
)

// Decision receipts are compact JWS (RFC 7515) signed with Ed25519
// (RFC 8037), so any JOSE library verifies them offline against the
// published JWKS. The header is fixed: alg, the key id, typ JWT.
//
// The alg is the fully-specified AlgEd25519 (RFC 9864), which deprecates
// the polymorphic AlgEdDSA; AlgEdDSA is still signed on request for
// verifiers whose JOSE library predates RFC 9864. The signature is the
// same Ed25519 signature under either name, so verification accepts both
// and nothing else (no alg choice beyond these two, no embedded keys),
// picks the key by kid only, and never tries other keys.

// The receipt algorithms.
const (
	// AlgEd25519 is RFC 9864's name for Ed25519 signatures: the default.
	AlgEd25519 = "Ed25519"
	// AlgEdDSA is RFC 8037's polymorphic name, deprecated by RFC 9864,
	// kept for older verifiers.
	AlgEdDSA = "EdDSA"
)

// ErrReceipt is a receipt that is not a well-formed compact JWS with our
// header, or whose signature does not verify under its kid.
var ErrReceipt = errors.New("token: invalid receipt")

// ErrReceiptKey is a receipt signed under a key id this cluster does not
// know (or has dropped).
var ErrReceiptKey = errors.New("token: unknown receipt key")

// MaxReceipt bounds the text of a receipt.
const MaxReceipt = 4096

type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// SignJWS returns the compact JWS of payload under priv, named kid, with
// header alg (AlgEd25519 or AlgEdDSA; anything else is AlgEd25519).
func SignJWS(priv ed25519.PrivateKey, kid, alg string, payload []byte) string {
	if alg != AlgEdDSA {
		alg = AlgEd25519
	}
	h, _ := json.Marshal(jwsHeader{Alg: alg, Kid: kid, Typ: "JWT"})
	in := b64.EncodeToString(h) + "." + b64.EncodeToString(payload)
	return in + "." + b64.EncodeToString(ed25519.Sign(priv, []byte(in)))
}

// VerifyJWS checks text, signed under either alg name, and returns its
// payload and key id. key finds a public key by id (nil: unknown).
func VerifyJWS(text string, key func(kid string) ed25519.PublicKey) ([]byte, string, error) {
	if len(text) > MaxReceipt {
		return nil, "", ErrReceipt
	}
	parts := strings.Split(text, ".")
	if len(parts) != 3 {
		return nil, "", ErrReceipt
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, "", ErrReceipt
	}
	var h map[string]any
	if json.Unmarshal(hb, &h) != nil || len(h) != 3 || (h["alg"] != AlgEd25519 && h["alg"] != AlgEdDSA) || h["typ"] != "JWT" {
		return nil, "", ErrReceipt
	}
	kid, ok := h["kid"].(string)
	if !ok || kid == "" {
		return nil, "", ErrReceipt
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, "", ErrReceipt
	}
	pub := key(kid)
	if pub == nil {
		return nil, kid, ErrReceiptKey
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, kid, ErrReceipt
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, kid, ErrReceipt
	}
	return payload, kid, nil
}
