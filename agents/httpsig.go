package agents

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sfv "github.com/dunglas/httpsfv"
	"github.com/google/uuid"
	"github.com/remitly-oss/httpsig-go"

	"github.com/trustd/trustd/platform/errcode"
)

// HTTP Message Signatures (RFC 9421) in the Web Bot Auth profile: the
// second way a registered agent with an ed25519_public_key signs its
// requests. The contract's agent_http_signature scheme and DESIGN.md
// ("Signature scheme v2") describe it for client authors.
//
// Two profiles, chosen per agent: ProfileWebBotAuth (the default) accepts
// what the Web Bot Auth draft specifies and its signers send by default
// (keyid the JWK thumbprint or the agent_id, "@authority" covered, plus
// "signature-agent" when sent); ProfileStrict also requires "@path" and
// "content-digest" and the agent_id as keyid, so the signature binds the
// operation and the body as the HMAC scheme does.

// The RFC 9421 profiles of an agent.
const (
	ProfileWebBotAuth = "web-bot-auth"
	ProfileStrict     = "strict"
)

// HeaderWorkspace names the workspace whose agents a JWK thumbprint keyid
// is looked up among (the workspace_id).
const HeaderWorkspace = "X-Service-Workspace"

// Headers of an RFC 9421 signed request.
const (
	HeaderSignatureInput = "Signature-Input"
	HeaderSignatureRFC   = "Signature"
	HeaderContentDigest  = "Content-Digest"
	HeaderSignatureAgent = "Signature-Agent"
)

// WebBotAuthTag is the tag parameter every accepted signature carries.
const WebBotAuthTag = "web-bot-auth"

// The failures of RFC 9421 verification, each with its own code. Unknown,
// suspended agents and reused nonces answer the same codes as the HMAC
// scheme (agent-unknown, agent-suspended, agent-nonce-reused): one agent
// registry, one nonce store.
var (
	ErrSchemeAmbiguous     = errcode.New("agent-signature-ambiguous", errcode.Unauthenticated, "the request carries both an X-Service-Signature and an RFC 9421 Signature or Signature-Input: use exactly one scheme")
	ErrHTTPSigInvalid      = errcode.New("agent-httpsig-invalid", errcode.Unauthenticated, "Signature-Input or Signature is missing or not an RFC 8941 dictionary, there is more than one signature tagged web-bot-auth, its Signature member is missing or not a byte sequence, or a covered component cannot be computed")
	ErrHTTPSigTag          = errcode.New("agent-httpsig-tag-missing", errcode.Unauthenticated, "no signature in Signature-Input has tag=\"web-bot-auth\"")
	ErrHTTPSigParams       = errcode.New("agent-httpsig-params-invalid", errcode.Unauthenticated, "the signature's parameters are not exactly created and expires (integers), keyid, nonce and tag (strings) and optionally alg=\"ed25519\"")
	ErrHTTPSigKeyID        = errcode.New("agent-httpsig-keyid-invalid", errcode.Unauthenticated, "keyid is neither an agent_id (a UUID in its 36-character form) nor an RFC 7638 JWK thumbprint (43 base64url characters) sent with X-Service-Workspace; or the thumbprint names more than one agent of the workspace; or the agent's profile is strict and keyid is not its agent_id")
	ErrHTTPSigNonce        = errcode.New("agent-httpsig-nonce-invalid", errcode.Unauthenticated, "nonce is not 16–128 characters of A-Z a-z 0-9 + / = . _ ~ -")
	ErrHTTPSigComponents   = errcode.New("agent-httpsig-components-missing", errcode.Unauthenticated, "the signature does not cover \"@authority\" and \"signature-agent\" (when that header is present), or, for an agent with the strict profile, \"@path\" and \"content-digest\" (when there is a body)")
	ErrHTTPSigDigest       = errcode.New("agent-httpsig-digest-invalid", errcode.Unauthenticated, "Content-Digest is covered or required (strict profile) but missing, sent more than once, not an RFC 8941 dictionary, or has no sha-256 or sha-512 byte sequence")
	ErrHTTPSigDigestBody   = errcode.New("agent-httpsig-digest-mismatch", errcode.Unauthenticated, "Content-Digest does not match the body as received")
	ErrHTTPSigNoKey        = errcode.New("agent-httpsig-no-key", errcode.Unauthenticated, "the agent has no ed25519_public_key registered, so it cannot sign with HTTP Message Signatures")
	ErrHTTPSigStale        = errcode.New("agent-httpsig-created-stale", errcode.Unauthenticated, "the signature's created is older than the tolerance")
	ErrHTTPSigFuture       = errcode.New("agent-httpsig-created-future", errcode.Unauthenticated, "the signature's created is further in the future than the tolerance")
	ErrHTTPSigExpiresRange = errcode.New("agent-httpsig-expires-invalid", errcode.Unauthenticated, "the signature's expires is not after created, or more than the tolerance after it")
	ErrHTTPSigExpired      = errcode.New("agent-httpsig-expired", errcode.Unauthenticated, "the signature's expires has passed")
	ErrHTTPSigSignature    = errcode.New("agent-httpsig-signature-invalid", errcode.Unauthenticated, "the Ed25519 signature does not verify against the agent's ed25519_public_key over the RFC 9421 signature base")
)

