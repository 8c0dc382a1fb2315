package http

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ratelimit"
)

// Lease and admission tokens are signed, expiring, context-bound values
// the service hands out and takes back (architecture §7):
//
//	<prefix><base64url(payload)>.<base64url(mac)>
//
// The payload is a compact binary record that starts with a version byte
// and the id of the signing key; mac is the first 16 bytes of
// HMAC-SHA-256(key, prefix || payload). The prefix is under the MAC, so a
// lease can never pass for an admission. Verification reads the key id,
// finds that unretired live key, compares MACs in constant time and only
// then trusts any other field: garbage never reaches an actor.

const (
	leasePrefix     = "lease_"
	admissionPrefix = "admit_"
	// legacyAdmissionPrefix is what admission tokens carried before: the
	// admin token's prefix, which made the two easy to mistake in logs and
	// secret scanners. Tokens issued by older nodes still open during an
	// upgrade (they live seconds).
	legacyAdmissionPrefix = "adm_"
	tokenVersion          = 1
	tokenMACLen           = 16
	// maxTokenLen bounds what is decoded at all (64 constraints fit).
	maxTokenLen = 8192
)

// b64 is strict: a token has exactly one text, so no two strings carry one claim.
var b64 = base64.RawURLEncoding.Strict()

// tokenWriter builds a payload.
type tokenWriter struct{ b []byte }

func (w *tokenWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *tokenWriter) bytes16(v [16]byte) { w.b = append(w.b, v[:]...) }
func (w *tokenWriter) u64(v uint64)       { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *tokenWriter) byte1(v byte)       { w.b = append(w.b, v) }

// tokenReader reads a payload; any short or malformed read sets bad.
type tokenReader struct {
	b   []byte
	bad bool
}

func (r *tokenReader) str(maxLen int) string {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(maxLen) || uint64(len(r.b)-k) < n {
		r.bad = true
		return ""
	}
	s := string(r.b[k : k+int(n)])
	r.b = r.b[k+int(n):]
	return s
}

func (r *tokenReader) bytes16() (v [16]byte) {
	if len(r.b) < 16 {
		r.bad = true
		return v
	}
	copy(v[:], r.b)
	r.b = r.b[16:]
	return v
}

func (r *tokenReader) u64() uint64 {
	if len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *tokenReader) byte1() byte {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// tokenMAC is the truncated HMAC of prefix || payload under key.
func tokenMAC(key []byte, prefix string, payload []byte) [tokenMACLen]byte {
	sum := ratelimit.HashScope(key, prefix+string(payload))
	var out [tokenMACLen]byte
	copy(out[:], sum[:])
	return out
}

// sealToken signs payload (which starts with version and key id) under key.
func sealToken(prefix string, key *catalog.SigningKey, payload []byte) string {
	mac := tokenMAC(key.Secret, prefix, payload)
	var sb strings.Builder
	sb.Grow(len(prefix) + b64.EncodedLen(len(payload)) + 1 + b64.EncodedLen(tokenMACLen))
	sb.WriteString(prefix)
	sb.WriteString(b64.EncodeToString(payload))
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(mac[:]))
	return sb.String()
}

// openToken checks the framing and MAC of tok and returns a reader
// positioned after the key id. ok is false for anything not signed by an
// unretired live key.
func openToken(cat *catalog.Catalog, prefix, tok string) (*tokenReader, bool) {
	if len(tok) > maxTokenLen || !strings.HasPrefix(tok, prefix) {
		return nil, false
	}
	body, macText, found := strings.Cut(tok[len(prefix):], ".")
	if !found || b64.DecodedLen(len(macText)) != tokenMACLen {
		return nil, false
	}
	payload, err := b64.DecodeString(body)
	if err != nil {
		return nil, false
	}
	var mac [tokenMACLen]byte
	if n, err := b64.Decode(mac[:], []byte(macText)); err != nil || n != tokenMACLen {
		return nil, false
	}
	r := &tokenReader{b: payload}
	if r.byte1() != tokenVersion {
		return nil, false
	}
	kid := r.str(64)
	if r.bad {
		return nil, false
	}
	key := cat.KeyByID(catalog.KeyLive, kid)
	if key == nil {
		return nil, false
	}
	want := tokenMAC(key.Secret, prefix, payload)
	if subtle.ConstantTimeCompare(want[:], mac[:]) != 1 {
		return nil, false
	}
	return r, true
}

