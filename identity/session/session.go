// Package session runs identity verification sessions (spec 1, 3.2, 4.7):
// a state machine over document screening, an active liveness challenge
// and facial comparison, stored in Raft (catalog) with a compare-and-swap
// on every change, and the review queue that manual reviews land in. It
// never sees HTTP, never stores an image or a face descriptor, and never
// answers verified for a check it could not run. See DESIGN.md.
package session

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
)

// Statuses of a session (spec 3.2 plus the working states).
const (
	StatusCreated    = "created"
	StatusCollecting = "collecting"
	StatusProcessing = "processing"
	StatusVerified   = "verified"
	StatusRecapture  = "recapture_required"
	StatusReview     = "manual_review"
	StatusRejected   = "rejected"
	StatusCancelled  = "cancelled"
)

// Assurance levels.
const (
	DocumentOnly = "document_only"
	Standard     = "standard"
	High         = "high"
)

// Scopes of the scoped server credential.
const (
	ScopeVerify         = "identity.verify"
	ScopeDocumentVerify = "identity.document.verify"
)

// CapabilityPrefix starts every session capability.
const CapabilityPrefix = "ivst_"

// Store is the replicated state the module reads and changes.
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// Screener screens document images (documents.Screener).
type Screener interface {
	Screen(ctx context.Context, r documents.Request) (*documents.DocumentResult, error)
}

// Presence is the active liveness check (liveness.Checker).
type Presence interface {
	Issue(now time.Time) liveness.Challenge
	Check(ctx context.Context, c liveness.Challenge, frames []liveness.Frame, now time.Time) (liveness.Result, error)
}

// Matcher compares two face descriptors: the similarity and whether it
// reaches the configured threshold (face.Compare with the threshold).
type Matcher func(a, b []float32) (similarity float64, same bool)

// Emitter stores webhook events (events.Outbox).
type Emitter interface {
	Emit(ctx context.Context, workspaceID, eventType, subjectRef string, sequence uint64, data any) (string, error)
}

// Config tunes sessions. Zero values take the defaults.
type Config struct {
	// MaxAttempts is the capture attempts (document and face steps) a
	// session allows; at the cap a failing attempt sends the session to
	// manual review. Default 3, at most 10.
	MaxAttempts int
	// TTL is the capture deadline after creation (default 1 h);
	// CapabilityGrace how long after it the capability still reads the
	// result (default 24 h).
	TTL, CapabilityGrace time.Duration
	// StepTimeout bounds one step; a session left processing longer (a
	// node died mid-step) is treated as back where the step started.
	StepTimeout time.Duration
	// MaxFrames bounds the liveness frames of one face step (default 12).
	MaxFrames int
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	c.MaxAttempts = min(c.MaxAttempts, 10)
	if c.TTL <= 0 {
		c.TTL = time.Hour
	}
	if c.CapabilityGrace <= 0 {
		c.CapabilityGrace = 24 * time.Hour
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = 2 * time.Minute
	}
	if c.MaxFrames <= 0 {
		c.MaxFrames = 12
	}
	return c
}

// Deps are the module's collaborators. Engine, Presence and Match may be
// nil: standard and high sessions then fail closed with
// face-engine-unavailable. Events nil drops events (no webhooks module).
type Deps struct {
	Store    Store
	Screener Screener
	Engine   face.Engine
	Presence Presence
	Match    Matcher
	Events   Emitter
	Now      func() time.Time
	Log      *slog.Logger
}

// Module runs sessions and the review queue.
type Module struct {
	cfg Config
	d   Deps
}

// New builds the module.
func New(cfg Config, d Deps) *Module {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Module{cfg: cfg.withDefaults(), d: d}
}

// Caller is who called: the workspace and scopes of the credential.
type Caller struct {
	WorkspaceID string
	Scopes      []string
}

func (c Caller) may(assurance string) bool {
	if slices.Contains(c.Scopes, ScopeVerify) {
		return true
	}
	return assurance == DocumentOnly && slices.Contains(c.Scopes, ScopeDocumentVerify)
}

