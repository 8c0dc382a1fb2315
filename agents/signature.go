// Package agents is Agent Trust: agents of a workspace sign their requests,
// trustd verifies the signature before decoding the body, refuses replayed
// nonces cluster-wide, and decides what the agent may do. It never sees
// HTTP: callers pass the raw header values and body and get results or
// errcode domain errors back.
package agents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
)

// The headers of a signed agent request (contract: "Agent request signing").
const (
	HeaderAgent     = "X-Service-Agent"     // the agent_id, a UUID
	HeaderTimestamp = "X-Service-Timestamp" // Unix seconds, exactly 10 ASCII digits
	HeaderNonce     = "X-Service-Nonce"     // 16–128 characters of [A-Za-z0-9._~-]
	HeaderSignature = "X-Service-Signature" // "v1=" + 64 lowercase hex digits
)

// SignaturePrefix versions the scheme: v1 is HMAC-SHA-256 over StringToSign.
const SignaturePrefix = "v1="

// Defaults of the timestamp window.
const (
	DefaultTolerance = 300 * time.Second
	// NonceSkew is added to the retention of a used nonce beyond the last
	// instant its timestamp could still be accepted, for clock differences
	// between nodes.
	NonceSkew = 30 * time.Second
)

// The failures of signed-request verification, each with its own code.
var (
	ErrAgentID          = errcode.New("agent-id-invalid", errcode.Unauthenticated, "X-Service-Agent is missing or not a UUID")
	ErrUnknownAgent     = errcode.New("agent-unknown", errcode.Unauthenticated, "no agent with this agent_id exists")
	ErrAgentSuspended   = errcode.New("agent-suspended", errcode.Forbidden, "the agent is suspended")
	ErrTimestampFormat  = errcode.New("agent-timestamp-invalid", errcode.Unauthenticated, "X-Service-Timestamp is missing or not exactly 10 digits")
	ErrTimestampStale   = errcode.New("agent-timestamp-stale", errcode.Unauthenticated, "X-Service-Timestamp is older than the tolerance")
	ErrTimestampFuture  = errcode.New("agent-timestamp-future", errcode.Unauthenticated, "X-Service-Timestamp is further in the future than the tolerance")
	ErrNonceInvalid     = errcode.New("agent-nonce-invalid", errcode.Unauthenticated, "X-Service-Nonce is missing, not 16–128 characters, or has a character outside [A-Za-z0-9._~-]")
	ErrNonceReused      = errcode.New("agent-nonce-reused", errcode.Conflict, "this nonce was already used by this agent")
	ErrSignatureInvalid = errcode.New("agent-signature-invalid", errcode.Unauthenticated, "X-Service-Signature is missing, malformed, or does not match")
	ErrBodyInvalid      = errcode.New("agent-body-invalid", errcode.Invalid, "the signed body is not exactly one JSON object of the documented fields (duplicate or case-folded names, unknown fields, trailing data and invalid UTF-8 are refused)")
)

// Codes lists every code of the package for the contract.
func Codes() []*errcode.Code {
	return []*errcode.Code{ErrAgentID, ErrUnknownAgent, ErrAgentSuspended, ErrTimestampFormat, ErrTimestampStale,
		ErrTimestampFuture, ErrNonceInvalid, ErrNonceReused, ErrSignatureInvalid, ErrBodyInvalid}
}

// StringToSign is what an agent signs: the timestamp header value, a line
// feed (0x0A), the nonce header value, a line feed, and the exact raw body
// bytes as sent (no canonicalisation, no trailing separator).
func StringToSign(timestamp, nonce string, body []byte) []byte {
	b := make([]byte, 0, len(timestamp)+len(nonce)+2+len(body))
	b = append(b, timestamp...)
	b = append(b, '\n')
	b = append(b, nonce...)
	b = append(b, '\n')
	return append(b, body...)
}

// Sign returns the X-Service-Signature value for secret: "v1=" followed by
// the lowercase hex HMAC-SHA-256 of StringToSign under the secret's bytes.
func Sign(secret []byte, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(StringToSign(timestamp, nonce, body))
	return SignaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// Status of an agent.
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
)

// Key is one HMAC secret of an agent; during a rotation's overlap the old
// one stays valid until NotAfter.
type Key struct {
	Secret   []byte
	NotAfter time.Time // zero: no end
}

// Identity is what verification needs to know about an agent.
type Identity struct {
	ID        uuid.UUID
	Workspace string
	Status    string
	Keys      []Key
	// Ed25519 is the agent's public key for RFC 9421 signatures, or nil.
	Ed25519 []byte
	// Profile is how its RFC 9421 signatures are checked: ProfileWebBotAuth
	// (also when empty) or ProfileStrict.
	Profile string
}

// Directory finds agents by id.
type Directory interface {
	Agent(id uuid.UUID) (Identity, bool)
}

// ThumbprintDirectory is a Directory that also finds the agents of one
// workspace by the RFC 7638 thumbprint of their Ed25519 key (Web Bot Auth
// keyids). A Verifier whose Dir is not one refuses thumbprint keyids.
type ThumbprintDirectory interface {
	AgentsByThumbprint(workspace, thumbprint string) []Identity
}