// HTTPSigCodes lists the codes of the RFC 9421 scheme for the contract.
func HTTPSigCodes() []*errcode.Code {
	return []*errcode.Code{ErrSchemeAmbiguous, ErrHTTPSigInvalid, ErrHTTPSigTag, ErrHTTPSigParams, ErrHTTPSigKeyID, ErrHTTPSigNonce,
		ErrHTTPSigComponents, ErrHTTPSigDigest, ErrHTTPSigDigestBody, ErrHTTPSigNoKey, ErrHTTPSigStale, ErrHTTPSigFuture,
		ErrHTTPSigExpiresRange, ErrHTTPSigExpired, ErrHTTPSigSignature}
}

// SignedRequest is an RFC 9421 signed request as received. Authority is the
// Host header as received; Path the request path without the query; Header
// every request header (each line one value).
type SignedRequest struct {
	Method, Authority, Path, RawQuery string
	Header                            http.Header
	Body                              []byte
}

// UsesHTTPSig tells which scheme a request uses: RFC 9421 when it carries a
// Signature-Input or Signature header, HMAC otherwise; both at once is
// ErrSchemeAmbiguous.
func UsesHTTPSig(h http.Header) (bool, error) {
	rfc := len(h.Values(HeaderSignatureInput)) > 0 || len(h.Values(HeaderSignatureRFC)) > 0
	if rfc && (len(h.Values(HeaderSignature)) > 0 || len(h.Values(HeaderAgent)) > 0) {
		return false, ErrSchemeAmbiguous
	}
	return rfc, nil
}

// NormalizeAuthority is @authority as RFC 9421 section 2.2.3 derives it:
// the Host header lowercased, without a default port (:80 or :443).
func NormalizeAuthority(host string) string {
	a := strings.ToLower(strings.TrimSpace(host))
	for _, p := range []string{":80", ":443"} {
		if strings.HasSuffix(a, p) && !strings.HasSuffix(a, "]") {
			return strings.TrimSuffix(a, p)
		}
	}
	return a
}

type sigParams struct {
	agent            uuid.UUID // keyid as an agent_id, when it is one
	label            string
	created, expires int64
	keyid, nonce     string
	components       []string
}

