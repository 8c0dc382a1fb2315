package journeys

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// Store is the replicated catalog: the current version and a command
// applied through Raft (the result is applied on this node on return).
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// Keys finds the live signing key and verifying keys by id.
type Keys interface {
	Signer(cat *catalog.Catalog) *token.Key
	Verifier(cat *catalog.Catalog, id string) *token.Key
}

// CaseOpener opens a privacy-safe case in the review queue (the identity
// review queue): a kind, an opaque reference and reason codes, never
// personal data. It returns the case reference.
type CaseOpener interface {
	OpenCase(ctx context.Context, workspaceID, kind, reference string, reasons []string) (string, error)
}

// Caller is who called: the workspace, the application whose credential
// authenticated (site or mobile app) and the channel (server, mobile).
type Caller = trust.Caller

// Module is the journeys product module. Required collaborators are
// constructor parameters; the method engines are optional (nil: the
// method answers ErrMethodUnavailable) and set with the With* methods
// before serving.
type Module struct {
	store   Store
	ask     actors.Asker
	keys    Keys
	signals trust.SignalSource
	now     func() time.Time

	// eng holds the optional engines; node/ (or a test) sets them while
	// the node may be serving, so they are swapped whole, atomically.
	mu  sync.Mutex
	eng atomic.Pointer[engines]
}

// engines are the method engines and the review queue; nil ones make
// their method answer ErrMethodUnavailable.
type engines struct {
	cases    CaseOpener
	human    HumanVerifier
	presence Presence
	matcher  Matcher
	sealer   *token.Sealer
	origin   string
}

// engines returns the current engines (never nil).
func (m *Module) engines() *engines { return m.eng.Load() }

// setEngines applies f to a copy of the engines and publishes it.
func (m *Module) setEngines(f func(e *engines)) *Module {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := *m.eng.Load()
	f(&e)
	m.eng.Store(&e)
	return m
}

// New builds the module.
func New(store Store, ask actors.Asker, keys Keys, signals trust.SignalSource, now func() time.Time) *Module {
	m := &Module{store: store, ask: ask, keys: keys, signals: signals, now: now}
	m.eng.Store(&engines{})
	return m
}

// WithCases sets the review queue escalations open cases in.
func (m *Module) WithCases(c CaseOpener) *Module {
	return m.setEngines(func(e *engines) { e.cases = c })
}

// MaxAttempts bounds the attempts (each a fresh proof) of one session.
const MaxAttempts = 5

// Statuses of a journey session (DESIGN.md has the transitions).
const (
	StatusStarted      = "started"
	StatusProofPending = "proof_pending"
	StatusCompleted    = "completed"
	StatusFailed       = "failed"
	StatusEscalated    = "escalated"
	StatusExpired      = "expired"
)

// Statuses lists every status, for the contract.
var Statuses = []string{StatusStarted, StatusProofPending, StatusCompleted, StatusFailed, StatusEscalated, StatusExpired}

// statusAt is the session's status as of now: expiry is derived, except
// for a verified (consumed) session, which stays completed.
func statusAt(s *catalog.JourneySession, now time.Time) string {
	if !s.Consumed && s.Status != StatusEscalated && !now.Before(s.ExpiresAt) {
		return StatusExpired
	}
	return s.Status
}

// open answers whether the person may still attempt the method.
func open(s *catalog.JourneySession, now time.Time) bool {
	st := statusAt(s, now)
	return !s.Consumed && (st == StatusStarted || st == StatusProofPending || st == StatusFailed) && s.Attempts < MaxAttempts
}

// transition applies next (computed from cur) with compare-and-set.
func (m *Module) transition(ctx context.Context, cur *catalog.JourneySession, mutate func(n *catalog.JourneySession)) (*catalog.JourneySession, error) {
	n := *cur
	mutate(&n)
	n.Version = cur.Version + 1
	n.UpdatedAt = m.now().UTC()
	v, err := m.store.Apply(ctx, &catalog.TransitionJourneySession{Next: n})
	if err != nil {
		return nil, err
	}
	return v.(*catalog.JourneySession), nil
}

// retryCAS runs step over the current session until its transition is
// not refused by a concurrent change (at most a few times).
func (m *Module) retryCAS(ctx context.Context, ws, id string, step func(cur *catalog.JourneySession) error) error {
	for range 4 {
		cur := m.store.Catalog().JourneySession(ws, id)
		if cur == nil {
			return ErrInvalidSession
		}
		err := step(cur)
		if !errors.Is(err, catalog.ErrJourneySessionChanged) {
			return err
		}
	}
	return ErrBusy
}

func newID() [16]byte {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return b
}

// fresh reads a session through the Raft log (catalog.ReadJourneySession):
// what the cluster committed, even when this node's catalog lags.
func (m *Module) fresh(ctx context.Context, ws, id string) (*catalog.JourneySession, bool) {
	v, err := m.store.Apply(ctx, &catalog.ReadJourneySession{WorkspaceID: ws, ID: id})
	if err != nil {
		return nil, false
	}
	s, ok := v.(*catalog.JourneySession)
	return s, ok && s != nil
}

// session resolves a session token (person false) or capability (person
// true) to its record; a token of another workspace is unknown.
func (m *Module) session(ctx context.Context, cat *catalog.Catalog, ws *catalog.Workspace, text string, person bool) (*catalog.JourneySession, token.Journey, bool) {
	j, err := token.DecodeJourney(text, person, func(id string) *token.Key { return m.keys.Verifier(cat, id) })
	if err != nil || (ws != nil && j.WorkspaceID != ws.ID) {
		return nil, j, false
	}
	id := hex.EncodeToString(j.ID[:])
	s := cat.JourneySession(j.WorkspaceID, id)
	if s == nil && m.now().Unix() < j.Expires {
		// A token we signed for a session this node has not applied yet.
		s, _ = m.fresh(ctx, j.WorkspaceID, id)
	}
	return s, j, s != nil
}

// subjectHashHex is the stored form of a subject in journey records.
func subjectHash(ws *catalog.Workspace, subject string) string {
	if subject == "" {
		return ""
	}
	return trust.SubjectHash(ws.ScopeKey, subject)
}

func operationHash(ws *catalog.Workspace, ref string) string {
	if ref == "" {
		return ""
	}
	b := trust.OperationBinding(ws.ScopeKey, ref)
	return hex.EncodeToString(b[:])
}

// countFailure adds a failed attempt to the subject's trust signals (best
// effort: a lost count never changes this answer).
func (m *Module) countFailure(ws string, subjectHash string) {
	raw, err := base64.RawURLEncoding.DecodeString(subjectHash)
	if subjectHash == "" || m.ask == nil || err != nil || len(raw) < 16 {
		return
	}
	var b [16]byte
	copy(b[:], raw)
	k := trust.FailureKey(ws, b)
	_ = m.ask.Ask(k, &actors.CountHit{Key: k, WindowNs: int64(trust.SignalWindow)})
}
