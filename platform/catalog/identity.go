package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Identity verification sessions and the review queue (identity/session).
// The state machine lives in identity/session; this file only stores what
// the module computed, with a compare-and-swap on the session's version
// (two requests racing on one session: the second is refused, never
// merged), the per-workspace caps and the retention. No image and no face
// descriptor is ever stored here: only statuses, reasons and measured
// values, and a keyed hash of the screened document image.
//
// The table is nested, workspace → sessions and cases, so a command copies
// only the workspace it changes.

// Caps and retention of identity sessions and review cases.
const (
	MaxIdentitySessionsPerWorkspace = 10_000
	MaxReviewCasesPerWorkspace      = 10_000
	// IdentitySessionRetention keeps a session readable after it ended
	// (or after its capture deadline passed unfinished); the next create
	// in the workspace prunes it.
	IdentitySessionRetention = 7 * 24 * time.Hour
	// ReviewCaseRetention keeps a resolved case listed.
	ReviewCaseRetention = 30 * 24 * time.Hour
	// MaxPendingIdentityEvents bounds the events a session keeps until the
	// outbox acknowledged them.
	MaxPendingIdentityEvents = 8
)

// Errors of the identity commands.
var (
	ErrIdentitySessionsFull = errors.New("catalog: identity sessions full")
	ErrReviewQueueFull      = errors.New("catalog: review queue full")
	// ErrStaleVersion is a compare-and-swap that lost: the record changed
	// since the caller read it.
	ErrStaleVersion = errors.New("catalog: stale version")
)

// IdentityAttempt is one capture attempt: which step, its outcome, the
// status of each check and the measured values. Never an image.
type IdentityAttempt struct {
	N       int                `json:"n"`
	Step    string             `json:"step"`
	At      time.Time          `json:"at"`
	Outcome string             `json:"outcome"`
	Checks  map[string]string  `json:"checks,omitempty"`
	Reasons []string           `json:"reasons,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// IdentityChallenge is an issued liveness challenge awaiting its frames.
type IdentityChallenge struct {
	Nonce    string    `json:"nonce"`
	Actions  []string  `json:"actions"`
	IssuedAt time.Time `json:"issued_at"`
	Deadline time.Time `json:"deadline"`
}

// IdentityEvent is an event the session owes the webhook outbox; it is
// removed once the outbox stored it.
type IdentityEvent struct {
	Type     string   `json:"type"`
	Sequence uint64   `json:"sequence"`
	Status   string   `json:"status"`
	Reasons  []string `json:"reasons,omitempty"`
}

// IdentityResolution is a reviewer's decision on a session in review.
type IdentityResolution struct {
	Decision string    `json:"decision"`
	Note     string    `json:"note"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
}