func newTokenWriter(key *catalog.SigningKey) *tokenWriter {
	w := &tokenWriter{b: make([]byte, 0, 256)}
	w.byte1(tokenVersion)
	w.str(key.ID)
	return w
}

// randomTokenID is 16 random bytes, base64url: lease and admission ids.
func randomTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return b64.EncodeToString(b[:])
}

// contextHash binds a token to request values without carrying them: the
// workspace-keyed HMAC of the length-prefixed values, truncated to 16
// bytes. Raw subject, device and custom values never enter a token.
func contextHash(ws *catalog.Workspace, purpose string, values ...string) [16]byte {
	var buf [1024]byte
	b := append(buf[:0], purpose...)
	for _, v := range values {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	sum := ratelimit.HashScope(ws.ScopeKey, string(b))
	var out [16]byte
	copy(out[:], sum[:])
	return out
}

// leaseSlot is one constraint slot a lease holds.
type leaseSlot struct {
	constraintID string
	scopeHash    [16]byte
	fence        uint64
}

// leaseClaims is what a lease token says.
type leaseClaims struct {
	leaseID     string
	workspaceID string
	appID       string
	context     [16]byte
	expiresMs   int64
	slots       []leaseSlot
}

func (l *leaseClaims) seal(key *catalog.SigningKey) string {
	w := newTokenWriter(key)
	w.str(l.leaseID)
	w.str(l.workspaceID)
	w.str(l.appID)
	w.bytes16(l.context)
	w.u64(uint64(l.expiresMs))
	w.b = binary.AppendUvarint(w.b, uint64(len(l.slots)))
	for _, s := range l.slots {
		w.str(s.constraintID)
		w.bytes16(s.scopeHash)
		w.u64(s.fence)
	}
	return sealToken(leasePrefix, key, w.b)
}

func openLease(cat *catalog.Catalog, tok string) (*leaseClaims, bool) {
	r, ok := openToken(cat, leasePrefix, tok)
	if !ok {
		return nil, false
	}
	l := &leaseClaims{}
	l.leaseID = r.str(64)
	l.workspaceID = r.str(64)
	l.appID = r.str(64)
	l.context = r.bytes16()
	l.expiresMs = int64(r.u64())
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > maxLeaseConstraints {
		return nil, false
	}
	r.b = r.b[k:]
	l.slots = make([]leaseSlot, n)
	for i := range l.slots {
		l.slots[i] = leaseSlot{constraintID: r.str(64), scopeHash: r.bytes16(), fence: r.u64()}
	}
	if r.bad || len(r.b) != 0 {
		return nil, false
	}
	return l, true
}

// admissionClaims is what an admission token says.
type admissionClaims struct {
	admissionID  string
	workspaceID  string
	appID        string
	dependencyID string
	context      [16]byte
	expiresMs    int64
}

func (a *admissionClaims) seal(key *catalog.SigningKey) string {
	w := newTokenWriter(key)
	w.str(a.admissionID)
	w.str(a.workspaceID)
	w.str(a.appID)
	w.str(a.dependencyID)
	w.bytes16(a.context)
	w.u64(uint64(a.expiresMs))
	return sealToken(admissionPrefix, key, w.b)
}

func openAdmission(cat *catalog.Catalog, tok string) (*admissionClaims, bool) {
	r, ok := openToken(cat, admissionPrefix, tok)
	if !ok && strings.HasPrefix(tok, legacyAdmissionPrefix) {
		r, ok = openToken(cat, legacyAdmissionPrefix, tok)
	}
	if !ok {
		return nil, false
	}
	a := &admissionClaims{
		admissionID:  r.str(64),
		workspaceID:  r.str(64),
		appID:        r.str(64),
		dependencyID: r.str(64),
		context:      r.bytes16(),
		expiresMs:    int64(r.u64()),
	}
	if r.bad || len(r.b) != 0 {
		return nil, false
	}
	return a, true
}