// selectSignature finds the one signature tagged web-bot-auth and checks
// its parameters' presence and types.
func selectSignature(h http.Header) (sigParams, error) {
	var p sigParams
	inputs, sigs := h.Values(HeaderSignatureInput), h.Values(HeaderSignatureRFC)
	if len(inputs) == 0 || len(sigs) == 0 {
		return p, ErrHTTPSigInvalid.With("both Signature-Input and Signature are required")
	}
	in, err := sfv.UnmarshalDictionary(inputs)
	if err != nil {
		return p, ErrHTTPSigInvalid.With("Signature-Input is not an RFC 8941 dictionary")
	}
	sd, err := sfv.UnmarshalDictionary(sigs)
	if err != nil {
		return p, ErrHTTPSigInvalid.With("Signature is not an RFC 8941 dictionary")
	}
	var list sfv.InnerList
	for _, name := range in.Names() {
		m, _ := in.Get(name)
		il, ok := m.(sfv.InnerList)
		if !ok {
			continue
		}
		if tag, _ := il.Params.Get("tag"); tag != WebBotAuthTag {
			continue
		}
		if p.label != "" {
			return p, ErrHTTPSigInvalid.With("more than one signature is tagged web-bot-auth")
		}
		p.label, list = name, il
	}
	if p.label == "" {
		return p, ErrHTTPSigTag
	}
	if m, ok := sd.Get(p.label); !ok {
		return p, ErrHTTPSigInvalid.With("Signature has no member %q", p.label)
	} else if it, ok := m.(sfv.Item); !ok {
		return p, ErrHTTPSigInvalid.With("Signature member %q is not a byte sequence", p.label)
	} else if _, ok := it.Value.([]byte); !ok {
		return p, ErrHTTPSigInvalid.With("Signature member %q is not a byte sequence", p.label)
	}
	have := map[string]bool{}
	for _, name := range list.Params.Names() {
		v, _ := list.Params.Get(name)
		ok := false
		switch name {
		case "created":
			p.created, ok = v.(int64)
		case "expires":
			p.expires, ok = v.(int64)
		case "keyid":
			p.keyid, ok = v.(string)
		case "nonce":
			p.nonce, ok = v.(string)
		case "tag":
			ok = true
		case "alg":
			ok = v == "ed25519"
		}
		if !ok {
			return p, ErrHTTPSigParams.With("parameter %q is unknown or has the wrong type or value", name)
		}
		have[name] = true
	}
	for _, name := range []string{"created", "expires", "keyid", "nonce"} {
		if !have[name] {
			return p, ErrHTTPSigParams.With("parameter %q is required", name)
		}
	}
	for _, it := range list.Items {
		name, ok := it.Value.(string)
		if !ok {
			return p, ErrHTTPSigInvalid.With("a covered component is not a string")
		}
		p.components = append(p.components, name)
	}
	return p, nil
}

// resolveKeyID finds the agent keyid names: by agent_id, or by JWK
// thumbprint among the agents of the workspace the request names in
// X-Service-Workspace only, never across workspaces (a tenant may
// register any public key on its own agents, public keys being public).
func (v *Verifier) resolveKeyID(r SignedRequest, p sigParams, byThumbprint bool) (Identity, error) {
	if !byThumbprint {
		ag, ok := v.Dir.Agent(p.agent)
		if !ok {
			return Identity{}, ErrUnknownAgent
		}
		return ag, nil
	}
	ws := r.Header.Values(HeaderWorkspace)
	if len(ws) != 1 || ws[0] == "" {
		return Identity{}, ErrHTTPSigKeyID.With("a JWK thumbprint keyid needs one %s header naming the agent's workspace", HeaderWorkspace)
	}
	td, ok := v.Dir.(ThumbprintDirectory)
	if !ok {
		return Identity{}, ErrHTTPSigKeyID.With("this verifier resolves no JWK thumbprints: use the agent_id as keyid")
	}
	found := td.AgentsByThumbprint(ws[0], p.keyid)
	switch len(found) {
	case 0:
		return Identity{}, ErrUnknownAgent
	case 1:
		return found[0], nil
	}
	return Identity{}, ErrHTTPSigKeyID.With("the thumbprint names %d agents of the workspace: use the agent_id as keyid", len(found))
}

// validThumbprint is the shape of an RFC 7638 SHA-256 thumbprint: 43
// base64url characters (32 bytes, no padding).
func validThumbprint(s string) bool {
	if len(s) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

func validHTTPSigNonce(s string) bool {
	if len(s) < 16 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+/=._~-", c) >= 0) {
			return false
		}
	}
	return true
}

// requiredComponents are what a signature must cover for this request
// under profile: "@authority" (the Web Bot Auth draft's one required
// component) and "signature-agent" when that header is sent; the strict
// profile adds "@path" and, with a body, "content-digest".
func requiredComponents(r SignedRequest, profile string) []string {
	req := []string{"@authority"}
	if profile == ProfileStrict {
		req = append(req, "@path")
		if len(r.Body) > 0 {
			req = append(req, "content-digest")
		}
	}
	if len(r.Header.Values(HeaderSignatureAgent)) > 0 {
		req = append(req, "signature-agent")
	}
	return req
}

// checkDigest verifies Content-Digest (RFC 9530) against the body: at least
// one of sha-256 and sha-512, and every one of them present must match.
func checkDigest(h http.Header, body []byte) error {
	vals := h.Values(HeaderContentDigest)
	if len(vals) != 1 {
		return ErrHTTPSigDigest
	}
	d, err := sfv.UnmarshalDictionary(vals)
	if err != nil {
		return ErrHTTPSigDigest
	}
	n := 0
	for _, alg := range d.Names() {
		var sum []byte
		switch alg {
		case "sha-256":
			s := sha256.Sum256(body)
			sum = s[:]
		case "sha-512":
			s := sha512.Sum512(body)
			sum = s[:]
		default:
			continue
		}
		m, _ := d.Get(alg)
		it, ok := m.(sfv.Item)
		if !ok {
			return ErrHTTPSigDigest
		}
		want, ok := it.Value.([]byte)
		if !ok {
			return ErrHTTPSigDigest
		}
		if subtle.ConstantTimeCompare(want, sum) != 1 {
			return ErrHTTPSigDigestBody
		}
		n++
	}
	if n == 0 {
		return ErrHTTPSigDigest
	}
	return nil
}

