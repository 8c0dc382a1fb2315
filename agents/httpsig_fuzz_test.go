package agents

import (
	"crypto/ed25519"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
)

// FuzzVerifyHTTPSig: the RFC 9421 header parsers never panic, and nothing
// but a body the key holder signed is ever accepted (the only signature
// the fuzzer can start from is the published vector's).
func FuzzVerifyHTTPSig(f *testing.F) {
	f.Add(vecInput, vecSig, vecDigest, vecBody, "")
	f.Add(vecInput+", "+vecInput, vecSig, vecDigest, vecBody, `"https://a.example"`)
	f.Add(`sig1=("@authority");tag="web-bot-auth";created=1;expires=2;keyid="x";nonce="y"`, "sig1=:AAAA:", "sha-512=:AAAA:", "", "x")
	f.Add("((", "))", "=", "{}", "")
	seed, _ := uuid.Parse(vecAgent)
	f.Fuzz(func(t *testing.T, input, sig, digest, body, agent string) {
		priv := rfcTestKey(t)
		v := Verifier{Dir: dir{seed: {ID: seed, Status: StatusActive, Ed25519: priv.Public().(ed25519.PublicKey)}},
			Nonces: &memNonces{m: map[string]int64{}}, Now: func() time.Time { return time.Unix(1700000100, 0) }}
		h := http.Header{}
		h.Set(HeaderSignatureInput, input)
		h.Set(HeaderSignatureRFC, sig)
		h.Set(HeaderContentDigest, digest)
		if agent != "" {
			h.Set(HeaderSignatureAgent, agent)
		}
		_, err := v.VerifyHTTPSig(SignedRequest{Method: "POST", Authority: "trustd.example", Path: "/v1/agents/approval/status", Header: h, Body: []byte(body)})
		if err == nil && body != vecBody {
			t.Fatalf("accepted a body nobody signed: %q %q %q %q", input, sig, digest, body)
		}
	})
}
