package agents

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"path"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

// Registry errors.
var (
	ErrInvalidAgent = errcode.New("agent-invalid", errcode.Invalid, "an agent field is out of its documented range")
	ErrAgentMissing = errcode.New("agent-not-found", errcode.NotFound, "the workspace has no such agent")
)

// Sealer seals HMAC secrets for the catalog: AES-256-GCM under a key
// derived from the cluster key, with the agent_id as associated data, so a
// sealed secret neither reads without the cluster key nor moves to another
// agent. The Raft log and snapshots hold only sealed secrets. The
// construction is token.Sealer's, under this package's label.
type Sealer struct{ s *token.Sealer }

// NewSealer derives the sealing key from the cluster key.
func NewSealer(clusterKey string) *Sealer {
	return &Sealer{s: token.NewSealer(clusterKey, "trustd agents secret seal v1")}
}

func (s *Sealer) seal(agentID string, secret []byte) []byte { return s.s.Seal(agentID, secret) }

func (s *Sealer) open(agentID string, sealed []byte) ([]byte, bool) { return s.s.Open(agentID, sealed) }

// Limits of an agent's fields.
const (
	MaxNameLen     = 64
	MaxPatterns    = 32
	MaxPatternLen  = 128
	MaxRules       = 32
	MaxOverlap     = 7 * 24 * time.Hour
	DefaultOverlap = time.Hour
)

// Spec is what an admin sets on an agent.
type Spec struct {
	Name             string
	Ed25519PublicKey string // base64url (no padding) of 32 bytes, or empty
	HTTPSigProfile   string // ProfileWebBotAuth (or empty) or ProfileStrict
	AllowedActions   []string
	AllowedScopes    []string
	ApprovalRules    []catalog.AgentRule
}

func (sp Spec) validate() ([]byte, error) {
	if sp.Name == "" || len(sp.Name) > MaxNameLen {
		return nil, ErrInvalidAgent.With("name must be 1 to %d bytes", MaxNameLen)
	}
	if len(sp.AllowedActions) > MaxPatterns || len(sp.AllowedScopes) > MaxPatterns {
		return nil, ErrInvalidAgent.With("at most %d allowed actions and %d allowed scopes", MaxPatterns, MaxPatterns)
	}
	for _, p := range append(append([]string(nil), sp.AllowedActions...), sp.AllowedScopes...) {
		if p == "" || len(p) > MaxPatternLen {
			return nil, ErrInvalidAgent.With("actions and scopes are 1 to %d bytes", MaxPatternLen)
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, ErrInvalidAgent.With("pattern %q is malformed", p)
		}
	}
	if len(sp.ApprovalRules) > MaxRules {
		return nil, ErrInvalidAgent.With("at most %d approval rules", MaxRules)
	}
	for _, r := range sp.ApprovalRules {
		if len(r.Action) > MaxPatternLen || len(r.Scope) > MaxPatternLen || r.RiskAtLeast < 0 || r.RiskAtLeast > 100 {
			return nil, ErrInvalidAgent.With("an approval rule has action and scope up to %d bytes and risk_at_least 0 to 100", MaxPatternLen)
		}
		if _, err := path.Match(r.Action, ""); err != nil {
			return nil, ErrInvalidAgent.With("rule action %q is malformed", r.Action)
		}
	}
	if sp.HTTPSigProfile != "" && sp.HTTPSigProfile != ProfileWebBotAuth && sp.HTTPSigProfile != ProfileStrict {
		return nil, ErrInvalidAgent.With("httpsig_profile must be %s or %s", ProfileWebBotAuth, ProfileStrict)
	}
	if sp.Ed25519PublicKey == "" {
		return nil, nil
	}
	pk, err := base64.RawURLEncoding.DecodeString(sp.Ed25519PublicKey)
	if err != nil || len(pk) != ed25519.PublicKeySize {
		return nil, ErrInvalidAgent.With("ed25519_public_key must be base64url without padding of %d bytes", ed25519.PublicKeySize)
	}
	return pk, nil
}

