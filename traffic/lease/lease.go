// Package lease grants concurrency leases (spec 2.11 concurrency
// constraints): a lease holds one slot in every constraint matching an
// action, all or nothing, renewable and releasable through a signed token
// bound to the caller's context, with a fencing token per slot. The slots
// live in lease actors reached through the Asker; the token format is
// token.Lease. It never sees HTTP.
package lease

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"crypto/rand"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/platform/token"
)

// Acquire reserves constraint by constraint in key order and releases what
// it reserved when one refuses, so a refused acquire holds nothing once it
// answers. While it runs, a concurrent acquire may see a slot that is
// given back a moment later: never over capacity, at worst a refusal that
// a retry would not get.

// Bounds of a lease's lifetime.
const (
	// UnconstrainedTTLMs is the lifetime of a lease when no constraint
	// matches and none was asked for.
	UnconstrainedTTLMs = int64(30_000)
	MinTTLMs           = int64(100)
	MaxTTLMs           = int64(24 * 3600 * 1000)
	maxIdemKey         = 128
)

// Errors of the lease operations.
var (
	ErrInvalid         = errcode.New("invalid-lease", errcode.Invalid, "The lease token is malformed, forged or signed by an unknown key.")
	ErrExpired         = errcode.New("lease-expired", errcode.Conflict, "The lease no longer holds its slots: it expired, was released, or its holder lost it; acquire a new one.")
	ErrContextMismatch = errcode.New("lease-context-mismatch", errcode.Forbidden, "The lease was issued to another workspace, application, action or scope value.")
	ErrNoSigningKey    = errcode.ErrUnavailable.Detail("no signing key is available yet")
)

// Errors lists the codes of this package for the contract.
var Errors = []*errcode.Code{ErrInvalid, ErrExpired, ErrContextMismatch}

// Caller is the workspace and application (site or mobile app) whose
// credential authenticated the call.
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string
}

// LeaseContext is the context a lease is bound to. Renew and release must
// send the same values.
type LeaseContext struct {
	Action    string `json:"action" required:"true" doc:"Protected action name, e.g. export.report; matched against each constraint's action pattern."`
	SubjectID string `json:"subject_id,omitempty" doc:"Required when a subject-scoped constraint matches. Stored only as a keyed hash."`
	DeviceID  string `json:"device_id,omitempty" doc:"Required when a device-scoped constraint matches. Stored only as a keyed hash."`
	ScopeKey  string `json:"scope_key,omitempty" doc:"Required when a custom-scoped constraint matches. Stored only as a keyed hash."`
}

// LeaseFence is the slot a lease holds in one constraint.
type LeaseFence struct {
	Constraint   string `json:"constraint" required:"true" doc:"Constraint name."`
	ConstraintID string `json:"constraint_id" required:"true" format:"uuid"`
	FencingToken uint64 `json:"fencing_token" required:"true" doc:"Increases with every grant of this constraint's scope value and never repeats. Pass it to the protected resource, which refuses any token lower than the highest it has seen: a holder that paused past its expiry is then fenced off."`
}