// Domain errors.
var (
	ErrConsent        = errcode.New("consent-required", errcode.Invalid, "consent_accepted must be true and consent_reference a non-empty reference (1 to 256 bytes) to the consent the person gave.")
	ErrScope          = errcode.New("identity-scope-forbidden", errcode.Forbidden, "The credential lacks the scope: identity.verify for standard and high sessions, identity.document.verify (or identity.verify) for document_only.")
	ErrNotFound       = errcode.New("identity-session-not-found", errcode.NotFound, "The workspace has no identity session with this id (never created, or pruned after retention).")
	ErrCapability     = errcode.New("invalid-session-token", errcode.Unauthenticated, "X-Service-Identity-Session-Token is missing, not this session's, or expired.")
	ErrState          = errcode.New("identity-session-state", errcode.Conflict, "The session's current status does not allow this operation; read the result and decide.")
	ErrBusy           = errcode.New("identity-session-busy", errcode.Conflict, "Another request changed or is processing this session; read the result, then retry if still needed.")
	ErrExpired        = errcode.New("identity-session-expired", errcode.Conflict, "The session's capture deadline passed; start a new session.")
	ErrIncomplete     = errcode.New("identity-steps-incomplete", errcode.Conflict, "A required step has not passed yet: the document for every level, and the face step for standard and high.")
	ErrClientVerdict  = errcode.New("client-verdict-refused", errcode.Invalid, "The body carries a match, liveness or score field: those are measured by the service only and never accepted from a client.")
	ErrDocumentImage  = errcode.New("document-image-mismatch", errcode.Invalid, "document_front_image is not the front image this session screened; send the same image bytes.")
	ErrNoChallenge    = errcode.New("liveness-challenge-required", errcode.Conflict, "No liveness challenge is outstanding: POST …/liveness first, then send the frames with its nonce.")
	ErrChallengeStale = errcode.New("liveness-challenge-expired", errcode.Conflict, "The liveness challenge's deadline passed; request a new one.")
	ErrNonce          = errcode.New("liveness-nonce-mismatch", errcode.Invalid, "nonce is not the outstanding challenge's.")
	ErrSessionLimit   = errcode.New("identity-session-limit", errcode.Conflict, "The workspace holds the most identity sessions allowed; finished ones are pruned after retention.")
	ErrQueueFull      = errcode.New("review-queue-full", errcode.Unavailable, "The workspace's review queue is full; the session could not enter review and is unchanged. Resolve cases, then retry.")
	ErrCaseNotFound   = errcode.New("review-case-not-found", errcode.NotFound, "The workspace has no review case with this id.")
	ErrCaseClosed     = errcode.New("review-case-closed", errcode.Conflict, "The case is not open (already resolved or withdrawn).")
)

// Errors lists the module's codes, for the contract.
var Errors = []*errcode.Code{ErrConsent, ErrScope, ErrNotFound, ErrCapability, ErrState, ErrBusy, ErrExpired, ErrIncomplete,
	ErrClientVerdict, ErrDocumentImage, ErrNoChallenge, ErrChallengeStale, ErrNonce, ErrSessionLimit, ErrQueueFull,
	ErrCaseNotFound, ErrCaseClosed, ErrOrigin, face.ErrUnavailable}

// CreateRequest is the body of POST /identity/verification/session.
type CreateRequest struct {
	SubjectID        string
	Action           string
	Assurance        string
	Country          string
	DocumentType     string
	ConsentAccepted  bool
	ConsentReference string
}