// VerifyHTTPSig authenticates an RFC 9421 signed request (Web Bot Auth
// profile) and consumes its nonce in the same store, key space and
// retention as the HMAC scheme's. Checks run from cheapest to dearest;
// the nonce is consumed only after the signature verified.
func (v *Verifier) VerifyHTTPSig(r SignedRequest) (Identity, error) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	p, err := selectSignature(r.Header)
	if err != nil {
		return Identity{}, err
	}
	byThumbprint := false
	if id, err := uuid.Parse(p.keyid); err == nil && len(p.keyid) == 36 {
		p.agent = id
	} else if validThumbprint(p.keyid) {
		byThumbprint = true
	} else {
		return Identity{}, ErrHTTPSigKeyID
	}
	if !validHTTPSigNonce(p.nonce) {
		return Identity{}, ErrHTTPSigNonce
	}
	ag, err := v.resolveKeyID(r, p, byThumbprint)
	if err != nil {
		return Identity{}, err
	}
	if ag.Status != StatusActive {
		return Identity{}, ErrAgentSuspended
	}
	if len(ag.Ed25519) != ed25519.PublicKeySize {
		return Identity{}, ErrHTTPSigNoKey
	}
	if byThumbprint && ag.Profile == ProfileStrict {
		return Identity{}, ErrHTTPSigKeyID.With("the agent's profile is strict: keyid must be its agent_id")
	}
	covered := map[string]bool{}
	for _, c := range p.components {
		covered[c] = true
	}
	for _, c := range requiredComponents(r, ag.Profile) {
		if !covered[c] {
			return Identity{}, ErrHTTPSigComponents.With("%q is not covered", c)
		}
	}
	// A covered digest must match the body; the strict profile requires
	// one whenever there is a body. In the Web Bot Auth profile an
	// uncovered body is not authenticated (DESIGN.md).
	if covered["content-digest"] || (ag.Profile == ProfileStrict && len(r.Body) > 0) {
		if err := checkDigest(r.Header, r.Body); err != nil {
			return Identity{}, err
		}
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := now()
	tol := v.tolerance()
	created, expires := time.Unix(p.created, 0), time.Unix(p.expires, 0)
	switch {
	case created.Before(t.Add(-tol)):
		return Identity{}, ErrHTTPSigStale
	case created.After(t.Add(tol)):
		return Identity{}, ErrHTTPSigFuture
	case !expires.After(created) || expires.After(created.Add(tol)):
		return Identity{}, ErrHTTPSigExpiresRange
	case !t.Before(expires):
		return Identity{}, ErrHTTPSigExpired
	}
	if err := verifyRFC9421(r, p.label, p.keyid, ag); err != nil {
		// The identity goes with a bad signature so the caller can count
		// the failure against the agent, whatever form keyid had.
		return Identity{ID: ag.ID, Workspace: ag.Workspace}, err
	}
	first, err := v.Nonces.Consume(NonceKey(ag.ID, p.nonce), created.Add(tol+NonceSkew).UnixNano())
	if err != nil {
		return Identity{}, err
	}
	if !first {
		return Identity{}, ErrNonceReused
	}
	return ag, nil
}

// profileFor is the httpsig-go verification profile of the Web Bot Auth
// profile: the chosen label, Ed25519 only, "@authority" and
// created/expires/keyid/nonce/tag required, alg allowed (the strict
// profile's further components are checked by VerifyHTTPSig). Time is enforced by VerifyHTTPSig itself, with the
// same tolerance in both directions as the HMAC scheme (httpsig-go's own
// window is one-sided: five minutes back, one minute ahead).
func profileFor(label string) httpsig.VerifyProfile {
	return httpsig.VerifyProfile{
		SignatureLabel:         label,
		AllowedAlgorithms:      []httpsig.Algorithm{httpsig.Algo_ED25519},
		RequiredFields:         httpsig.Fields("@authority"),
		RequiredMetadata:       []httpsig.Metadata{httpsig.MetaCreated, httpsig.MetaExpires, httpsig.MetaKeyID, httpsig.MetaNonce, httpsig.MetaTag},
		DisableTimeEnforcement: true,
	}
}