// LeaseResult is the answer of acquire and renew.
type LeaseResult struct {
	Success  bool `json:"success" required:"true" doc:"The request was processed; read acquired."`
	Acquired bool `json:"acquired" required:"true" doc:"true when the lease holds a slot in every matching constraint; false when one refused and the lease holds nothing."`
	// Present when acquired.
	LeaseID       string       `json:"lease_id,omitempty"`
	LeaseToken    string       `json:"lease_token,omitempty" doc:"Signed, expiring token bound to the workspace, application, action and scope values; send it to renew and release."`
	ExpiresAt     *time.Time   `json:"expires_at,omitempty" doc:"When the slots free themselves unless renewed."`
	TTLMs         int64        `json:"ttl_ms,omitempty" doc:"Lifetime granted, after clamping."`
	FencingTokens []LeaseFence `json:"fencing_tokens" required:"true" doc:"One per constraint the lease holds a slot of."`
	// IdempotentReplay reports an acquire answered from the lease an
	// earlier acquire with the same idempotency_key took.
	IdempotentReplay       bool     `json:"idempotent_replay,omitempty" doc:"The same idempotency_key already held this lease; nothing new was taken."`
	MatchedConstraintCount int      `json:"matched_constraint_count" required:"true"`
	ReasonCodes            []string `json:"reason_codes" required:"true" doc:"capacity-exhausted when refused, no-matching-constraint when nothing limits the action."`
	// Present when refused.
	Constraint        string `json:"constraint,omitempty" doc:"Name of the constraint that refused."`
	RetryAfterMs      int64  `json:"retry_after_ms,omitempty" doc:"When refused: time until the earliest holder of the refusing constraint expires (a release may free a slot sooner)."`
	RetryAfterSeconds int64  `json:"retry_after_seconds,omitempty"`
}

// LeaseReleaseResult is the answer of release.
type LeaseReleaseResult struct {
	Success  bool   `json:"success" required:"true"`
	LeaseID  string `json:"lease_id" required:"true"`
	Released bool   `json:"released" required:"true" doc:"true when the lease still held slots and they are now free; false when it had already expired or been released (releasing twice is harmless)."`
}

// Module grants, renews and releases leases. It is safe for concurrent use.
type Module struct {
	ask  actors.Asker
	now  func() time.Time
	log  *slog.Logger
	keys token.Keyring
}

// New returns a module.
func New(ask actors.Asker, now func() time.Time, log *slog.Logger) *Module {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Module{ask: ask, now: now, log: log}
}

func (m *Module) signer(cat *catalog.Catalog) *token.Key {
	k := cat.SigningKey(catalog.KeyLive)
	if k == nil {
		return nil
	}
	return m.keys.Key(k.ID, k.Secret)
}

func (m *Module) lookup(cat *catalog.Catalog) token.Lookup {
	return func(id string) *token.Key {
		k := cat.KeyByID(catalog.KeyLive, id)
		if k == nil {
			return nil
		}
		return m.keys.Key(k.ID, k.Secret)
	}
}

// validate checks the context fields and returns the lower-cased action.
func (lc *LeaseContext) validate() (string, error) {
	if !ratelimit.ValidAction(lc.Action) {
		return "", errcode.Field("action", "required: 1 to 128 letters, digits, '_', '.', ':' or '-', with non-empty dot-separated segments")
	}
	for _, f := range []struct{ name, v string }{{"subject_id", lc.SubjectID}, {"device_id", lc.DeviceID}, {"scope_key", lc.ScopeKey}} {
		if f.v != "" && !ident.Valid(f.v) {
			return "", errcode.Field(f.name, ident.Rule)
		}
	}
	return strings.ToLower(lc.Action), nil
}

func (lc *LeaseContext) hash(ws *catalog.Workspace, appID, action string) [16]byte {
	return ContextHash(ws, "lease", appID, action, lc.SubjectID, lc.DeviceID, lc.ScopeKey)
}

