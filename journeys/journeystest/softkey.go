// Package journeystest holds test helpers for journeys: a software
// passkey authenticator that answers WebAuthn options as a browser with a
// platform authenticator would (attestation none, ES256, user present and
// verified), so node and cluster tests can complete device_authorization
// journeys without a browser. Tests only; never imported by the service.
package journeystest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Authenticator is one software passkey: a P-256 key, a credential id and
// a sign counter.
type Authenticator struct {
	Origin  string
	key     *ecdsa.PrivateKey
	credID  []byte
	Counter uint32
	// UV reports user verification; false makes it an authenticator that
	// only tests user presence.
	UV bool
}

// New returns an authenticator for pages at origin.
func New(origin string) *Authenticator {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &Authenticator{Origin: origin, key: k, credID: id, UV: true}
}

var b64 = base64.RawURLEncoding

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func (a *Authenticator) flags(attested bool) byte {
	f := byte(0x01) // user present
	if a.UV {
		f |= 0x04
	}
	if attested {
		f |= 0x40
	}
	return f
}

func (a *Authenticator) authData(rpID string, attested bool) []byte {
	h := sha256.Sum256([]byte(rpID))
	b := append([]byte{}, h[:]...)
	b = append(b, a.flags(attested))
	b = binary.BigEndian.AppendUint32(b, a.Counter)
	if attested {
		b = append(b, make([]byte, 16)...) // AAGUID
		b = binary.BigEndian.AppendUint16(b, uint16(len(a.credID)))
		b = append(b, a.credID...)
		b = append(b, a.coseKey()...)
	}
	return b
}

func (a *Authenticator) coseKey() []byte {
	x := a.key.X.FillBytes(make([]byte, 32))
	y := a.key.Y.FillBytes(make([]byte, 32))
	b := []byte{0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20}
	b = append(b, x...)
	b = append(b, 0x22, 0x58, 0x20)
	return append(b, y...)
}

func cborBytes(b []byte) []byte {
	switch {
	case len(b) < 24:
		return append([]byte{0x40 | byte(len(b))}, b...)
	case len(b) < 256:
		return append([]byte{0x58, byte(len(b))}, b...)
	}
	return append(binary.BigEndian.AppendUint16([]byte{0x59}, uint16(len(b))), b...)
}

func (a *Authenticator) clientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	return b
}

// Create answers PublicKeyCredentialCreationOptions (as JSON-decoded)
// with a PublicKeyCredential in its JSON form.
func (a *Authenticator) Create(options map[string]any) (map[string]any, error) {
	rp, _ := options["rp"].(map[string]any)
	rpID := str(rp, "id")
	challenge := str(options, "challenge")
	if rpID == "" || challenge == "" {
		return nil, fmt.Errorf("journeystest: creation options without rp.id or challenge: %v", options)
	}
	ad := a.authData(rpID, true)
	att := []byte{0xa3, 0x63, 'f', 'm', 't', 0x64, 'n', 'o', 'n', 'e', 0x67, 'a', 't', 't', 'S', 't', 'm', 't', 0xa0,
		0x68, 'a', 'u', 't', 'h', 'D', 'a', 't', 'a'}
	att = append(att, cborBytes(ad)...)
	return map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64.EncodeToString(a.clientData("webauthn.create", challenge)),
			"attestationObject": b64.EncodeToString(att), "transports": []string{"internal"}},
		"clientExtensionResults": map[string]any{}}, nil
}

// Get answers PublicKeyCredentialRequestOptions with an assertion; the
// counter increases first, as a counting authenticator's does.
func (a *Authenticator) Get(options map[string]any, userHandle []byte) (map[string]any, error) {
	rpID, challenge := str(options, "rpId"), str(options, "challenge")
	if rpID == "" || challenge == "" {
		return nil, fmt.Errorf("journeystest: request options without rpId or challenge: %v", options)
	}
	a.Counter++
	ad := a.authData(rpID, false)
	cd := a.clientData("webauthn.get", challenge)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		return nil, err
	}
	resp := map[string]any{"clientDataJSON": b64.EncodeToString(cd), "authenticatorData": b64.EncodeToString(ad),
		"signature": b64.EncodeToString(sig)}
	if userHandle != nil {
		resp["userHandle"] = b64.EncodeToString(userHandle)
	}
	return map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response": resp, "clientExtensionResults": map[string]any{}}, nil
}
