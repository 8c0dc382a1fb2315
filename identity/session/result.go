package session

import (
	"context"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/events"
)

// Attempt is one capture attempt as the result shows it: check statuses
// and measured values, never an image.
type Attempt struct {
	N       int                `json:"n" required:"true"`
	Step    string             `json:"step" required:"true" enum:"document|face"`
	At      time.Time          `json:"at" required:"true"`
	Outcome string             `json:"outcome" required:"true" enum:"passed|review|recapture|reject"`
	Checks  map[string]string  `json:"checks" required:"true" doc:"Status of each check the attempt ran: image_quality, mrz, document_authenticity, authoritative_source (always not_performed) for a document; liveness, face_match_document, face_match_liveness for a face."`
	Reasons []string           `json:"reasons" required:"true" doc:"Stable reason codes."`
	Metrics map[string]float64 `json:"metrics" required:"true" doc:"Measured values (capture quality, similarity, frames): never images, never descriptors."`
}

// Resolution is a reviewer's decision as the result shows it.
type Resolution struct {
	Decision   string    `json:"decision" required:"true" enum:"verified|rejected"`
	ResolvedAt time.Time `json:"resolved_at" required:"true"`
}

// Boundary says what the session's checks can and cannot assert.
type Boundary struct {
	DocumentAuthenticity string `json:"document_authenticity" required:"true" enum:"native-screening-signals"`
	AuthoritativeSource  string `json:"authoritative_source" required:"true" enum:"not-performed"`
	Liveness             string `json:"liveness" required:"true" enum:"active-challenge-response|not-required" doc:"A server-issued head-turn/blink challenge checked on the frames; not presentation-attack detection evaluated to ISO/IEC 30107-3."`
	FaceComparison       string `json:"face_comparison" required:"true" enum:"uncalibrated-threshold|not-required" doc:"The comparison threshold is configured, not calibrated on a measured population."`
}

// Result is a session as GET …/result shows it.
type Result struct {
	SessionID      string      `json:"session_id" required:"true"`
	Status         string      `json:"status" required:"true" enum:"created|collecting|processing|verified|recapture_required|manual_review|rejected|cancelled"`
	Final          bool        `json:"final" required:"true" doc:"true for verified, rejected and cancelled: nothing changes the outcome any more."`
	Expired        bool        `json:"expired" required:"true" doc:"The capture deadline passed before an outcome; no more captures are accepted."`
	AssuranceLevel string      `json:"assurance_level" required:"true" enum:"document_only|standard|high"`
	Action         string      `json:"action" required:"true"`
	Country        string      `json:"country" required:"true"`
	DocumentType   string      `json:"document_type" required:"true"`
	Steps          Steps       `json:"steps" required:"true"`
	AttemptsUsed   int         `json:"attempts_used" required:"true"`
	MaxAttempts    int         `json:"max_attempts" required:"true"`
	Attempts       []Attempt   `json:"attempts" required:"true"`
	ReviewReasons  []string    `json:"review_reasons" required:"true"`
	CaseID         string      `json:"case_id,omitempty" doc:"The review case while or since the session was in manual review."`
	Resolution     *Resolution `json:"resolution,omitempty"`
	Challenge      *Challenge  `json:"liveness_challenge,omitempty" doc:"The outstanding liveness challenge, if any."`
	Sequence       uint64      `json:"sequence" required:"true" doc:"The sequence number of the session's latest webhook event."`
	Redacted       bool        `json:"redacted" required:"true" doc:"Captured-data traces (hashes, reasons, measured values, consent reference) were erased on request."`
	AssuranceBound Boundary    `json:"assurance_boundary" required:"true"`
	CreatedAt      time.Time   `json:"created_at" required:"true"`
	UpdatedAt      time.Time   `json:"updated_at" required:"true"`
	ExpiresAt      time.Time   `json:"expires_at" required:"true"`
	EndedAt        *time.Time  `json:"ended_at,omitempty"`
}

// Steps summarises the required steps.
type Steps struct {
	Document string `json:"document" required:"true" enum:"pending|passed|review"`
	Face     string `json:"face" required:"true" enum:"pending|passed|not_required"`
}

// Challenge is a liveness challenge as the client sees it.
type Challenge struct {
	Nonce    string    `json:"nonce" required:"true"`
	Actions  []string  `json:"actions" required:"true" doc:"Perform these in order while capturing frames: turn_left, turn_right, blink."`
	IssuedAt time.Time `json:"issued_at" required:"true"`
	Deadline time.Time `json:"deadline" required:"true"`
}