// ContextHash binds a token to request values without carrying them: the
// workspace-keyed HMAC of the length-prefixed values, truncated to 16
// bytes. Raw subject, device and custom values never enter a token.
func ContextHash(ws *catalog.Workspace, purpose string, values ...string) [16]byte {
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

// matched is a constraint an acquire must win, with its key.
type matched struct {
	k         *catalog.ConcurrencyConstraint
	scopeHash [16]byte
}

// Key is the router key of one constraint's slots for one scope value.
func Key(workspaceID, constraintID string, scopeHash [16]byte) string {
	var b strings.Builder
	b.Grow(len(actors.SpaceLease) + len(workspaceID) + 1 + len(constraintID) + 1 + 32)
	b.WriteString(actors.SpaceLease)
	b.WriteString(workspaceID)
	b.WriteByte('/')
	b.WriteString(constraintID)
	b.WriteByte('/')
	var h [32]byte
	hex.Encode(h[:], scopeHash[:])
	b.Write(h[:])
	return b.String()
}

// match lists the constraints an acquire of action by who must win, each
// with the keyed hash of its scope value.
func match(cat *catalog.Catalog, who Caller, action string, lc *LeaseContext) ([]matched, error) {
	var out []matched
	for _, k := range cat.ConstraintsOf(who.Workspace.ID) {
		if k.ApplicationID != "" && k.ApplicationID != who.AppID {
			continue
		}
		if !ratelimit.MatchAction(k.ActionPattern, action) {
			continue
		}
		var value, field string
		switch k.Scope {
		case catalog.ScopeWorkspace:
		case catalog.ScopeApplication:
			value = who.AppID
		case catalog.ScopeSubject:
			value, field = lc.SubjectID, "subject_id"
		case catalog.ScopeDevice:
			value, field = lc.DeviceID, "device_id"
		case catalog.ScopeCustom:
			value, field = lc.ScopeKey, "scope_key"
		}
		if field != "" && value == "" {
			return nil, errcode.Field(field, "required by concurrency constraint "+k.Name)
		}
		sum := ratelimit.HashScope(who.Workspace.ScopeKey, k.Scope+"\x00"+value)
		var h [16]byte
		copy(h[:], sum[:])
		out = append(out, matched{k: k, scopeHash: h})
	}
	return out, nil
}

// TTL clamps a requested lifetime into the bounds every constraint
// allows; when the bounds do not overlap the shortest maximum wins.
func TTL(requested int64, ks []*catalog.ConcurrencyConstraint) int64 {
	if len(ks) == 0 {
		if requested == 0 {
			return UnconstrainedTTLMs
		}
		return min(max(requested, MinTTLMs), MaxTTLMs)
	}
	lo, hi, def := int64(0), int64(1<<62), int64(1<<62)
	for _, k := range ks {
		lo, hi, def = max(lo, k.MinTTLMs), min(hi, k.MaxTTLMs), min(def, k.DefaultTTLMs)
	}
	ttl := requested
	if ttl == 0 {
		ttl = def
	}
	return min(max(ttl, lo), hi)
}

func validTTL(ttl int64) error {
	if ttl != 0 && (ttl < MinTTLMs || ttl > MaxTTLMs) {
		return errcode.Field("ttl_ms", "must be "+strconv.FormatInt(MinTTLMs, 10)+" to "+strconv.FormatInt(MaxTTLMs, 10))
	}
	return nil
}

// validIdemKey accepts 1 to 128 printable ASCII characters.
func validIdemKey(v string) bool {
	if len(v) == 0 || len(v) > maxIdemKey {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// randomID is 16 random bytes, base64url.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Acquire takes a slot in every constraint matching lc for who, or none.
func (m *Module) Acquire(cat *catalog.Catalog, who Caller, lc *LeaseContext, ttlMs int64, idemKey string) (*LeaseResult, error) {
	action, err := lc.validate()
	if err == nil {
		err = validTTL(ttlMs)
	}
	if err == nil && idemKey != "" && !validIdemKey(idemKey) {
		err = errcode.Field("idempotency_key", "1 to 128 printable ASCII characters")
	}
	if err != nil {
		return nil, err
	}
	key := m.signer(cat)
	if key == nil {
		return nil, ErrNoSigningKey
	}
	found, err := match(cat, who, action, lc)
	if err != nil {
		return nil, err
	}
	ks := make([]*catalog.ConcurrencyConstraint, len(found))
	for i, f := range found {
		ks[i] = f.k
	}
	ttl := TTL(ttlMs, ks)
	now := m.now()
	ctxHash := lc.hash(who.Workspace, who.AppID, action)
	leaseID := randomID()
	if idemKey != "" {
		// The same key, application and context name the same lease, so a
		// retry finds its slots already held instead of taking more.
		sum := ContextHash(who.Workspace, "lease-idempotency", who.AppID, idemKey, string(ctxHash[:]))
		leaseID = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	claims := token.Lease{ID: leaseID, WorkspaceID: who.Workspace.ID, AppID: who.AppID, Context: ctxHash,
		ExpiresMs: now.Add(time.Duration(ttl) * time.Millisecond).UnixMilli()}
	res := &LeaseResult{Success: true, MatchedConstraintCount: len(found), FencingTokens: []LeaseFence{}}
	replay := len(found) > 0
	// Slots are taken one constraint at a time in one global order (by
	// state key), so two acquires over the same constraints never hold one
	// each and refuse each other; on any refusal every slot this acquire
	// holds is given back before answering (all or nothing), including
	// slots an idempotent retry found already held.
	slices.SortFunc(found, func(a, b matched) int {
		return strings.Compare(Key(who.Workspace.ID, a.k.ID, a.scopeHash), Key(who.Workspace.ID, b.k.ID, b.scopeHash))
	})
	var taken []*actors.LeaseReserve
	for _, f := range found {
		op := &actors.LeaseReserve{Key: Key(who.Workspace.ID, f.k.ID, f.scopeHash), LeaseID: leaseID,
			Capacity: f.k.Capacity, Expires: claims.ExpiresMs * int64(time.Millisecond)}
		if err := m.ask.Ask(op.Key, op); err != nil {
			m.undo(taken)
			return nil, err
		}
		if !op.Granted {
			m.undo(taken)
			res.ReasonCodes = []string{"capacity-exhausted"}
			res.Constraint = f.k.Name
			if op.RetryAfter > 0 {
				res.RetryAfterMs = (op.RetryAfter + int64(time.Millisecond) - 1) / int64(time.Millisecond)
				res.RetryAfterSeconds = (res.RetryAfterMs + 999) / 1000
			}
			return res, nil
		}
		taken = append(taken, op)
		if !op.Existing {
			replay = false
		} else {
			// A retry keeps the lease it already holds, expiry included.
			claims.ExpiresMs = min(claims.ExpiresMs, op.HeldUntil/int64(time.Millisecond))
		}
		claims.Slots = append(claims.Slots, token.LeaseSlot{ConstraintID: f.k.ID, ScopeHash: f.scopeHash, Fence: op.Fence})
		res.FencingTokens = append(res.FencingTokens, LeaseFence{Constraint: f.k.Name, ConstraintID: f.k.ID, FencingToken: op.Fence})
	}
	if len(found) == 0 {
		res.ReasonCodes = []string{"no-matching-constraint"}
	} else {
		res.ReasonCodes = []string{}
	}
	grant(res, key, &claims, now)
	res.IdempotentReplay = replay
	return res, nil
}

// grant fills the granted fields of res from claims.
func grant(res *LeaseResult, key *token.Key, claims *token.Lease, now time.Time) {
	exp := time.UnixMilli(claims.ExpiresMs).UTC()
	res.Acquired = true
	res.LeaseID = claims.ID
	res.LeaseToken = claims.Sign(key)
	res.ExpiresAt = &exp
	res.TTLMs = max(claims.ExpiresMs-now.UnixMilli(), 0)
}

// undo gives back the slots a refused acquire took. A failure here leaves
// the slot to expire with its lease.
func (m *Module) undo(taken []*actors.LeaseReserve) {
	for _, r := range taken {
		op := &actors.LeaseRelease{Key: r.Key, LeaseID: r.LeaseID, Fence: r.Fence}
		if err := m.ask.Ask(op.Key, op); err != nil {
			m.log.Warn("lease: could not give back a reserved slot; it frees at expiry", "err", err)
		}
	}
}

// open verifies a lease token and its binding to the caller and context.
func (m *Module) open(cat *catalog.Catalog, who Caller, tok string, lc *LeaseContext) (*token.Lease, error) {
	if tok == "" {
		return nil, errcode.Field("lease_token", "required")
	}
	action, err := lc.validate()
	if err != nil {
		return nil, err
	}
	l, err := token.DecodeLease(tok, m.lookup(cat))
	if err != nil {
		return nil, ErrInvalid
	}
	want := lc.hash(who.Workspace, who.AppID, action)
	if l.WorkspaceID != who.Workspace.ID || l.AppID != who.AppID || !equal16(l.Context, want) {
		return nil, ErrContextMismatch.With("the lease was issued for another application, action or scope value")
	}
	return &l, nil
}

func equal16(a, b [16]byte) bool {
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

// Renew extends every slot of the lease tok, or frees them all when one
// was lost.
func (m *Module) Renew(cat *catalog.Catalog, who Caller, tok string, lc *LeaseContext, ttlMs int64) (*LeaseResult, error) {
	if err := validTTL(ttlMs); err != nil {
		return nil, err
	}
	l, err := m.open(cat, who, tok, lc)
	if err != nil {
		return nil, err
	}
	now := m.now()
	if l.ExpiresMs <= now.UnixMilli() {
		return nil, ErrExpired.With("the lease expired; acquire a new one")
	}
	key := m.signer(cat)
	if key == nil {
		return nil, ErrNoSigningKey
	}
	var ks []*catalog.ConcurrencyConstraint
	for _, sl := range l.Slots {
		if k := cat.ConcurrencyConstraints[sl.ConstraintID]; k != nil {
			ks = append(ks, k)
		}
	}
	next := *l
	next.ExpiresMs = now.Add(time.Duration(TTL(ttlMs, ks)) * time.Millisecond).UnixMilli()
	res := &LeaseResult{Success: true, MatchedConstraintCount: len(l.Slots), FencingTokens: make([]LeaseFence, 0, len(l.Slots)), ReasonCodes: []string{}}
	for i, sl := range l.Slots {
		op := &actors.LeaseRenew{Key: Key(l.WorkspaceID, sl.ConstraintID, sl.ScopeHash), LeaseID: l.ID,
			Fence: sl.Fence, Expires: next.ExpiresMs * int64(time.Millisecond)}
		if err := m.ask.Ask(op.Key, op); err != nil {
			return nil, err
		}
		if !op.Held {
			// The lease lost one slot: it no longer holds the set the
			// caller was promised, so the rest goes back too.
			m.releaseSlots(l, i)
			return nil, ErrExpired.With("the lease no longer holds its slots (expired or released); acquire a new one")
		}
		name := sl.ConstraintID
		if k := cat.ConcurrencyConstraints[sl.ConstraintID]; k != nil {
			name = k.Name
		}
		res.FencingTokens = append(res.FencingTokens, LeaseFence{Constraint: name, ConstraintID: sl.ConstraintID, FencingToken: sl.Fence})
	}
	grant(res, key, &next, now)
	return res, nil
}

// releaseSlots frees every slot of l except the one at skip (-1: none),
// and reports whether any was still held.
func (m *Module) releaseSlots(l *token.Lease, skip int) (bool, error) {
	released := false
	var firstErr error
	for i, sl := range l.Slots {
		if i == skip {
			continue
		}
		op := &actors.LeaseRelease{Key: Key(l.WorkspaceID, sl.ConstraintID, sl.ScopeHash), LeaseID: l.ID, Fence: sl.Fence}
		if err := m.ask.Ask(op.Key, op); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		released = released || op.Released
	}
	return released, firstErr
}

// Release frees the lease's slots. Slots that could not be reached free
// at expiry; the caller may retry, which is harmless.
func (m *Module) Release(cat *catalog.Catalog, who Caller, tok string, lc *LeaseContext) (*LeaseReleaseResult, error) {
	l, err := m.open(cat, who, tok, lc)
	if err != nil {
		return nil, err
	}
	released, err := m.releaseSlots(l, -1)
	if err != nil {
		return nil, err
	}
	return &LeaseReleaseResult{Success: true, LeaseID: l.ID, Released: released}, nil
}
