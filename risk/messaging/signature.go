package messaging

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

// The headers of a signed messaging request. The signing string and the
// timestamp and nonce rules are Agent Trust's HMAC scheme (spec 5, 8):
// timestamp, a line feed, nonce, a line feed, the exact raw body; the
// signature is "v1=" and the lowercase hex HMAC-SHA-256 under the
// workspace's messaging secret.
const (
	HeaderWorkspace = "X-Service-Workspace"
	HeaderTimestamp = agents.HeaderTimestamp
	HeaderNonce     = agents.HeaderNonce
	HeaderSignature = agents.HeaderSignature
)

// Tolerance is the accepted distance between X-Service-Timestamp and the
// server clock, either way.
const Tolerance = 300 * time.Second

// nonceSkew keeps a used nonce past the last instant its timestamp could
// still be accepted, for clock differences between nodes.
const nonceSkew = 30 * time.Second

// Limits of the secret rotation overlap.
const (
	DefaultOverlap = time.Hour
	MaxOverlap     = 7 * 24 * time.Hour
)

// Sign returns the X-Service-Signature value of a request (for clients
// and tests).
func Sign(secret []byte, timestamp, nonce string, body []byte) string {
	return agents.Sign(secret, timestamp, nonce, body)
}

// Signed is a signed request as received: the header values and raw body.
type Signed struct {
	Workspace, Timestamp, Nonce, Signature string
	Body                                   []byte
}

// Sealer seals messaging secrets for the catalog (token.Sealer under this
// package's label, the workspace id as associated data): the Raft log and
// snapshots hold only sealed secrets.
type Sealer struct{ s *token.Sealer }

// NewSealer derives the sealing key from the cluster key.
func NewSealer(clusterKey string) *Sealer {
	return &Sealer{s: token.NewSealer(clusterKey, "trustd messaging secret seal v1")}
}

// Rotate returns settings with a new current secret (returned in clear,
// to be shown once) and the previous current secret kept valid for
// overlap. cur may be nil (first secret of the workspace).
func (s *Sealer) Rotate(cur *catalog.MessagingSettings, workspaceID string, overlap time.Duration, now time.Time) (catalog.MessagingSettings, string, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return catalog.MessagingSettings{}, "", errcode.Field("overlap_seconds", "must be 0 to 604800")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return catalog.MessagingSettings{}, "", err
	}
	secret := "msk_" + base64.RawURLEncoding.EncodeToString(raw[:])
	out := catalog.MessagingSettings{WorkspaceID: workspaceID, CreatedAt: now, UpdatedAt: now}
	if cur != nil {
		out.Policy = cur.Policy
		out.CreatedAt = cur.CreatedAt
		for _, k := range cur.Keys {
			switch {
			case k.NotAfter.IsZero() && overlap > 0:
				out.Keys = append(out.Keys, catalog.MessagingKey{Sealed: k.Sealed, NotAfter: now.Add(overlap)})
			case !k.NotAfter.IsZero() && k.NotAfter.After(now):
				out.Keys = append(out.Keys, k)
			}
		}
	}
	// Keys are newest first: keep the newest rotated-out ones within the
	// cap (the one just rotated out above all), then put the new one first.
	if max := catalog.MaxMessagingKeys - 1; len(out.Keys) > max {
		out.Keys = out.Keys[:max]
	}
	out.Keys = append([]catalog.MessagingKey{{Sealed: s.s.Seal(workspaceID, []byte(secret))}}, out.Keys...)
	return out, secret, nil
}

// secrets opens the settings' keys valid at now.
func (s *Sealer) secrets(set *catalog.MessagingSettings, now time.Time) [][]byte {
	var out [][]byte
	for _, k := range set.Keys {
		if !k.NotAfter.IsZero() && !k.NotAfter.After(now) {
			continue
		}
		if b, ok := s.s.Open(set.WorkspaceID, k.Sealed); ok {
			out = append(out, b)
		}
	}
	return out
}

// Valid counts the keys of set valid at now.
func Valid(set *catalog.MessagingSettings, now time.Time) int {
	n := 0
	for _, k := range set.Keys {
		if k.NotAfter.IsZero() || k.NotAfter.After(now) {
			n++
		}
	}
	return n
}

// Verify authenticates r against set (nil when the workspace has no
// settings) and consumes its nonce cluster-wide. Checks run from cheapest
// to dearest; the nonce is consumed only after the signature matched, so
// nobody without the secret can burn the integration's nonces.
func (m *Module) Verify(set *catalog.MessagingSettings, r Signed) error {
	if set == nil || r.Workspace == "" || set.WorkspaceID != r.Workspace {
		return ErrNotConfigured
	}
	ts, err := agents.ParseTimestamp(r.Timestamp)
	if err != nil {
		return ErrTimestampFormat
	}
	if !agents.ValidNonce(r.Nonce) {
		return ErrNonceInvalid
	}
	mac, ok := agents.ParseSignature(r.Signature)
	if !ok {
		return ErrSignatureInvalid.With("X-Service-Signature must be v1= and 64 lowercase hex digits")
	}
	now := m.now()
	if Valid(set, now) == 0 {
		return ErrNotConfigured
	}
	at := time.Unix(ts, 0)
	if at.Before(now.Add(-Tolerance)) || at.After(now.Add(Tolerance)) {
		return ErrTimestampStale
	}
	msg := agents.StringToSign(r.Timestamp, r.Nonce, r.Body)
	if !agents.MatchesAny(m.sealer.secrets(set, now), msg, mac) {
		return ErrSignatureInvalid
	}
	c := &actors.Consume{ID: nonceKey(r.Workspace, r.Nonce), Expires: at.Add(Tolerance + nonceSkew).UnixNano()}
	if err := m.ask.Ask(c.ID, c); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if !c.First {
		return ErrNonceReused
	}
	return nil
}