type agentKey struct {
	keyid string // as the signature names the agent: agent_id or thumbprint
	id    Identity
}

func (k agentKey) FetchByKeyID(_ context.Context, _ http.Header, keyID string) (httpsig.KeySpecer, error) {
	if keyID != k.keyid {
		return nil, errors.New("keyid is not the agent verified")
	}
	return httpsig.KeySpec{KeyID: keyID, Algo: httpsig.Algo_ED25519, PubKey: ed25519.PublicKey(k.id.Ed25519)}, nil
}

func (k agentKey) Fetch(context.Context, http.Header, httpsig.MetadataProvider) (httpsig.KeySpecer, error) {
	return nil, errors.New("keyid is required")
}

// verifyRFC9421 rebuilds the request for httpsig-go, which computes the
// signature base (RFC 9421 section 2.5) and checks the Ed25519 signature.
func verifyRFC9421(r SignedRequest, label, keyid string, ag Identity) error {
	req := &http.Request{Method: r.Method, Host: r.Authority, Header: r.Header.Clone(),
		URL: &url.URL{Path: r.Path, RawQuery: r.RawQuery}, Body: io.NopCloser(bytes.NewReader(r.Body))}
	req = req.WithContext(context.Background())
	_, err := httpsig.Verify(req, agentKey{keyid: keyid, id: ag}, profileFor(label))
	if err == nil {
		return nil
	}
	var se *httpsig.SignatureError
	if errors.As(err, &se) {
		switch se.Code {
		case httpsig.ErrSigVerification:
			return ErrHTTPSigSignature
		case httpsig.ErrNoSigWrongDigest:
			return ErrHTTPSigDigestBody
		case httpsig.ErrSigInvalidSignature:
			return ErrHTTPSigSignature.With("%s", se.Message)
		}
		return ErrHTTPSigInvalid.With("%s", se.Message)
	}
	return ErrHTTPSigInvalid.With("%s", err.Error())
}

// HTTPSigInput is what SignHTTPSig signs: the request as the server will
// see it and the signature's parameters.
type HTTPSigInput struct {
	AgentID          string // the keyid
	Nonce            string
	Created, Expires int64
	Authority, Path  string // @authority as NormalizeAuthority gives it; @path without the query
	Body             []byte
	Label            string // default "sig1"
}

// SignHTTPSig is the reference signer of the scheme (the contract's test
// vector is made with it): it returns the Content-Digest, Signature-Input
// and Signature header values of a request covering "@authority", "@path"
// and "content-digest", with created, expires, keyid, nonce, alg and tag.
func SignHTTPSig(priv ed25519.PrivateKey, in HTTPSigInput) (digest, input, signature string) {
	label := in.Label
	if label == "" {
		label = "sig1"
	}
	sum := sha256.Sum256(in.Body)
	digest = "sha-256=:" + b64std(sum[:]) + ":"
	params := `("@authority" "@path" "content-digest");created=` + itoa(in.Created) + `;expires=` + itoa(in.Expires) +
		`;keyid="` + in.AgentID + `";nonce="` + in.Nonce + `";alg="ed25519";tag="` + WebBotAuthTag + `"`
	base := SignatureBase(in.Authority, in.Path, digest, params)
	return digest, label + "=" + params, label + "=:" + b64std(ed25519.Sign(priv, []byte(base))) + ":"
}

// SignatureBase is the RFC 9421 signature base of a request covering
// "@authority", "@path" and "content-digest" in that order: one line per
// component, `"name": value`, joined by line feeds, then the
// "@signature-params" line, with no final line feed.
func SignatureBase(authority, path, digest, params string) string {
	return `"@authority": ` + authority + "\n" + `"@path": ` + path + "\n" + `"content-digest": ` + digest + "\n" +
		`"@signature-params": ` + params
}

func b64std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func itoa(n int64) string    { return strconv.FormatInt(n, 10) }

// HTTPSigKeyID is the keyid of the request's web-bot-auth signature, or ""
// (for counting failed signatures per agent).
func HTTPSigKeyID(h http.Header) string {
	p, err := selectSignature(h)
	if err != nil {
		return ""
	}
	return p.keyid
}
