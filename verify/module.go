package verify

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify/score"
)

// Lifetimes and bounds of the module.
const (
	// ChallengeTTL is how long a widget has to solve and redeem, seconds.
	ChallengeTTL = 120
	// markerSkew is added to every single-use marker's expiry so a node
	// with a slightly slow clock cannot accept a token a faster one
	// already forgot.
	markerSkew = int64(30e9)
	// replayGrace is how long past its token's lifetime (and markerSkew)
	// a redemption made with an idempotency key keeps its first outcome,
	// so a backend retrying a siteverify that answered 503 or timed out
	// near the token's expiry still gets that outcome back instead of
	// timeout-or-duplicate. Keyless redemptions are not kept longer.
	replayGrace = int64(5 * 60e9)
	// verificationTTL is how long a successful verification stays
	// referable by its assessment_id (trust API, pre-clearance, feedback).
	verificationTTL = int64(24 * 3600e9)
	// velocityWindow is the challenge-velocity window.
	velocityWindow = int64(60e9)
)

// Config are the module's switches.
type Config struct {
	// Dev honours Cloudflare's published Turnstile test keys at the
	// production endpoints (the sandbox endpoints always do).
	Dev bool
}

// Module is human verification. Its own state is caches only; everything
// else lives in the catalog or in actors.
type Module struct {
	ask   actors.PartitionAsker
	inCtx actors.InContext // ask within a request's context
	store Store
	now   func() time.Time
	cfg   Config
	// keys caches a token.Key per signing-key id. A key's secret never
	// changes under its id (the catalog refuses a duplicate id), so a
	// cached entry is never stale; retirement is checked in the catalog
	// on every lookup.
	keys sync.Map
	// hosts indexes the hostnames of every non-sandbox site, for CORS
	// preflights, rebuilt when the catalog changes.
	hosts atomic.Pointer[hostIndex]
	// scratch holds the *[]byte token scratch of Exchange.
	scratch sync.Pool
}

type hostIndex struct {
	cat   *catalog.Catalog
	hosts map[string]struct{}
}

// New returns the module. now is read on every call, so a test may move
// it; store takes detection feedback's tally updates.
func New(ask actors.PartitionAsker, store Store, now func() time.Time, cfg Config) *Module {
	return &Module{ask: ask, inCtx: actors.NewInContext(ask), store: store, now: now, cfg: cfg}
}

// errNoKey is a catalog without a signing key of the purpose yet.
func errNoKey(purpose string) error {
	return fmt.Errorf("verify: no %s signing key yet: %w", purpose, cluster.ErrUnavailable)
}

// key returns the token key for a catalog key, creating it once.
func (m *Module) key(k *catalog.SigningKey) *token.Key {
	if k == nil {
		return nil
	}
	if v, ok := m.keys.Load(k.ID); ok {
		return v.(*token.Key)
	}
	v, _ := m.keys.LoadOrStore(k.ID, token.NewKey(k.ID, k.Secret))
	return v.(*token.Key)
}

// Signer returns the current signing key of purpose (catalog.KeyLive,
// catalog.KeySandbox), or nil before one exists.
func (m *Module) Signer(cat *catalog.Catalog, purpose string) *token.Key {
	return m.key(cat.SigningKey(purpose))
}

// verifier finds an unretired key of purpose by id.
func (m *Module) verifier(cat *catalog.Catalog, purpose, id string) *token.Key {
	return m.key(cat.KeyByID(purpose, id))
}

// AllowedHost reports whether any non-sandbox site allows host (a
// lowercase hostname): the CORS decision of the widget's endpoints.
func (m *Module) AllowedHost(cat *catalog.Catalog, host string) bool {
	idx := m.hosts.Load()
	if idx == nil || idx.cat != cat {
		idx = &hostIndex{cat: cat, hosts: map[string]struct{}{}}
		for _, s := range cat.Sites {
			if s.Sandbox() {
				continue
			}
			for _, h := range s.Hostnames {
				idx.hosts[strings.ToLower(h)] = struct{}{}
			}
		}
		m.hosts.Store(idx)
	}
	_, ok := idx.hosts[host]
	return ok
}

// CanonicalIP parses a remoteip value into the form tokens bind
// (IPv4-mapped IPv6 unmapped, no zone); ok is false when it is not an IP.
func CanonicalIP(s string) (string, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	return a.Unmap().WithZone("").String(), true
}

// IPHash is the keyed hash that binds a challenge or token to an address.
func IPHash(k *token.Key, addr string) [16]byte { return k.Hash16("ip", addr) }

// remoteIPHash is IPHash of CanonicalIP(s) without making the canonical
// string: the hot siteverify path; false when s is not an address.
func remoteIPHash(k *token.Key, s string) ([16]byte, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return [16]byte{}, false
	}
	var buf [64]byte // AppendTo is String's text (a parsed address is never the zero one)
	return IPHash(k, bstr(a.Unmap().WithZone("").AppendTo(buf[:0]))), true
}

// RandomID is 16 random bytes: the ids of challenges, tokens, clearances.
func RandomID() (id [16]byte) {
	_, _ = rand.Read(id[:])
	return id
}

// Key spaces of the actor state this module uses are declared in
// platform/actors/keys.go: actors.SpaceChallenge (Consume), SpaceToken and
// SpaceSandboxTok (Redeem, with the verification), SpaceFeedback (Redeem,
// the one label of an assessment) and SpaceVelocity (Hit, per IP and per
// site).

// feedbackOf turns a site's feedback tally into score relief.
func feedbackOf(t *catalog.FeedbackTally) *score.Feedback {
	if t == nil {
		return nil
	}
	fb := &score.Feedback{}
	for r := score.Reason(0); r < score.NumReasons; r++ {
		fb.FalsePositives[r] = t.ReasonFalsePositives[r]
	}
	return fb
}

// ValidAction accepts the action names the widget may bind: up to 64 of
// letters, digits, '_', '-', '.' and '/'; empty means none.
func ValidAction(a string) bool {
	if len(a) > token.MaxAction {
		return false
	}
	for i := 0; i < len(a); i++ {
		ch := a[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' || ch == '.' || ch == '/') {
			return false
		}
	}
	return true
}

// validCData accepts up to 255 printable ASCII characters.
func validCData(s string) bool {
	if len(s) > token.MaxCData {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// getVerification looks an assessment up on the partition its id names
// (actors.NewVerificationID), where siteverify stored it together with the
// token's marker. An id that names no partition is simply not found.
func (m *Module) getVerification(id string) (*actors.GetVerification, error) {
	get := &actors.GetVerification{ID: id}
	p, ok := actors.VerificationPartition(id, cluster.Partitions)
	if !ok {
		return get, nil
	}
	return get, m.ask.AskPartition(p, get)
}

// Verifier finds an unretired signing key of purpose by its id, for
// another module that checks a token signed with the service's keys (the
// Trust API's proofs).
func (m *Module) Verifier(cat *catalog.Catalog, purpose, id string) *token.Key {
	return m.verifier(cat, purpose, id)
}