// IdentitySession is one verification session as the module left it.
type IdentitySession struct {
	ID               string    `json:"session_id"`
	WorkspaceID      string    `json:"workspace_id"`
	SubjectHash      string    `json:"subject_hash"`
	Action           string    `json:"action"`
	Assurance        string    `json:"assurance_level"`
	Country          string    `json:"country"`
	DocumentType     string    `json:"document_type"`
	ConsentReference string    `json:"consent_reference"`
	ConsentAt        time.Time `json:"consent_at"`
	CapabilityHash   Hash      `json:"capability_hash"`
	// Hosted capture (zero HostedHash: not hosted): the hosted page's
	// capability hash and the presentation the creator chose.
	HostedHash   Hash   `json:"hosted_hash,omitzero"`
	ParentOrigin string `json:"parent_origin,omitempty"`
	ReturnURL    string `json:"return_url,omitempty"`
	Theme        string `json:"theme,omitempty"`
	Locale       string `json:"locale,omitempty"`
	Status       string `json:"status"`
	// ProcessingFrom is the status a step started from while Status is
	// processing; ProcessingUntil bounds the step, after which the module
	// treats the session as back in ProcessingFrom (a crashed node does
	// not leave a session stuck).
	ProcessingFrom  string            `json:"processing_from,omitempty"`
	ProcessingUntil time.Time         `json:"processing_until,omitzero"`
	Version         uint64            `json:"version"`
	Sequence        uint64            `json:"sequence"`
	MaxAttempts     int               `json:"max_attempts"`
	Attempts        []IdentityAttempt `json:"attempts,omitempty"`
	// DocumentDecision is the accepted document's decision (verify or
	// review); empty until a document is accepted. DocumentImageHash is a
	// keyed hash of its front image, so the face step can prove it
	// compares against the screened image without storing it.
	DocumentDecision  string              `json:"document_decision,omitempty"`
	DocumentReasons   []string            `json:"document_reasons,omitempty"`
	DocumentImageHash string              `json:"document_image_hash,omitempty"`
	FacePassed        bool                `json:"face_passed,omitempty"`
	Challenge         *IdentityChallenge  `json:"challenge,omitzero"`
	ReviewReasons     []string            `json:"review_reasons,omitempty"`
	CaseID            string              `json:"case_id,omitempty"`
	Resolution        *IdentityResolution `json:"resolution,omitzero"`
	PendingEvents     []IdentityEvent     `json:"pending_events,omitempty"`
	Redacted          bool                `json:"redacted,omitempty"`
	RedactedAt        time.Time           `json:"redacted_at,omitzero"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
	// ExpiresAt is the capture deadline; CapabilityUntil the end of the
	// capability (result reads); EndedAt when a final status was reached.
	ExpiresAt       time.Time `json:"expires_at"`
	CapabilityUntil time.Time `json:"capability_until"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
}

// prunableAt is when the session may be pruned: retention after it ended,
// or after its capture deadline when it never ended (manual_review never
// ends by time: a reviewer must decide).
func (s *IdentitySession) prunableAt() (time.Time, bool) {
	if !s.EndedAt.IsZero() {
		return s.EndedAt.Add(IdentitySessionRetention), true
	}
	if s.Status == "manual_review" || s.Status == "processing" && s.ProcessingFrom == "manual_review" {
		return time.Time{}, false
	}
	return s.ExpiresAt.Add(IdentitySessionRetention), true
}

