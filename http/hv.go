package http

import (
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
	"github.com/trustd/trustd/humanscore"
	"github.com/trustd/trustd/token"
)

// The human-verification module: the widget's challenge protocol, the
// response token's verification at /siteverify (native and drop-in
// dialects), the developer sandbox, edge pre-clearance and detection
// feedback. Files hv_*.go hold one operation family each; this one holds
// what they share: signing keys, origins, CORS and client binding.

// Lifetimes and bounds of the module.
const (
	// challengeTTL is how long a widget has to solve and redeem.
	challengeTTL = 120
	// markerSkew is added to every single-use marker's expiry so a node
	// with a slightly slow clock cannot accept a token a faster one
	// already forgot.
	markerSkew = int64(30e9)
	// verificationTTL is how long a successful verification stays
	// referable by its assessment_id (trust API, pre-clearance, feedback).
	verificationTTL = int64(24 * 3600e9)
	// velocityWindow is the challenge-velocity window.
	velocityWindow = int64(60e9)
)

// hvModule is the module's state; everything else lives in the catalog
// or in actors.
type hvModule struct {
	// keys caches a token.Key per signing-key id. A key's secret never
	// changes under its id (the catalog refuses a duplicate id), so a
	// cached entry is never stale; retirement is checked in the catalog
	// on every lookup.
	keys sync.Map
	// hosts indexes the hostnames of every non-sandbox site, for CORS
	// preflights, rebuilt when the catalog changes.
	hosts atomic.Pointer[hostIndex]
}

type hostIndex struct {
	cat   *catalog.Catalog
	hosts map[string]struct{}
}

func newHVModule() *hvModule {
	return &hvModule{}
}

// key returns the token key for a catalog key, creating it once.
func (m *hvModule) key(k *catalog.SigningKey) *token.Key {
	if k == nil {
		return nil
	}
	if v, ok := m.keys.Load(k.ID); ok {
		return v.(*token.Key)
	}
	v, _ := m.keys.LoadOrStore(k.ID, token.NewKey(k.ID, k.Secret))
	return v.(*token.Key)
}

// signer returns the current signing key of purpose, or nil.
func (m *hvModule) signer(cat *catalog.Catalog, purpose string) *token.Key {
	return m.key(cat.SigningKey(purpose))
}

// verifier finds an unretired key of purpose by id.
func (m *hvModule) verifier(cat *catalog.Catalog, purpose, id string) *token.Key {
	return m.key(cat.KeyByID(purpose, id))
}

// allowedHost reports whether any non-sandbox site allows host.
func (m *hvModule) allowedHost(cat *catalog.Catalog, host string) bool {
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

// canonicalIP parses a remoteip value; ok is false when it is not an IP.
func canonicalIP(s string) (string, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	return a.Unmap().WithZone("").String(), true
}

// ipHash is the keyed hash that binds a challenge or token to an address.
func ipHash(k *token.Key, addr string) [16]byte { return k.Hash16("ip", addr) }

func randomID() (id [16]byte) {
	_, _ = rand.Read(id[:])
	return id
}

// markerKey is the router key of a single-use id in the named space; the
// sandbox has its own spaces, so its ids never meet live ones.
func markerKey(space string, id [16]byte) string {
	var b [48]byte
	n := copy(b[:], space)
	n += hex.Encode(b[n:], id[:])
	return string(b[:n])
}

// feedbackOf turns a site's feedback tally into score relief.
func feedbackOf(t *catalog.FeedbackTally) *humanscore.Feedback {
	if t == nil {
		return nil
	}
	fb := &humanscore.Feedback{}
	for r := humanscore.Reason(0); r < humanscore.NumReasons; r++ {
		fb.FalsePositives[r] = t.ReasonFalsePositives[r]
	}
	return fb
}

// validAction accepts the action names the widget may bind: up to 64 of
// letters, digits, '_', '-', '.' and '/'; empty means none.
func validAction(a string) bool {
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

// ask runs op on the owner of key; the error is cluster.ErrUnavailable-ish.
func (c *Call) ask(key string, op actors.Op) error { return c.s.router.Ask(key, op) }

// getVerification looks an assessment up on the partition its id names
// (actors.NewVerificationID), where /siteverify stored it together with the
// token's marker. An id that names no partition is simply not found.
func (c *Call) getVerification(id string) (*actors.GetVerification, error) {
	get := &actors.GetVerification{ID: id}
	p, ok := actors.VerificationPartition(id, cluster.Partitions)
	if !ok {
		return get, nil
	}
	return get, c.s.router.AskPartition(p, get)
}