// Created is a new session with its capability, shown once.
type Created struct {
	Result
	SessionToken string `json:"session_token" required:"true" doc:"The session capability: send it as X-Service-Identity-Session-Token on every call about this session. Shown once; only its hash is stored. Keep it on your server."`
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func keyed(key []byte, kind string, v []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(v)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Create starts a session.
func (m *Module) Create(ctx context.Context, who Caller, r CreateRequest) (*Created, error) {
	return m.create(ctx, who, r, nil)
}

func (m *Module) create(ctx context.Context, who Caller, r CreateRequest, edit func(*catalog.IdentitySession)) (*Created, error) {
	switch r.Assurance {
	case DocumentOnly, Standard, High:
	default:
		return nil, errcode.Field("assurance_level", "must be document_only, standard or high")
	}
	if !who.may(r.Assurance) {
		return nil, ErrScope
	}
	if !ident.Valid(r.SubjectID) {
		return nil, errcode.Field("subject_id", "1 to 256 bytes of UTF-8 without control characters")
	}
	if !ident.Action(r.Action) {
		return nil, errcode.Field("action", "1 to 64 of A-Z a-z 0-9 _ - . /")
	}
	if !r.ConsentAccepted || r.ConsentReference == "" || !ident.Valid(r.ConsentReference) {
		return nil, ErrConsent
	}
	dr := documents.Request{Country: r.Country, DocumentType: r.DocumentType, Front: "-", Back: "-"}
	if _, err := dr.Validate(); err != nil {
		return nil, err
	}
	cat := m.d.Store.Catalog()
	ws := cat.Workspaces[who.WorkspaceID]
	if ws == nil {
		return nil, ErrNotFound
	}
	now := m.d.Now().UTC()
	var tok [32]byte
	_, _ = rand.Read(tok[:])
	capability := CapabilityPrefix + base64.RawURLEncoding.EncodeToString(tok[:])
	s := catalog.IdentitySession{ID: "ivs_" + randomHex(12), WorkspaceID: ws.ID,
		SubjectHash: keyed(ws.ScopeKey, "subject", []byte(r.SubjectID)), Action: r.Action, Assurance: r.Assurance,
		Country: r.Country, DocumentType: r.DocumentType, ConsentReference: r.ConsentReference, ConsentAt: now,
		CapabilityHash: catalog.HashSecret(capability), Status: StatusCreated, MaxAttempts: m.cfg.MaxAttempts,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(m.cfg.TTL), CapabilityUntil: now.Add(m.cfg.TTL + m.cfg.CapabilityGrace)}
	if edit != nil {
		edit(&s)
	}
	got, err := m.put(ctx, &s, 0, nil)
	if err != nil {
		return nil, err
	}
	return &Created{Result: view(got, now), SessionToken: capability}, nil
}

// put applies a session change and maps the catalog's refusals.
func (m *Module) put(ctx context.Context, s *catalog.IdentitySession, expect uint64, k *catalog.ReviewCase) (*catalog.IdentitySession, error) {
	v, err := m.d.Store.Apply(ctx, &catalog.PutIdentitySession{Session: *s, ExpectVersion: expect, Case: k})
	switch {
	case err == nil:
		return v.(*catalog.IdentitySession), nil
	case errors.Is(err, catalog.ErrStaleVersion):
		return nil, ErrBusy
	case errors.Is(err, catalog.ErrIdentitySessionsFull):
		return nil, ErrSessionLimit
	case errors.Is(err, catalog.ErrReviewQueueFull):
		return nil, ErrQueueFull
	case errors.Is(err, catalog.ErrNotFound):
		return nil, ErrNotFound
	}
	return nil, err
}

// load finds the session and checks the caller may act on it: same
// workspace (else not found), scope for its assurance (403), capability
// (401). It also flushes events the session still owes the outbox. It
// reads the clock once and returns that now, so the step that follows
// judges the session at the instant its capability was checked.
func (m *Module) load(ctx context.Context, who Caller, id, capability string) (*catalog.IdentitySession, time.Time, error) {
	now := m.d.Now().UTC()
	s := m.d.Store.Catalog().IdentitySession(who.WorkspaceID, id)
	if s == nil {
		return nil, now, ErrNotFound
	}
	if !who.may(s.Assurance) {
		return nil, now, ErrScope
	}
	switch {
	case strings.HasPrefix(capability, CapabilityPrefix) && s.CapabilityHash.Equal(catalog.HashSecret(capability)) && now.Before(s.CapabilityUntil):
	case strings.HasPrefix(capability, HostedPrefix) && s.HostedHash != (catalog.Hash{}) && s.HostedHash.Equal(catalog.HashSecret(capability)) &&
		now.Before(s.ExpiresAt.Add(15*time.Minute)):
		// The hosted capability lives until shortly after the capture
		// deadline: long enough for the page to show the outcome.
	default:
		return nil, now, ErrCapability
	}
	if len(s.PendingEvents) > 0 {
		m.flush(ctx, s)
	}
	return s, now, nil
}

// effective is the session's status as of now: a step that outlived its
// timeout no longer holds the session.
func effective(s *catalog.IdentitySession, now time.Time) string {
	if s.Status == StatusProcessing && !now.Before(s.ProcessingUntil) {
		return s.ProcessingFrom
	}
	return s.Status
}

func final(status string) bool {
	return status == StatusVerified || status == StatusRejected || status == StatusCancelled
}

// capturing reports whether a capture step may run from status.
func capturing(status string) bool {
	return status == StatusCreated || status == StatusCollecting || status == StatusRecapture
}

// loadStep is load for a capture step (document, liveness, face): the
// session must also accept one (mutable). from is the status the step
// starts from.
func (m *Module) loadStep(ctx context.Context, who Caller, id, capability string) (s *catalog.IdentitySession, from string, now time.Time, err error) {
	s, now, err = m.load(ctx, who, id, capability)
	if err == nil {
		from, err = mutable(s, now)
	}
	return s, from, now, err
}

// mutable checks a capture step may start: not processing, a capture
// status, before the deadline.
func mutable(s *catalog.IdentitySession, now time.Time) (string, error) {
	st := effective(s, now)
	if st == StatusProcessing {
		return "", ErrBusy
	}
	if !capturing(st) {
		return "", ErrState.With("the session is %s", st)
	}
	if !now.Before(s.ExpiresAt) {
		return "", ErrExpired
	}
	return st, nil
}

// verdictFields are body member names a client might use to assert a
// result the service must measure itself.
var verdictFields = []string{"match", "liveness", "live", "score", "similarity", "confidence", "verified", "decision", "outcome", "passed", "spoof"}

// RefuseClientVerdict returns ErrClientVerdict when the raw body has, at
// any depth, a member whose name asserts a match, liveness or a score:
// those are measured by the service, never taken from a client.
func RefuseClientVerdict(body []byte) error {
	name, found := jsonstrict.FindName(body, true, func(n string) bool {
		return slices.ContainsFunc(verdictFields, func(f string) bool { return strings.Contains(n, f) })
	})
	if found {
		return ErrClientVerdict.With("the body member %q is refused: matches, liveness and scores are measured by the service", name)
	}
	return nil
}