// ReviewCase is one item of a workspace's review queue: an identity
// session in manual review, or another module's escalation (journeys).
type ReviewCase struct {
	ID          string    `json:"case_id"`
	WorkspaceID string    `json:"workspace_id"`
	Kind        string    `json:"kind"`
	Reference   string    `json:"reference"`
	Reasons     []string  `json:"reasons"`
	Status      string    `json:"status"` // open | resolved | withdrawn
	Decision    string    `json:"decision,omitempty"`
	Note        string    `json:"note,omitempty"`
	ResolvedBy  string    `json:"resolved_by,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ResolvedAt  time.Time `json:"resolved_at,omitzero"`
	Version     uint64    `json:"version"`
}

// IdentityWorkspace is one workspace's sessions and review cases.
type IdentityWorkspace struct {
	Sessions map[string]*IdentitySession `json:"sessions"`
	Cases    map[string]*ReviewCase      `json:"cases"`
}

// IdentitySession returns a session of a workspace, or nil.
func (c *Catalog) IdentitySession(workspaceID, id string) *IdentitySession {
	if w := c.Identity[workspaceID]; w != nil {
		return w.Sessions[id]
	}
	return nil
}

// IdentitySessionAnywhere finds a session by id in any workspace (the
// hosted page knows only the session id).
func (c *Catalog) IdentitySessionAnywhere(id string) *IdentitySession {
	for _, w := range c.Identity {
		if s := w.Sessions[id]; s != nil {
			return s
		}
	}
	return nil
}

// ReviewCase returns a case of a workspace, or nil.
func (c *Catalog) ReviewCase(workspaceID, id string) *ReviewCase {
	if w := c.Identity[workspaceID]; w != nil {
		return w.Cases[id]
	}
	return nil
}

// ReviewCases lists a workspace's cases (any order).
func (c *Catalog) ReviewCases(workspaceID string) []*ReviewCase {
	w := c.Identity[workspaceID]
	if w == nil {
		return nil
	}
	out := make([]*ReviewCase, 0, len(w.Cases))
	for _, k := range w.Cases {
		out = append(out, k)
	}
	return out
}

// identityOf returns workspace's identity tables, copied once per
// transaction for writing.
func (tx *Tx) identityOf(workspaceID string) *IdentityWorkspace {
	all := Writable(tx, "identity", &tx.next.Identity)
	key := "identity/" + workspaceID
	if !tx.cloned[key] {
		nw := &IdentityWorkspace{Sessions: map[string]*IdentitySession{}, Cases: map[string]*ReviewCase{}}
		if cur := all[workspaceID]; cur != nil {
			for k, v := range cur.Sessions {
				nw.Sessions[k] = v
			}
			for k, v := range cur.Cases {
				nw.Cases[k] = v
			}
		}
		all[workspaceID] = nw
		tx.cloned[key] = true
	}
	return all[workspaceID]
}

// PutIdentitySession stores a session the module computed: a create
// (ExpectVersion 0) or a compare-and-swap on the version the module read.
// Case, when set, is stored with it in the same entry (a session entering
// or leaving review opens or closes its case atomically).
type PutIdentitySession struct {
	Session       IdentitySession `json:"session"`
	ExpectVersion uint64          `json:"expect_version"`
	Case          *ReviewCase     `json:"case,omitzero"`
}

func (*PutIdentitySession) Kind() string { return "identity_session.put" }
func (c *PutIdentitySession) Apply(tx *Tx) (any, error) {
	s := c.Session
	if _, ok := tx.next.Workspaces[s.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, s.WorkspaceID)
	}
	if len(s.PendingEvents) > MaxPendingIdentityEvents {
		s.PendingEvents = s.PendingEvents[len(s.PendingEvents)-MaxPendingIdentityEvents:]
	}
	cur := tx.next.IdentitySession(s.WorkspaceID, s.ID)
	if c.ExpectVersion == 0 {
		if cur != nil {
			return nil, fmt.Errorf("%w: identity session %s exists", ErrConflict, s.ID)
		}
		w := tx.identityOf(s.WorkspaceID)
		for id, o := range w.Sessions {
			if at, ok := o.prunableAt(); ok && at.Before(s.CreatedAt) {
				delete(w.Sessions, id)
			}
		}
		if len(w.Sessions) >= MaxIdentitySessionsPerWorkspace {
			return nil, fmt.Errorf("%w: the workspace holds %d identity sessions", ErrIdentitySessionsFull, len(w.Sessions))
		}
	} else if cur == nil {
		return nil, fmt.Errorf("%w: identity session %s", ErrNotFound, s.ID)
	} else if cur.Version != c.ExpectVersion {
		return nil, fmt.Errorf("%w: identity session %s is at version %d, not %d", ErrStaleVersion, s.ID, cur.Version, c.ExpectVersion)
	}
	w := tx.identityOf(s.WorkspaceID)
	if c.Case != nil {
		k := *c.Case
		if k.WorkspaceID != s.WorkspaceID {
			return nil, fmt.Errorf("%w: case of another workspace", ErrConflict)
		}
		if err := putCase(w, &k, k.CreatedAt); err != nil {
			return nil, err
		}
	}
	s.Version = c.ExpectVersion + 1
	w.Sessions[s.ID] = &s
	return &s, nil
}

// putCase stores k, pruning resolved cases past retention when k is new.
func putCase(w *IdentityWorkspace, k *ReviewCase, now time.Time) error {
	if old := w.Cases[k.ID]; old == nil {
		for id, o := range w.Cases {
			if o.Status != "open" && o.ResolvedAt.Add(ReviewCaseRetention).Before(now) {
				delete(w.Cases, id)
			}
		}
		if len(w.Cases) >= MaxReviewCasesPerWorkspace {
			return fmt.Errorf("%w: the workspace holds %d review cases", ErrReviewQueueFull, len(w.Cases))
		}
		k.Version = 1
	} else {
		k.Version = old.Version + 1
	}
	w.Cases[k.ID] = k
	return nil
}

// AckIdentityEvents removes a session's pending events up to Sequence once
// the outbox stored them. It does not change the session's version.
type AckIdentityEvents struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"session_id"`
	Sequence    uint64 `json:"sequence"`
}

