package agents

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/remitly-oss/httpsig-go"
)

// The RFC 9421 appendix B.1.4 Ed25519 test key.
func rfcTestKey(t *testing.T) ed25519.PrivateKey {
	seed, err := base64.RawURLEncoding.DecodeString("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU")
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// The test vector published in the contract and DESIGN.md.
const (
	vecAgent  = "6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d"
	vecBody   = `{"approval_id":"3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"}`
	vecDigest = "sha-256=:uTYIDQWJGwhg3en0kvlzNNjCFSwFLYVmUZ6l1dFEez0=:"
	vecInput  = `sig1=("@authority" "@path" "content-digest");created=1700000000;expires=1700000300;keyid="6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d";nonce="0123456789abcdef0123456789abcdef";alg="ed25519";tag="web-bot-auth"`
	vecSig    = "sig1=:JnzDsWIHSDIkUkcpjyTAbqccnPVn2YBO1p92QG8WD7DsThEX7L9hLMuuY1lr08WNUXQgUwdrphNVlbogf3D/CA==:"
)

func vecRequest() SignedRequest {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderContentDigest, vecDigest)
	h.Set(HeaderSignatureInput, vecInput)
	h.Set(HeaderSignatureRFC, vecSig)
	return SignedRequest{Method: "POST", Authority: "trustd.example", Path: "/v1/agents/approval/status", Header: h, Body: []byte(vecBody)}
}

func TestHTTPSigTestVector(t *testing.T) {
	priv := rfcTestKey(t)
	d, in, sig := SignHTTPSig(priv, HTTPSigInput{AgentID: vecAgent, Nonce: "0123456789abcdef0123456789abcdef", Created: 1700000000,
		Expires: 1700000300, Authority: "trustd.example", Path: "/v1/agents/approval/status", Body: []byte(vecBody)})
	if d != vecDigest || in != vecInput || sig != vecSig {
		t.Fatalf("the reference signer no longer gives the published vector:\n%s\n%s\n%s", d, in, sig)
	}
	id := uuid.MustParse(vecAgent)
	v := Verifier{Dir: dir{id: {ID: id, Status: StatusActive, Ed25519: priv.Public().(ed25519.PublicKey)}},
		Nonces: &memNonces{m: map[string]int64{}}, Now: func() time.Time { return time.Unix(1700000100, 0) }}
	if _, err := v.VerifyHTTPSig(vecRequest()); err != nil {
		t.Fatalf("the published vector does not verify: %v", err)
	}
	if _, err := v.VerifyHTTPSig(vecRequest()); !errors.Is(err, ErrNonceReused) {
		t.Fatalf("replayed vector: %v", err)
	}
}