// Nonces consumes single-use ids cluster-wide. Consume reports whether this
// was the first use of id; the id stays used until expires (Unix ns).
type Nonces interface {
	Consume(id string, expires int64) (first bool, err error)
}

// Verifier checks signed agent requests.
type Verifier struct {
	Dir       Directory
	Nonces    Nonces
	Tolerance time.Duration // 0: DefaultTolerance
	Now       func() time.Time
}

// Request is a signed request as received: the four header values and the
// raw body.
type Request struct {
	Agent, Timestamp, Nonce, Signature string
	Body                               []byte
}

// Verify authenticates r and consumes its nonce. Checks run from cheapest
// to dearest; the nonce is consumed only after the signature matched, so
// nobody without the secret can burn an agent's nonces.
func (v *Verifier) Verify(r Request) (Identity, error) {
	id, err := uuid.Parse(r.Agent)
	if err != nil || len(r.Agent) != 36 {
		return Identity{}, ErrAgentID
	}
	ts, err := ParseTimestamp(r.Timestamp)
	if err != nil {
		return Identity{}, err
	}
	if !ValidNonce(r.Nonce) {
		return Identity{}, ErrNonceInvalid
	}
	mac, ok := ParseSignature(r.Signature)
	if !ok {
		return Identity{}, ErrSignatureInvalid.With("X-Service-Signature must be v1= and 64 lowercase hex digits")
	}
	ag, ok := v.Dir.Agent(id)
	if !ok {
		return Identity{}, ErrUnknownAgent
	}
	if ag.Status != StatusActive {
		return Identity{}, ErrAgentSuspended
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := now()
	tol := v.tolerance()
	at := time.Unix(ts, 0)
	if at.Before(t.Add(-tol)) {
		return Identity{}, ErrTimestampStale
	}
	if at.After(t.Add(tol)) {
		return Identity{}, ErrTimestampFuture
	}
	if !matches(ag.Keys, t, StringToSign(r.Timestamp, r.Nonce, r.Body), mac) {
		return Identity{}, ErrSignatureInvalid
	}
	first, err := v.Nonces.Consume(NonceKey(id, r.Nonce), at.Add(tol+NonceSkew).UnixNano())
	if err != nil {
		return Identity{}, err
	}
	if !first {
		return Identity{}, ErrNonceReused
	}
	return ag, nil
}

func (v *Verifier) tolerance() time.Duration {
	if v.Tolerance > 0 {
		return v.Tolerance
	}
	return DefaultTolerance
}

// NonceKey is the marker id of an agent's nonce: its own key space ("agn/"),
// scoped to the agent so agents cannot burn each other's nonces.
func NonceKey(agent uuid.UUID, nonce string) string {
	return actors.SpaceAgentNonce + agent.String() + "/" + nonce
}

// ParseTimestamp reads exactly 10 ASCII digits as Unix seconds.
func ParseTimestamp(s string) (int64, error) {
	if len(s) != 10 {
		return 0, ErrTimestampFormat
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrTimestampFormat
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrTimestampFormat
	}
	return n, nil
}

// ValidNonce reports whether s is a nonce of the v1 scheme: 16 to 128
// characters of A-Z a-z 0-9 . _ ~ -. risk/messaging uses the same scheme.
func ValidNonce(s string) bool {
	if len(s) < 16 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

// ParseSignature reads a v1 signature header: "v1=" and 64 lowercase hex
// digits, the MAC it carries.
func ParseSignature(s string) ([]byte, bool) {
	h, ok := strings.CutPrefix(s, SignaturePrefix)
	if !ok || len(h) != 64 || strings.ToLower(h) != h {
		return nil, false
	}
	b, err := hex.DecodeString(h)
	return b, err == nil
}

// MatchesAny compares mac with the HMAC-SHA-256 of msg under every secret,
// in constant time per secret and trying all of them so the timing does
// not tell which one matched.
func MatchesAny(secrets [][]byte, msg, mac []byte) bool {
	ok := false
	for _, sec := range secrets {
		m := hmac.New(sha256.New, sec)
		m.Write(msg)
		if hmac.Equal(m.Sum(nil), mac) {
			ok = true
		}
	}
	return ok
}

// matches is MatchesAny over the keys valid at t.
func matches(keys []Key, t time.Time, msg, mac []byte) bool {
	var secrets [][]byte
	for _, k := range keys {
		if k.NotAfter.IsZero() || !t.After(k.NotAfter) {
			secrets = append(secrets, k.Secret)
		}
	}
	return MatchesAny(secrets, msg, mac)
}

// DecodeBody decodes a verified body strictly into v.
func DecodeBody(body []byte, v any) error {
	if err := jsonstrict.Unmarshal(body, v); err != nil {
		var d *errcode.Detailed
		if errors.As(err, &d) {
			return err
		}
		return ErrBodyInvalid.With("%s", err.Error())
	}
	return nil
}