// newSecret returns a fresh HMAC secret as the agent will use it: the
// ASCII bytes of "ags_" and 43 base64url characters (256 random bits).
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "ags_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewAgent builds the record of a new agent and its secret, shown once.
func NewAgent(s *Sealer, workspace string, sp Spec, now time.Time) (catalog.Agent, string, error) {
	pk, err := sp.validate()
	if err != nil {
		return catalog.Agent{}, "", err
	}
	id := uuid.NewString()
	secret := newSecret()
	return catalog.Agent{
		ID: id, WorkspaceID: workspace, Name: sp.Name, Status: StatusActive,
		Keys:             []catalog.AgentKey{{Sealed: s.seal(id, []byte(secret))}},
		Ed25519PublicKey: pk, HTTPSigProfile: profileOf(sp.HTTPSigProfile), AllowedActions: nonNil(sp.AllowedActions), AllowedScopes: nonNil(sp.AllowedScopes),
		ApprovalRules: nonNilRules(sp.ApprovalRules), CreatedAt: now, UpdatedAt: now,
	}, secret, nil
}

// Update lays sp over a copy of a.
func Update(a catalog.Agent, sp Spec, now time.Time) (catalog.Agent, error) {
	pk, err := sp.validate()
	if err != nil {
		return a, err
	}
	a.Name, a.Ed25519PublicKey, a.HTTPSigProfile = sp.Name, pk, profileOf(sp.HTTPSigProfile)
	a.AllowedActions, a.AllowedScopes, a.ApprovalRules = nonNil(sp.AllowedActions), nonNil(sp.AllowedScopes), nonNilRules(sp.ApprovalRules)
	a.UpdatedAt = now
	return a, nil
}

// SetStatus suspends or reactivates a copy of a.
func SetStatus(a catalog.Agent, status string, now time.Time) catalog.Agent {
	a.Status, a.UpdatedAt = status, now
	return a
}

// Rotate gives a copy of a a new current secret; the previous current one
// keeps working for overlap (0 ends it now), keys whose overlap ended are
// dropped, and at most catalog.MaxAgentKeys remain (oldest dropped first).
func Rotate(s *Sealer, a catalog.Agent, overlap time.Duration, now time.Time) (catalog.Agent, string, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return a, "", ErrInvalidAgent.With("overlap_seconds must be 0 to %d", int(MaxOverlap/time.Second))
	}
	secret := newSecret()
	keys := []catalog.AgentKey{{Sealed: s.seal(a.ID, []byte(secret))}}
	for _, k := range a.Keys {
		if k.NotAfter.IsZero() {
			if overlap > 0 {
				keys = append(keys, catalog.AgentKey{Sealed: k.Sealed, NotAfter: now.Add(overlap)})
			}
		} else if k.NotAfter.After(now) {
			keys = append(keys, k)
		}
	}
	if len(keys) > catalog.MaxAgentKeys {
		keys = keys[:catalog.MaxAgentKeys]
	}
	a.Keys, a.UpdatedAt = keys, now
	return a, secret, nil
}

// CatalogDirectory finds agents in one catalog version.
type CatalogDirectory struct {
	Cat    *catalog.Catalog
	Sealer *Sealer
}

// Agent implements Directory.
func (d CatalogDirectory) Agent(id uuid.UUID) (Identity, bool) {
	a := d.Cat.Agents[id.String()]
	if a == nil {
		return Identity{}, false
	}
	ident := Identity{ID: id, Workspace: a.WorkspaceID, Status: a.Status, Ed25519: a.Ed25519PublicKey, Profile: a.HTTPSigProfile}
	for _, k := range a.Keys {
		if sec, ok := d.Sealer.open(a.ID, k.Sealed); ok {
			ident.Keys = append(ident.Keys, Key{Secret: sec, NotAfter: k.NotAfter})
		}
	}
	return ident, true
}

// AgentsByThumbprint implements Directory with the catalog's index. The
// identities carry no HMAC secrets: only RFC 9421 verification asks.
func (d CatalogDirectory) AgentsByThumbprint(workspace, thumbprint string) []Identity {
	var out []Identity
	for _, a := range d.Cat.AgentsByThumbprint(workspace, thumbprint) {
		id, err := uuid.Parse(a.ID)
		if err != nil {
			continue
		}
		out = append(out, Identity{ID: id, Workspace: a.WorkspaceID, Status: a.Status, Ed25519: a.Ed25519PublicKey, Profile: a.HTTPSigProfile})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilRules(s []catalog.AgentRule) []catalog.AgentRule {
	if s == nil {
		return []catalog.AgentRule{}
	}
	return s
}

// profileOf is the stored name of a profile: the default stored as itself,
// so an agent's record says what it gets.
func profileOf(p string) string {
	if p == "" {
		return ProfileWebBotAuth
	}
	return p
}
