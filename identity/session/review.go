package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/events"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Review queue: sessions in manual review, and other modules'
// escalations (OpenCase), resolved by an operator with a decision and a
// note. A session's case is opened and resolved in the same Raft entry as
// the session's own change.

// Case kinds and statuses.
const (
	KindIdentitySession = "identity_session"
	CaseOpen            = "open"
	CaseResolved        = "resolved"
	CaseWithdrawn       = "withdrawn"
)

// Decisions a reviewer may record.
const (
	DecisionVerified = "verified"
	DecisionRejected = "rejected"
)

// CaseView is a review case as the admin API shows it: reasons, the
// attempts with their check statuses and measured values (never images,
// never subject identifiers), and the resolution.
type CaseView struct {
	CaseID     string     `json:"case_id" required:"true"`
	Kind       string     `json:"kind" required:"true" doc:"identity_session, or the kind another module opened the case with (journeys escalations)."`
	Reference  string     `json:"reference" required:"true" doc:"The session id (identity_session) or the other module's reference."`
	Status     string     `json:"status" required:"true" enum:"open|resolved|withdrawn"`
	Reasons    []string   `json:"reasons" required:"true"`
	Decision   string     `json:"decision,omitempty" enum:"verified|rejected"`
	Note       string     `json:"note,omitempty"`
	ResolvedBy string     `json:"resolved_by,omitempty"`
	CreatedAt  time.Time  `json:"created_at" required:"true"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	Session    *Evidence  `json:"session,omitempty" doc:"For identity_session cases: the redacted evidence."`
}

// Evidence is what a reviewer sees of a session: no image, no subject id.
type Evidence struct {
	AssuranceLevel string    `json:"assurance_level" required:"true"`
	Action         string    `json:"action" required:"true"`
	Country        string    `json:"country" required:"true"`
	DocumentType   string    `json:"document_type" required:"true"`
	Status         string    `json:"status" required:"true"`
	Steps          Steps     `json:"steps" required:"true"`
	Attempts       []Attempt `json:"attempts" required:"true"`
	Redacted       bool      `json:"redacted" required:"true"`
}

// CaseList is a workspace's queue.
type CaseList struct {
	Cases []CaseView `json:"cases" required:"true"`
}

func (m *Module) caseView(c *catalog.Catalog, k *catalog.ReviewCase, now time.Time) CaseView {
	v := CaseView{CaseID: k.ID, Kind: k.Kind, Reference: k.Reference, Status: k.Status, Reasons: append([]string{}, k.Reasons...),
		Decision: k.Decision, Note: k.Note, ResolvedBy: k.ResolvedBy, CreatedAt: k.CreatedAt}
	if !k.ResolvedAt.IsZero() {
		t := k.ResolvedAt
		v.ResolvedAt = &t
	}
	if k.Kind == KindIdentitySession {
		if s := c.IdentitySession(k.WorkspaceID, k.Reference); s != nil {
			r := view(s, now)
			v.Session = &Evidence{AssuranceLevel: r.AssuranceLevel, Action: r.Action, Country: r.Country, DocumentType: r.DocumentType,
				Status: r.Status, Steps: r.Steps, Attempts: r.Attempts, Redacted: r.Redacted}
		}
	}
	return v
}

// Cases lists a workspace's review cases, open first, oldest first;
// status "" lists all.
func (m *Module) Cases(workspaceID, status string) (*CaseList, error) {
	c := m.d.Store.Catalog()
	if c.Workspaces[workspaceID] == nil {
		return nil, catalog.ErrNotFound
	}
	if status != "" && status != CaseOpen && status != CaseResolved && status != CaseWithdrawn {
		return nil, errcode.Field("status", "open, resolved or withdrawn")
	}
	ks := c.ReviewCases(workspaceID)
	slices.SortFunc(ks, func(a, b *catalog.ReviewCase) int {
		if (a.Status == CaseOpen) != (b.Status == CaseOpen) {
			if a.Status == CaseOpen {
				return -1
			}
			return 1
		}
		if x := a.CreatedAt.Compare(b.CreatedAt); x != 0 {
			return x
		}
		return strings.Compare(a.ID, b.ID)
	})
	now := m.d.Now().UTC()
	out := &CaseList{Cases: []CaseView{}}
	for _, k := range ks {
		if status == "" || k.Status == status {
			out.Cases = append(out.Cases, m.caseView(c, k, now))
		}
	}
	return out, nil
}

// Case reads one case.
func (m *Module) Case(workspaceID, caseID string) (*CaseView, error) {
	c := m.d.Store.Catalog()
	k := c.ReviewCase(workspaceID, caseID)
	if k == nil {
		return nil, ErrCaseNotFound
	}
	v := m.caseView(c, k, m.d.Now().UTC())
	return &v, nil
}

// OpenCase puts another module's escalation (kind, its reference, the
// reasons) in the workspace's review queue and returns the case id.
// Resolving it records the decision; the opening module reads it back with
// Case (ResolvedCase hooks are the lead's to wire).
func (m *Module) OpenCase(ctx context.Context, workspaceID, kind, reference string, reasons []string) (string, error) {
	if kind == "" || kind == KindIdentitySession || !ident.Action(kind) {
		return "", errcode.Field("kind", "1 to 64 of A-Z a-z 0-9 _ - . /, not identity_session")
	}
	if !ident.Valid(reference) || len(reference) > 128 {
		return "", errcode.Field("reference", "1 to 128 bytes without control characters")
	}
	if len(reasons) > 16 {
		return "", errcode.Field("reasons", "at most 16")
	}
	for _, r := range reasons {
		if !ident.Action(r) {
			return "", errcode.Field("reasons", "each 1 to 64 of A-Z a-z 0-9 _ - . /")
		}
	}
	k := catalog.ReviewCase{ID: "case_" + randomHex(12), WorkspaceID: workspaceID, Kind: kind, Reference: reference,
		Reasons: append([]string{}, reasons...), Status: CaseOpen, CreatedAt: m.d.Now().UTC()}
	if _, err := m.d.Store.Apply(ctx, &catalog.PutReviewCase{Case: k}); err != nil {
		if errors.Is(err, catalog.ErrReviewQueueFull) {
			return "", ErrQueueFull
		}
		return "", err
	}
	return k.ID, nil
}

// Resolve records a reviewer's decision on an open case. For a session
// case the session moves from manual_review to the decision in the same
// Raft entry, and emits review_resolved then verified or rejected.
func (m *Module) Resolve(ctx context.Context, workspaceID, caseID, decision, note, by string) (*CaseView, error) {
	if decision != DecisionVerified && decision != DecisionRejected {
		return nil, errcode.Field("decision", "verified or rejected")
	}
	if len(note) > 1024 {
		return nil, errcode.Field("note", "at most 1024 bytes")
	}
	if by == "" || len(by) > 128 || !ident.Valid(by) {
		return nil, errcode.Field("by", "1 to 128 bytes without control characters")
	}
	c := m.d.Store.Catalog()
	k := c.ReviewCase(workspaceID, caseID)
	if k == nil {
		return nil, ErrCaseNotFound
	}
	if k.Status != CaseOpen {
		return nil, ErrCaseClosed
	}
	now := m.d.Now().UTC()
	nk := *k
	nk.Status, nk.Decision, nk.Note, nk.ResolvedBy, nk.ResolvedAt = CaseResolved, decision, note, by, now
	if k.Kind != KindIdentitySession {
		if _, err := m.d.Store.Apply(ctx, &catalog.PutReviewCase{Case: nk, ExpectVersion: k.Version}); err != nil {
			if errors.Is(err, catalog.ErrStaleVersion) {
				return nil, ErrCaseClosed
			}
			return nil, err
		}
		return m.Case(workspaceID, caseID)
	}
	s := c.IdentitySession(workspaceID, k.Reference)
	if s == nil || effective(s, now) != StatusReview || s.CaseID != k.ID {
		return nil, ErrCaseClosed.With("the session is no longer in manual review")
	}
	n := *s
	n.Status, n.UpdatedAt, n.EndedAt = decision, now, now
	n.Resolution = &catalog.IdentityResolution{Decision: decision, Note: note, By: by, At: now}
	queue(&n, events.TypeReviewResolved, nil)
	queue(&n, eventType[decision], nil)
	got, err := m.put(ctx, &n, s.Version, &nk)
	if err != nil {
		return nil, err
	}
	m.flush(ctx, got)
	return m.Case(workspaceID, caseID)
}

// Redact erases what a session keeps of the person and their capture:
// the subject hash, the consent reference, the document image hash, the
// reasons and measured values of every attempt and of the review case
// (check statuses and outcomes stay, so the result still says what
// happened). A session without an outcome is cancelled first; one in
// review is cancelled and its case withdrawn. It emits
// identity.verification.redacted (and cancelled when it cancelled).
func (m *Module) Redact(ctx context.Context, who Caller, id, capability string) (*Result, error) {
	s, now, err := m.load(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	if s.Redacted {
		r := view(s, now)
		return &r, nil
	}
	st := effective(s, now)
	if st == StatusProcessing {
		return nil, ErrBusy
	}
	n := *s
	var k *catalog.ReviewCase
	if !final(st) {
		if st == StatusReview && s.CaseID != "" {
			if cur := m.d.Store.Catalog().ReviewCase(s.WorkspaceID, s.CaseID); cur != nil && cur.Status == CaseOpen {
				nk := *cur
				nk.Status, nk.ResolvedAt, nk.ResolvedBy = CaseWithdrawn, now, "redaction"
				k = &nk
			}
		}
		n.Status, n.EndedAt, n.ProcessingFrom, n.ProcessingUntil = StatusCancelled, now, "", time.Time{}
		queue(&n, events.TypeCancelled, []string{"redacted"})
	}
	if k == nil && s.CaseID != "" {
		if cur := m.d.Store.Catalog().ReviewCase(s.WorkspaceID, s.CaseID); cur != nil {
			nk := *cur
			k = &nk
		}
	}
	if k != nil {
		k.Reasons, k.Note = []string{"redacted"}, ""
	}
	n.SubjectHash, n.ConsentReference, n.DocumentImageHash, n.DocumentReasons, n.ReviewReasons = "", "", "", nil, []string{"redacted"}
	n.Challenge = nil
	att := make([]catalog.IdentityAttempt, len(s.Attempts))
	for i, a := range s.Attempts {
		att[i] = catalog.IdentityAttempt{N: a.N, Step: a.Step, At: a.At, Outcome: a.Outcome, Checks: a.Checks}
	}
	n.Attempts = att
	if n.Resolution != nil {
		rs := *n.Resolution
		rs.Note = ""
		n.Resolution = &rs
	}
	n.PendingEvents = slices.Clone(s.PendingEvents)
	for i := range n.PendingEvents {
		n.PendingEvents[i].Reasons = nil
	}
	n.Redacted, n.RedactedAt, n.UpdatedAt = true, now, now
	queue(&n, events.TypeRedacted, nil)
	got, err := m.put(ctx, &n, s.Version, k)
	if err != nil {
		return nil, err
	}
	m.flush(ctx, got)
	r := view(m.reread(got), now)
	return &r, nil
}
