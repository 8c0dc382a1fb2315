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

	"github.com/trustd/trustd/platform/catalog"
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
	// The strict profile: the table below is its contract; the Web Bot
	// Auth default is TestVerifyHTTPSigWebBotAuthProfile.
	d := dir{
		active: {ID: active, Status: StatusActive, Ed25519: pub, Profile: ProfileStrict},
		susp:   {ID: susp, Status: StatusSuspended, Ed25519: pub, Profile: ProfileStrict},
		nokey:  {ID: nokey, Status: StatusActive, Profile: ProfileStrict},
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
	d[active] = Identity{ID: active, Status: StatusActive, Ed25519: pub, Profile: ProfileStrict, Keys: []Key{{Secret: []byte("k")}}}
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

// signWBA signs like web-bot-auth's signatureHeaders with its defaults:
// only "@authority" (and "signature-agent" when sent) covered, no
// Content-Digest, keyid as given (its signerFromJWK uses the thumbprint),
// a 64-byte base64 nonce, alg and tag.
func signWBA(priv ed25519.PrivateKey, keyid, authority, nonce string, created, expires int64, signatureAgent string) http.Header {
	comps := `("@authority")`
	base := `"@authority": ` + authority + "\n"
	if signatureAgent != "" {
		comps = `("@authority" "signature-agent")`
		base += `"signature-agent": ` + signatureAgent + "\n"
	}
	params := comps + `;created=` + itoa(created) + `;keyid="` + keyid + `";alg="ed25519";expires=` + itoa(expires) + `;nonce="` + nonce + `";tag="web-bot-auth"`
	base += `"@signature-params": ` + params
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if signatureAgent != "" {
		h.Set(HeaderSignatureAgent, signatureAgent)
	}
	h.Set(HeaderSignatureInput, "sig1="+params)
	h.Set(HeaderSignatureRFC, "sig1=:"+b64std(ed25519.Sign(priv, []byte(base)))+":")
	return h
}

func TestWebBotAuthThumbprintOfTheRFC9421TestKey(t *testing.T) {
	// The thumbprint web-bot-auth's jwkToKeyID gives the RFC 9421 B.1.4 key.
	if got := catalog.Ed25519Thumbprint(rfcTestKey(t).Public().(ed25519.PublicKey)); got != "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" {
		t.Fatalf("thumbprint %s", got)
	}
}

func TestVerifyHTTPSigWebBotAuthProfile(t *testing.T) {
	priv := rfcTestKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	tp := catalog.Ed25519Thumbprint(pub)
	now := time.Unix(1_800_000_000, 0)
	mine := uuid.MustParse("3b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	strict := uuid.MustParse("4b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	thief := uuid.MustParse("5b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	twinA := uuid.MustParse("6b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	twinB := uuid.MustParse("7b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	otherPub := otherPriv.Public().(ed25519.PublicKey)
	_, twinPriv, _ := ed25519.GenerateKey(nil)
	twinPub := twinPriv.Public().(ed25519.PublicKey)
	d := dir{
		// ws-a's agent with the RFC key, default profile.
		mine: {ID: mine, Workspace: "ws-a", Status: StatusActive, Ed25519: pub},
		// ws-s's agent with another key, strict profile.
		strict: {ID: strict, Workspace: "ws-s", Status: StatusActive, Ed25519: otherPub, Profile: ProfileStrict},
		// ws-b registered ws-a's public key on its own agent.
		thief: {ID: thief, Workspace: "ws-b", Status: StatusActive, Ed25519: pub},
		// one key on two agents of ws-t.
		twinA: {ID: twinA, Workspace: "ws-t", Status: StatusActive, Ed25519: twinPub, Profile: ProfileWebBotAuth},
		twinB: {ID: twinB, Workspace: "ws-t", Status: StatusActive, Ed25519: twinPub, Profile: ProfileWebBotAuth},
	}
	v := Verifier{Dir: d, Nonces: &memNonces{m: map[string]int64{}}, Now: func() time.Time { return now }}
	seq := 0
	nonce := func() string {
		seq++
		return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+seq%26)), 40) + uuid.NewString()[:24]))
	}
	const authority = "trustd.test:8443"
	body := []byte(`{"request_id":"r1"}`)
	req := func(h http.Header, ws string) SignedRequest {
		if ws != "" {
			h.Set(HeaderWorkspace, ws)
		}
		return SignedRequest{Method: "POST", Authority: authority, Path: "/v1/agents/decision", Header: h, Body: body}
	}
	c, e := now.Unix()-1, now.Unix()+60
	tests := []struct {
		name string
		req  SignedRequest
		want uuid.UUID
		err  error
	}{
		{"web-bot-auth's defaults with the thumbprint keyid resolve in the named workspace", req(signWBA(priv, tp, authority, nonce(), c, e, ""), "ws-a"), mine, nil},
		{"the same key named in the other workspace is that workspace's agent, never ws-a's", req(signWBA(priv, tp, authority, nonce(), c, e, ""), "ws-b"), thief, nil},
		{"a signed Signature-Agent is accepted", req(signWBA(priv, tp, authority, nonce(), c, e, `"https://bot.example"`), "ws-a"), mine, nil},
		{"the agent_id as keyid needs no workspace header", req(signWBA(priv, mine.String(), authority, nonce(), c, e, ""), ""), mine, nil},
		{"a thumbprint without X-Service-Workspace is refused", req(signWBA(priv, tp, authority, nonce(), c, e, ""), ""), uuid.Nil, ErrHTTPSigKeyID},
		{"a thumbprint unknown in the named workspace is agent-unknown", req(signWBA(priv, tp, authority, nonce(), c, e, ""), "ws-s"), uuid.Nil, ErrUnknownAgent},
		{"a thumbprint naming two agents of the workspace is ambiguous", req(signWBA(twinPriv, catalog.Ed25519Thumbprint(twinPub), authority, nonce(), c, e, ""), "ws-t"), uuid.Nil, ErrHTTPSigKeyID},
		{"a keyid that is neither form is refused", req(signWBA(priv, "not-a-key", authority, nonce(), c, e, ""), "ws-a"), uuid.Nil, ErrHTTPSigKeyID},
		{"a strict agent refuses its thumbprint", req(signWBA(otherPriv, catalog.Ed25519Thumbprint(otherPub), authority, nonce(), c, e, ""), "ws-s"), uuid.Nil, ErrHTTPSigKeyID},
		{"a strict agent refuses web-bot-auth's default components", req(signWBA(otherPriv, strict.String(), authority, nonce(), c, e, ""), ""), uuid.Nil, ErrHTTPSigComponents},
		{"an uncovered Signature-Agent is refused", func() SignedRequest {
			r := req(signWBA(priv, tp, authority, nonce(), c, e, ""), "ws-a")
			r.Header.Set(HeaderSignatureAgent, `"https://bot.example"`)
			return r
		}(), uuid.Nil, ErrHTTPSigComponents},
		{"another authority breaks the signature", func() SignedRequest {
			r := req(signWBA(priv, tp, authority, nonce(), c, e, ""), "ws-a")
			r.Authority = "evil.test"
			return r
		}(), uuid.Nil, ErrHTTPSigSignature},
		{"a signature by another key under the thumbprint fails", req(signWBA(otherPriv, tp, authority, nonce(), c, e, ""), "ws-a"), uuid.Nil, ErrHTTPSigSignature},
		{"expired", req(signWBA(priv, tp, authority, nonce(), now.Unix()-30, now.Unix()-1, ""), "ws-a"), uuid.Nil, ErrHTTPSigExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.VerifyHTTPSig(tc.req)
			if tc.err == nil {
				if err != nil || got.ID != tc.want {
					t.Fatalf("got %v %v, want agent %v", got.ID, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
		})
	}
	// A covered Content-Digest is checked; replay is refused in the same
	// nonce store, keyed by the agent_id whatever form keyid had.
	dr := build9421(t, priv, tp, authority, body)
	dr.Header.Set(HeaderWorkspace, "ws-a")
	if _, err := v.VerifyHTTPSig(dr); err != nil {
		t.Fatalf("thumbprint keyid with a covered digest: %v", err)
	}
	if _, err := v.VerifyHTTPSig(dr); !errors.Is(err, ErrNonceReused) {
		t.Fatalf("replay: %v", err)
	}
	dr = build9421(t, priv, tp, authority, body)
	dr.Header.Set(HeaderWorkspace, "ws-a")
	dr.Body = []byte(`{"request_id":"r2"}`)
	if _, err := v.VerifyHTTPSig(dr); !errors.Is(err, ErrHTTPSigDigestBody) {
		t.Fatalf("covered digest, other body: %v", err)
	}
}

// idOnly is a Directory that finds agents by id only.
type idOnly struct{ d dir }

func (o idOnly) Agent(id uuid.UUID) (Identity, bool) { return o.d.Agent(id) }

func TestThumbprintKeyIDNeedsAThumbprintDirectory(t *testing.T) {
	priv := rfcTestKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	id := uuid.New()
	now := time.Unix(1_800_000_000, 0)
	v := Verifier{Dir: idOnly{dir{id: {ID: id, Workspace: "ws", Status: StatusActive, Ed25519: pub}}}, Nonces: &memNonces{m: map[string]int64{}},
		Now: func() time.Time { return now }}
	h := signWBA(priv, catalog.Ed25519Thumbprint(pub), "a.test", base64.StdEncoding.EncodeToString(make([]byte, 64)), now.Unix(), now.Unix()+60, "")
	h.Set(HeaderWorkspace, "ws")
	if _, err := v.VerifyHTTPSig(SignedRequest{Method: "POST", Authority: "a.test", Path: "/", Header: h}); !errors.Is(err, ErrHTTPSigKeyID) {
		t.Fatalf("thumbprint keyid with an id-only directory: %v", err)
	}
}

// build9421 signs with the reference signer (components "@authority"
// "@path" "content-digest") under keyid.
func build9421(t *testing.T, priv ed25519.PrivateKey, keyid, authority string, body []byte) SignedRequest {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	dg, input, sig := SignHTTPSig(priv, HTTPSigInput{AgentID: keyid, Nonce: "digest-nonce-" + uuid.NewString()[:12], Created: now.Unix() - 1,
		Expires: now.Unix() + 60, Authority: authority, Path: "/v1/agents/decision", Body: body})
	h := http.Header{}
	h.Set(HeaderContentDigest, dg)
	h.Set(HeaderSignatureInput, input)
	h.Set(HeaderSignatureRFC, sig)
	return SignedRequest{Method: "POST", Authority: authority, Path: "/v1/agents/decision", Header: h, Body: body}
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