func (*AckIdentityEvents) Kind() string { return "identity_session.ack_events" }
func (c *AckIdentityEvents) Apply(tx *Tx) (any, error) {
	cur := tx.next.IdentitySession(c.WorkspaceID, c.ID)
	if cur == nil {
		return nil, nil
	}
	var keep []IdentityEvent
	for _, e := range cur.PendingEvents {
		if e.Sequence > c.Sequence {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(cur.PendingEvents) {
		return cur, nil
	}
	s := *cur
	s.PendingEvents = keep
	tx.identityOf(c.WorkspaceID).Sessions[s.ID] = &s
	return &s, nil
}

// PutReviewCase opens (ExpectVersion 0) or updates (compare-and-swap) a
// case that belongs to no identity session (another module's escalation).
type PutReviewCase struct {
	Case          ReviewCase `json:"case"`
	ExpectVersion uint64     `json:"expect_version"`
}

func (*PutReviewCase) Kind() string { return "review_case.put" }
func (c *PutReviewCase) Apply(tx *Tx) (any, error) {
	k := c.Case
	if _, ok := tx.next.Workspaces[k.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, k.WorkspaceID)
	}
	cur := tx.next.ReviewCase(k.WorkspaceID, k.ID)
	switch {
	case c.ExpectVersion == 0 && cur != nil:
		return nil, fmt.Errorf("%w: review case %s exists", ErrConflict, k.ID)
	case c.ExpectVersion != 0 && cur == nil:
		return nil, fmt.Errorf("%w: review case %s", ErrNotFound, k.ID)
	case c.ExpectVersion != 0 && cur.Version != c.ExpectVersion:
		return nil, fmt.Errorf("%w: review case %s", ErrStaleVersion, k.ID)
	}
	now := k.CreatedAt
	if !k.ResolvedAt.IsZero() {
		now = k.ResolvedAt
	}
	if err := putCase(tx.identityOf(k.WorkspaceID), &k, now); err != nil {
		return nil, err
	}
	return &k, nil
}

func deleteIdentityOf(tx *Tx, workspaceID string) {
	if _, ok := tx.next.Identity[workspaceID]; ok {
		delete(Writable(tx, "identity", &tx.next.Identity), workspaceID)
	}
}

// PruneIdentity applies the identity retention in every workspace: a
// session is dropped IdentitySessionRetention after it ended (or after its
// capture deadline when it never ended; never while in manual review or
// while it still owes webhook events), a resolved review case
// ReviewCaseRetention after its resolution. The leader issues it on a
// timer, so retention holds in a workspace that creates nothing new.
type PruneIdentity struct {
	At time.Time `json:"at"`
}

func (*PruneIdentity) Kind() string { return "identity.prune" }
func (c *PruneIdentity) Apply(tx *Tx) (any, error) {
	n := 0
	for _, ws := range slices.Sorted(maps.Keys(tx.next.Identity)) {
		cur := tx.next.Identity[ws]
		var sessions, cases []string
		for id, s := range cur.Sessions {
			if IdentitySessionPrunable(s, c.At) {
				sessions = append(sessions, id)
			}
		}
		for id, k := range cur.Cases {
			if ReviewCasePrunable(k, c.At) {
				cases = append(cases, id)
			}
		}
		if len(sessions)+len(cases) == 0 {
			continue
		}
		w := tx.identityOf(ws)
		for _, id := range sessions {
			delete(w.Sessions, id)
		}
		for _, id := range cases {
			delete(w.Cases, id)
		}
		n += len(sessions) + len(cases)
	}
	return n, nil
}

// IdentitySessionPrunable reports whether PruneIdentity at now drops s.
func IdentitySessionPrunable(s *IdentitySession, now time.Time) bool {
	at, ok := s.prunableAt()
	return ok && at.Before(now) && len(s.PendingEvents) == 0
}

// ReviewCasePrunable reports whether PruneIdentity at now drops k.
func ReviewCasePrunable(k *ReviewCase, now time.Time) bool {
	return k.Status != "open" && !k.ResolvedAt.IsZero() && k.ResolvedAt.Add(ReviewCaseRetention).Before(now)
}