func TestVerifyHTTPSig(t *testing.T) {
	priv := rfcTestKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	now := time.Unix(1_800_000_000, 0)
	active := uuid.MustParse("0b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	susp := uuid.MustParse("1b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	nokey := uuid.MustParse("2b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	d := dir{
		active: {ID: active, Status: StatusActive, Ed25519: pub},
		susp:   {ID: susp, Status: StatusSuspended, Ed25519: pub},
		nokey:  {ID: nokey, Status: StatusActive},
	}
	body := []byte(`{"request_id":"r1"}`)
	seq := 0
	// build signs a request; edit may change the input before signing,
	// after may change the headers after signing.
	build := func(edit func(*HTTPSigInput), after func(*SignedRequest)) SignedRequest {
		seq++
		in := HTTPSigInput{AgentID: active.String(), Nonce: "nonce-" + strings.Repeat("x", 10) + string(rune('a'+seq%26)) + uuid.NewString()[:8],
			Created: now.Unix() - 5, Expires: now.Unix() + 60, Authority: "trustd.test:8443", Path: "/v1/agents/decision", Body: body}
		if edit != nil {
			edit(&in)
		}
		dg, input, sig := SignHTTPSig(priv, in)
		h := http.Header{}
		h.Set(HeaderContentDigest, dg)
		h.Set(HeaderSignatureInput, input)
		h.Set(HeaderSignatureRFC, sig)
		r := SignedRequest{Method: "POST", Authority: "trustd.test:8443", Path: "/v1/agents/decision", Header: h, Body: body}
		if after != nil {
			after(&r)
		}
		return r
	}
	tol := DefaultTolerance
	cases := []struct {
		name string
		req  SignedRequest
		want error
	}{
		{"ok", build(nil, nil), nil},
		{"no headers", build(nil, func(r *SignedRequest) { r.Header.Del(HeaderSignatureInput) }), ErrHTTPSigInvalid},
		{"input not a dictionary", build(nil, func(r *SignedRequest) { r.Header.Set(HeaderSignatureInput, "((") }), ErrHTTPSigInvalid},
		{"no web-bot-auth tag", build(nil, func(r *SignedRequest) {
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), `tag="web-bot-auth"`, `tag="other"`, 1))
		}), ErrHTTPSigTag},
		{"two web-bot-auth signatures", build(nil, func(r *SignedRequest) {
			in := r.Header.Get(HeaderSignatureInput)
			r.Header.Set(HeaderSignatureInput, in+", sig2="+strings.TrimPrefix(in, "sig1="))
		}), ErrHTTPSigInvalid},
		{"signature member missing", build(func(in *HTTPSigInput) { in.Label = "other" }, func(r *SignedRequest) {
			r.Header.Set(HeaderSignatureRFC, "sig9=:AAAA:")
		}), ErrHTTPSigInvalid},
		{"alg not ed25519", build(nil, func(r *SignedRequest) {
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), `alg="ed25519"`, `alg="hmac-sha256"`, 1))
		}), ErrHTTPSigParams},
		{"no nonce", build(nil, func(r *SignedRequest) {
			in := r.Header.Get(HeaderSignatureInput)
			i := strings.Index(in, ";nonce=")
			j := strings.Index(in, ";alg=")
			r.Header.Set(HeaderSignatureInput, in[:i]+in[j:])
		}), ErrHTTPSigParams},
		{"created a string", build(nil, func(r *SignedRequest) {
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), ";created=", `;x="1";created=`, 1))
		}), ErrHTTPSigParams},
		{"keyid a thumbprint", build(func(in *HTTPSigInput) { in.AgentID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" }, nil), ErrHTTPSigKeyID},
		{"nonce too short", build(func(in *HTTPSigInput) { in.Nonce = "short" }, nil), ErrHTTPSigNonce},
		{"nonce with a space", build(func(in *HTTPSigInput) { in.Nonce = "0123456789 abcdef" }, nil), ErrHTTPSigNonce},
		{"digest not covered", build(nil, func(r *SignedRequest) {
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), ` "content-digest"`, "", 1))
		}), ErrHTTPSigComponents},
		{"signature-agent present, not covered", build(nil, func(r *SignedRequest) { r.Header.Set(HeaderSignatureAgent, `"https://bot.example"`) }), ErrHTTPSigComponents},
		{"no digest header", build(nil, func(r *SignedRequest) { r.Header.Del(HeaderContentDigest) }), ErrHTTPSigDigest},
		{"digest md5 only", build(nil, func(r *SignedRequest) { r.Header.Set(HeaderContentDigest, "md5=:AAAA:") }), ErrHTTPSigDigest},
		{"tampered body", build(nil, func(r *SignedRequest) { r.Body = []byte(`{"request_id":"r2"}`) }), ErrHTTPSigDigestBody},
		{"unknown agent", build(func(in *HTTPSigInput) { in.AgentID = uuid.NewString() }, nil), ErrUnknownAgent},
		{"suspended", build(func(in *HTTPSigInput) { in.AgentID = susp.String() }, nil), ErrAgentSuspended},
		{"no ed25519 key", build(func(in *HTTPSigInput) { in.AgentID = nokey.String() }, nil), ErrHTTPSigNoKey},
		{"created stale", build(func(in *HTTPSigInput) { in.Created = now.Add(-tol - time.Second).Unix() }, nil), ErrHTTPSigStale},
		{"created future", build(func(in *HTTPSigInput) {
			in.Created = now.Add(tol + time.Second).Unix()
			in.Expires = in.Created + 10
		}, nil), ErrHTTPSigFuture},
		{"expires before created", build(func(in *HTTPSigInput) { in.Expires = in.Created }, nil), ErrHTTPSigExpiresRange},
		{"expires beyond the tolerance", build(func(in *HTTPSigInput) { in.Expires = in.Created + int64(tol/time.Second) + 1 }, nil), ErrHTTPSigExpiresRange},
		{"expired", build(func(in *HTTPSigInput) { in.Created, in.Expires = now.Unix()-20, now.Unix() }, nil), ErrHTTPSigExpired},
		{"other authority", build(nil, func(r *SignedRequest) { r.Authority = "evil.test" }), ErrHTTPSigSignature},
		{"other path", build(nil, func(r *SignedRequest) { r.Path = "/v1/agents/approval/status" }), ErrHTTPSigSignature},
		{"other key", build(nil, func(r *SignedRequest) {
			_, other, _ := ed25519.GenerateKey(nil)
			dg, input, sig := SignHTTPSig(other, HTTPSigInput{AgentID: active.String(), Nonce: "0123456789abcdefXYZ", Created: now.Unix(),
				Expires: now.Unix() + 30, Authority: r.Authority, Path: r.Path, Body: r.Body})
			r.Header.Set(HeaderContentDigest, dg)
			r.Header.Set(HeaderSignatureInput, input)
			r.Header.Set(HeaderSignatureRFC, sig)
		}), ErrHTTPSigSignature},
	}
	n := &memNonces{m: map[string]int64{}}
	v := Verifier{Dir: d, Nonces: n, Now: func() time.Time { return now }}
	for _, c := range cases {
		got, err := v.VerifyHTTPSig(c.req)
		if c.want == nil {
			if err != nil || got.ID != active {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// The nonce is consumed only by a verified request, retained as an HMAC
	// nonce is (created + tolerance + skew), in the same key space.
	ok := build(nil, nil)
	if _, err := v.VerifyHTTPSig(ok); err != nil {
		t.Fatal(err)
	}
	p, _ := selectSignature(ok.Header)
	if exp, found := n.m[NonceKey(active, p.nonce)]; !found || exp != time.Unix(p.created, 0).Add(tol+NonceSkew).UnixNano() {
		t.Fatalf("nonce not stored as documented: %v %v", found, exp)
	}
	if _, err := v.VerifyHTTPSig(ok); !errors.Is(err, ErrNonceReused) {
		t.Fatalf("replay: %v", err)
	}
	// An HMAC request with the same nonce is a reuse too: one store.
	ts := "1800000000"
	hm := Request{Agent: active.String(), Timestamp: ts, Nonce: p.nonce, Body: body}
	d[active] = Identity{ID: active, Status: StatusActive, Ed25519: pub, Keys: []Key{{Secret: []byte("k")}}}
	hm.Signature = Sign([]byte("k"), ts, hm.Nonce, body)
	if _, err := v.Verify(hm); !errors.Is(err, ErrNonceReused) {
		t.Fatalf("HMAC request reusing an RFC 9421 nonce: %v", err)
	}
}

// httpsig-go's own signer, a second independent implementation, produces
// requests the profile accepts.
func TestVerifyHTTPSigFromHTTPSigGoSigner(t *testing.T) {
	priv := rfcTestKey(t)
	id := uuid.New()
	body := `{"approval_id":"x"}`
	req, _ := http.NewRequest("POST", "http://trustd.test:9000/v1/agents/approval/status", strings.NewReader(body))
	s, err := httpsig.NewSigner(httpsig.SigningProfile{Algorithm: httpsig.Algo_ED25519, Fields: httpsig.Fields("@method", "@authority", "@path", "content-digest"),
		Metadata: []httpsig.Metadata{httpsig.MetaCreated, httpsig.MetaExpires, httpsig.MetaKeyID, httpsig.MetaNonce, httpsig.MetaTag}, Label: "agent", ExpiresDuration: 2 * time.Minute},
		httpsig.SigningKey{Key: priv, MetaKeyID: id.String(), MetaTag: WebBotAuthTag})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sign(req); err != nil {
		t.Fatal(err)
	}
	v := Verifier{Dir: dir{id: {ID: id, Status: StatusActive, Ed25519: priv.Public().(ed25519.PublicKey)}}, Nonces: &memNonces{m: map[string]int64{}}}
	r := SignedRequest{Method: "POST", Authority: NormalizeAuthority(req.Host), Path: req.URL.Path, Header: req.Header, Body: []byte(body)}
	if got, err := v.VerifyHTTPSig(r); err != nil || got.ID != id {
		t.Fatalf("httpsig-go signed request: %v (%s)", err, req.Header.Get("Signature-Input"))
	}
}

func TestNormalizeAuthority(t *testing.T) {
	for in, want := range map[string]string{"Trustd.Example:443": "trustd.example", "a.test:80": "a.test", "a.test:8080": "a.test:8080", "[::1]:443": "[::1]", "127.0.0.1:55": "127.0.0.1:55"} {
		if got := NormalizeAuthority(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestUsesHTTPSig(t *testing.T) {
	h := http.Header{}
	if rfc, err := UsesHTTPSig(h); rfc || err != nil {
		t.Fatal("empty header")
	}
	h.Set(HeaderSignatureInput, "x")
	if rfc, err := UsesHTTPSig(h); !rfc || err != nil {
		t.Fatal("signature-input")
	}
	h.Set(HeaderSignature, "v1=")
	if _, err := UsesHTTPSig(h); !errors.Is(err, ErrSchemeAmbiguous) {
		t.Fatal("both")
	}
}