func view(s *catalog.IdentitySession, now time.Time) Result {
	st := effective(s, now)
	r := Result{SessionID: s.ID, Status: st, Final: final(st), AssuranceLevel: s.Assurance, Action: s.Action,
		Country: s.Country, DocumentType: s.DocumentType, AttemptsUsed: len(s.Attempts), MaxAttempts: s.MaxAttempts,
		Attempts: []Attempt{}, ReviewReasons: append([]string{}, s.ReviewReasons...), CaseID: s.CaseID, Sequence: s.Sequence,
		Redacted: s.Redacted, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, ExpiresAt: s.ExpiresAt,
		AssuranceBound: Boundary{DocumentAuthenticity: "native-screening-signals", AuthoritativeSource: "not-performed",
			Liveness: "not-required", FaceComparison: "not-required"}}
	r.Expired = capturing(st) && !now.Before(s.ExpiresAt)
	if s.Assurance != DocumentOnly {
		r.AssuranceBound.Liveness, r.AssuranceBound.FaceComparison = "active-challenge-response", "uncalibrated-threshold"
	}
	r.Steps.Document = "pending"
	switch s.DocumentDecision {
	case "verify":
		r.Steps.Document = "passed"
	case "review":
		r.Steps.Document = "review"
	}
	r.Steps.Face = "not_required"
	if s.Assurance != DocumentOnly {
		r.Steps.Face = "pending"
		if s.FacePassed {
			r.Steps.Face = "passed"
		}
	}
	for _, a := range s.Attempts {
		v := Attempt{N: a.N, Step: a.Step, At: a.At, Outcome: a.Outcome, Checks: a.Checks, Reasons: a.Reasons, Metrics: a.Metrics}
		if v.Checks == nil {
			v.Checks = map[string]string{}
		}
		if v.Reasons == nil {
			v.Reasons = []string{}
		}
		if v.Metrics == nil {
			v.Metrics = map[string]float64{}
		}
		r.Attempts = append(r.Attempts, v)
	}
	if s.Resolution != nil {
		r.Resolution = &Resolution{Decision: s.Resolution.Decision, ResolvedAt: s.Resolution.At}
	}
	if c := s.Challenge; c != nil && now.Before(c.Deadline) {
		r.Challenge = &Challenge{Nonce: c.Nonce, Actions: c.Actions, IssuedAt: c.IssuedAt, Deadline: c.Deadline}
	}
	if !s.EndedAt.IsZero() {
		t := s.EndedAt
		r.EndedAt = &t
	}
	return r
}

// eventType is the webhook event of entering status.
var eventType = map[string]string{
	StatusVerified:  events.TypeVerified,
	StatusRejected:  events.TypeRejected,
	StatusReview:    events.TypeReviewRequired,
	StatusRecapture: events.TypeRecaptureRequired,
	StatusCancelled: events.TypeCancelled,
}

// queue appends the event of s's new status (when it has one) with the
// session's next sequence number.
func queue(s *catalog.IdentitySession, typ string, reasons []string) {
	if typ == "" {
		return
	}
	s.Sequence++
	s.PendingEvents = append(s.PendingEvents, catalog.IdentityEvent{Type: typ, Sequence: s.Sequence, Status: s.Status,
		Reasons: append([]string(nil), reasons...)})
}

// EventData is the payload of a session's webhook events: references and
// statuses only, never the subject id or captured data.
type EventData struct {
	SessionID      string   `json:"session_id"`
	Status         string   `json:"status"`
	AssuranceLevel string   `json:"assurance_level"`
	Action         string   `json:"action"`
	Reasons        []string `json:"reasons"`
	CaseID         string   `json:"case_id,omitempty"`
	Decision       string   `json:"decision,omitempty"`
}

// flush hands the session's pending events to the outbox, in order, and
// acknowledges what it stored. Emit is idempotent (the event id derives
// from workspace, type, session and sequence), so a flush repeated after
// a failure stores each event once. A failure leaves the rest pending for
// the next call that loads the session (or FlushPending).
func (m *Module) flush(ctx context.Context, s *catalog.IdentitySession) {
	if m.d.Events == nil || len(s.PendingEvents) == 0 {
		return
	}
	var acked uint64
	for _, e := range s.PendingEvents {
		d := EventData{SessionID: s.ID, Status: e.Status, AssuranceLevel: s.Assurance, Action: s.Action,
			Reasons: append([]string{}, e.Reasons...), CaseID: s.CaseID}
		if e.Type == events.TypeReviewResolved && s.Resolution != nil {
			d.Decision = s.Resolution.Decision
		}
		if _, err := m.d.Events.Emit(ctx, s.WorkspaceID, e.Type, s.ID, e.Sequence, d); err != nil {
			m.d.Log.Warn("identity session: event not stored yet; kept pending", "session", s.ID, "type", e.Type, "seq", e.Sequence, "err", err)
			break
		}
		acked = e.Sequence
	}
	if acked == 0 {
		return
	}
	if _, err := m.d.Store.Apply(ctx, &catalog.AckIdentityEvents{WorkspaceID: s.WorkspaceID, ID: s.ID, Sequence: acked}); err != nil {
		m.d.Log.Warn("identity session: event acknowledgement failed; the events may be emitted again (same ids)", "session", s.ID, "err", err)
	}
}

// FlushPending emits every session's pending events (for a leader's
// periodic sweep); it returns how many sessions it flushed.
func (m *Module) FlushPending(ctx context.Context) int {
	n := 0
	for _, w := range m.d.Store.Catalog().Identity {
		for _, s := range w.Sessions {
			if len(s.PendingEvents) > 0 {
				m.flush(ctx, s)
				n++
			}
		}
	}
	return n
}

// Prune applies the retention (catalog.PruneIdentity) when something is
// due: sessions past IdentitySessionRetention, resolved cases past
// ReviewCaseRetention. It writes to Raft only when there is something to
// drop; the leader calls it on a timer with FlushPending.
func (m *Module) Prune(ctx context.Context) (int, error) {
	now := m.d.Now().UTC()
	due := false
	for _, w := range m.d.Store.Catalog().Identity {
		for _, s := range w.Sessions {
			if due = catalog.IdentitySessionPrunable(s, now); due {
				break
			}
		}
		for _, k := range w.Cases {
			if due = due || catalog.ReviewCasePrunable(k, now); due {
				break
			}
		}
		if due {
			break
		}
	}
	if !due {
		return 0, nil
	}
	v, err := m.d.Store.Apply(ctx, &catalog.PruneIdentity{At: now})
	if err != nil {
		return 0, err
	}
	n, _ := v.(int)
	return n, nil
}
