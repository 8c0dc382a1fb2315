package journeys

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// StartRequest is POST /journeys/start after decoding.
type StartRequest struct {
	JourneyKey         string
	SubjectID          string
	Action             string
	OperationReference string
	RiskLevel          string
	RiskScore          float64
	ConsentVersion     string
	RequestReference   string
}

var riskLevels = map[string]int{"": 0, "low": 0, "medium": 1, "high": 2, "critical": 3}

// Validate checks the fields.
func (r StartRequest) Validate() error {
	switch {
	case !validKey(r.JourneyKey):
		return ErrInvalidRequest.With("journey_key: 1 to 64 of a-z 0-9 _ - .")
	case r.SubjectID != "" && !ident.Valid(r.SubjectID):
		return ErrInvalidRequest.With("subject_id: 1 to 256 bytes of UTF-8 without control characters")
	case r.Action != "" && !ident.Action(r.Action):
		return ErrInvalidRequest.With("action: 1 to 64 of A-Z a-z 0-9 _ - . /")
	case len(r.OperationReference) > 128 || !ident.Printable(r.OperationReference):
		return ErrInvalidRequest.With("operation_reference: at most 128 printable ASCII characters")
	case len(r.RequestReference) > 128 || !ident.Printable(r.RequestReference):
		return ErrInvalidRequest.With("request_reference: at most 128 printable ASCII characters")
	case len(r.ConsentVersion) > 64 || !ident.Printable(r.ConsentVersion):
		return ErrInvalidRequest.With("consent_version: at most 64 printable characters")
	case r.RiskScore < 0 || r.RiskScore > 1 || r.RiskScore != r.RiskScore:
		return ErrInvalidRequest.With("risk_score: 0 to 1")
	}
	if _, ok := riskLevels[r.RiskLevel]; !ok {
		return ErrInvalidRequest.With("risk_level: low, medium, high or critical")
	}
	return nil
}

// StartResult is what a start hands the caller (spec 2.7 start).
type StartResult struct {
	Journey            *catalog.Journey
	SessionToken       string
	PersonToken        string
	ExpiresIn          int
	Method             string
	RequestedAssurance string
	PolicyVersion      int
	Consent            catalog.JourneyConsent
	Requirements       catalog.JourneyRequirements
	RiskLevel          string
	Status             string
}

// riskLevel is the level escalation acts on: the service's own score of
// the subject, raised (never lowered) by the caller's hints.
func (m *Module) riskLevel(ctx context.Context, ws *catalog.Workspace, subjectHash string, r StartRequest) string {
	service := 0.0
	if subjectHash != "" && m.signals != nil {
		sig, err := m.signals.SubjectSignals(ctx, ws.ID, subjectHash, "")
		if err == nil {
			service = trust.ServiceScore(sig)
		} else {
			// Unknown risk state fails toward friction.
			service = trust.ScoreVerify
		}
	}
	lvl := trust.LevelOf(trust.EffectiveScore(service, trust.Hints{RiskScore: r.RiskScore}))
	if riskLevels[r.RiskLevel] > riskLevels[lvl] {
		lvl = r.RiskLevel
	}
	return lvl
}

// escalate returns the method a start at level uses, and whether it opens
// escalated (assisted review) instead.
func escalate(j *catalog.Journey, level string) (string, bool) {
	e := j.Escalation
	if !e.Enabled {
		return j.Method, false
	}
	switch riskLevels[level] {
	case 2, 3:
		if e.ReviewOnHighRisk {
			return j.Method, true
		}
		if e.HighRiskMethod != "" {
			return e.HighRiskMethod, false
		}
	case 1:
		if e.MediumRiskMethod != "" {
			return e.MediumRiskMethod, false
		}
	}
	return j.Method, false
}

// Start opens a session of a workspace's journey.
func (m *Module) Start(ctx context.Context, who Caller, r StartRequest) (StartResult, error) {
	if err := r.Validate(); err != nil {
		return StartResult{}, err
	}
	cat := m.store.Catalog()
	ws := who.Workspace
	j := cat.Journey(ws.ID, r.JourneyKey)
	if j == nil {
		return StartResult{}, ErrJourneyNotFound
	}
	if r.ConsentVersion != "" && j.Consent.Version != "" && r.ConsentVersion != j.Consent.Version {
		return StartResult{}, ErrConsentOutdated.With("the journey asks for consent version %s", j.Consent.Version)
	}
	subject := subjectHash(ws, r.SubjectID)
	level := m.riskLevel(ctx, ws, subject, r)
	method, review := escalate(j, level)
	if (j.Requirements.Identity || needsSubject(method)) && r.SubjectID == "" {
		return StartResult{}, ErrInvalidRequest.With("subject_id: required by this journey (server-derived, repeated at siteverify)")
	}
	if j.Requirements.OperationBinding && r.OperationReference == "" {
		return StartResult{}, ErrInvalidRequest.With("operation_reference: required by this journey")
	}
	k := m.keys.Signer(cat)
	if k == nil {
		return StartResult{}, ErrNoSigningKey
	}
	now := m.now().UTC()
	life := time.Duration(j.SessionLifetimeSeconds) * time.Second
	if life <= 0 || life > SessionLifetime {
		life = SessionLifetime
	}
	id := newID()
	s := catalog.JourneySession{ID: hex.EncodeToString(id[:]), WorkspaceID: ws.ID, AppID: who.AppID, Channel: who.Channel,
		JourneyKey: j.Key, PolicyVersion: j.PolicyVersion, Method: method, DefinedMethod: j.Method, RequestedAssurance: j.RequestedAssurance,
		Requirements: j.Requirements, Consent: j.Consent, SubjectHash: subject, OperationHash: operationHash(ws, r.OperationReference),
		Action: r.Action, RiskLevel: level, Status: StatusStarted, CreatedAt: now, ExpiresAt: now.Add(life), UpdatedAt: now}
	if review {
		// A high-risk start goes to assisted review; without a queue to
		// hold the case it fails closed (503), never open without one.
		cases := m.engines().cases
		if cases == nil {
			return StartResult{}, ErrMethodUnavailable.With("this journey sends high-risk starts to review, and no review queue is configured on this node")
		}
		// The review case names the session, never the subject.
		ref, err := cases.OpenCase(ctx, ws.ID, "journey", "journey-session:"+s.ID, []string{"high_risk_start", "risk/" + level})
		if err != nil {
			return StartResult{}, ErrMethodUnavailable.With("the review queue did not answer")
		}
		s.Status, s.CaseReference = StatusEscalated, ref
	}
	if _, err := m.store.Apply(ctx, &catalog.CreateJourneySession{Session: s, At: now}); err != nil {
		if errors.Is(err, catalog.ErrJourneySessionsFull) {
			return StartResult{}, ErrSessionsFull
		}
		return StartResult{}, err
	}
	tok := token.Journey{ID: id, WorkspaceID: ws.ID, Expires: s.ExpiresAt.Unix()}
	return StartResult{Journey: j, SessionToken: tok.Sign(k, false), PersonToken: tok.Sign(k, true), ExpiresIn: int(life / time.Second),
		Method: method, RequestedAssurance: j.RequestedAssurance, PolicyVersion: j.PolicyVersion, Consent: j.Consent,
		Requirements: j.Requirements, RiskLevel: level, Status: s.Status}, nil
}

// StatusResult is a session as /journeys/status reads it.
type StatusResult struct {
	Session   *catalog.JourneySession
	Status    string
	ExpiresIn int
	Verified  bool
	// NextStep is the policy-approved step after a failure ("" when none).
	NextStep string
}

// nextStep is what the customer may do after a failure, as the journey's
// policy allows: retry the method with a fresh proof while the session is
// open, else start again, or (escalated) wait for the review.
func nextStep(s *catalog.JourneySession, now time.Time) string {
	switch statusAt(s, now) {
	case StatusEscalated:
		return "await_review"
	case StatusFailed:
		if open(s, now) {
			return "retry_with_fresh_proof"
		}
		return "start_new_journey"
	case StatusExpired:
		return "start_new_journey"
	}
	return ""
}

func (m *Module) statusOf(s *catalog.JourneySession) StatusResult {
	now := m.now()
	left := int(s.ExpiresAt.Sub(now) / time.Second)
	return StatusResult{Session: s, Status: statusAt(s, now), ExpiresIn: max(left, 0), Verified: s.Consumed, NextStep: nextStep(s, now)}
}

// Status reads a session without consuming or changing it.
func (m *Module) Status(ctx context.Context, who Caller, sessionToken string) (StatusResult, error) {
	s, err := m.own(ctx, who, sessionToken)
	if err != nil {
		return StatusResult{}, err
	}
	return m.statusOf(s), nil
}

// own resolves a session token of the caller's application.
func (m *Module) own(ctx context.Context, who Caller, sessionToken string) (*catalog.JourneySession, error) {
	if sessionToken == "" {
		return nil, ErrInvalidRequest.With("session_token: required")
	}
	s, _, ok := m.session(ctx, m.store.Catalog(), who.Workspace, sessionToken, false)
	if !ok || s.AppID != who.AppID || s.Channel != who.Channel {
		// Another workspace's or application's session is unknown here.
		return nil, ErrInvalidSession
	}
	return s, nil
}

// EscalateRequest is POST /journeys/escalate after decoding.
type EscalateRequest struct {
	SessionToken   string
	ReasonCode     string
	Priority       string
	OperationLabel string
}

// EscalateResult names the review case.
type EscalateResult struct {
	CaseReference string
	Status        string
}

// Escalate opens a privacy-safe review case for a session: the case holds
// the session reference, the reason code, the priority and the operation
// label (a code, not free text), never the subject. The session becomes
// escalated: no proof completes it afterwards, and the review's outcome
// never reaches it, so assisted review cannot turn a failed proof into a
// completed journey; the customer acts on the review through the queue.
func (m *Module) Escalate(ctx context.Context, who Caller, r EscalateRequest) (EscalateResult, error) {
	switch {
	case !validCode(r.ReasonCode, 64):
		return EscalateResult{}, ErrInvalidRequest.With("reason_code: 1 to 64 of a-z 0-9 _ - .")
	case r.Priority != "" && r.Priority != "low" && r.Priority != "normal" && r.Priority != "high":
		return EscalateResult{}, ErrInvalidRequest.With("priority: low, normal or high")
	case r.OperationLabel != "" && !validCode(r.OperationLabel, 64):
		return EscalateResult{}, ErrInvalidRequest.With("operation_label: 1 to 64 of a-z 0-9 _ - . (a label, not personal data)")
	}
	s, err := m.own(ctx, who, r.SessionToken)
	if err != nil {
		return EscalateResult{}, err
	}
	if s.CaseReference != "" {
		return EscalateResult{CaseReference: s.CaseReference, Status: statusAt(s, m.now())}, nil
	}
	if s.Consumed {
		return EscalateResult{}, ErrSessionClosed.With("the journey was verified; nothing to review")
	}
	cases := m.engines().cases
	if cases == nil {
		return EscalateResult{}, ErrMethodUnavailable.With("no review queue is configured on this node")
	}
	prio := r.Priority
	if prio == "" {
		prio = "normal"
	}
	reasons := []string{r.ReasonCode, "priority/" + prio}
	if r.OperationLabel != "" {
		reasons = append(reasons, "operation/"+r.OperationLabel)
	}
	ref, err := cases.OpenCase(ctx, s.WorkspaceID, "journey", "journey-session:"+s.ID, reasons)
	if err != nil {
		return EscalateResult{}, ErrMethodUnavailable.With("the review queue did not answer")
	}
	var out EscalateResult
	err = m.retryCAS(ctx, s.WorkspaceID, s.ID, func(cur *catalog.JourneySession) error {
		if cur.Consumed {
			return ErrSessionClosed.With("the journey was verified; nothing to review")
		}
		n, err := m.transition(ctx, cur, func(n *catalog.JourneySession) {
			n.Status, n.CaseReference, n.ProofID = StatusEscalated, ref, ""
		})
		if err == nil {
			out = EscalateResult{CaseReference: ref, Status: n.Status}
		}
		return err
	})
	return out, err
}

// SiteverifyRequest is POST /journeys/siteverify after decoding.
type SiteverifyRequest struct {
	SessionToken       string
	Response           string
	SubjectID          string
	Action             string
	OperationReference string
	ConsentVersion     string
	ConsentAccepted    bool
}

// SiteverifyResult is 2.7 verify.
type SiteverifyResult struct {
	Success  bool
	Known    bool // the session is the caller's: Trust and Journey are set
	Achieved Achieves
	Method   string
	// OperationBound: the proof is bound to the session's operation.
	OperationBound bool
	JourneyKey     string
	Status         string
	Codes          []string
	NextStep       string
}

// proofSkew keeps a consumed proof's marker past its expiry (as
// risk/trust does for the same key).
const proofSkew = 30 * time.Second

// Siteverify exchanges a session token and its proof once. The proof's
// marker is the one /trust/siteverify consumes ("prf/<id>"), so a proof
// is spent at whichever endpoint sees it first, cluster-wide; the session
// moves to completed-and-verified (success) or failed (a recognised proof
// that did not satisfy the bindings: it is spent, and a retry needs a
// fresh proof) by compare-and-set in Raft. A replayed proof or session
// never changes the session.
func (m *Module) Siteverify(ctx context.Context, who Caller, r SiteverifyRequest) (SiteverifyResult, error) {
	switch {
	case r.SessionToken == "":
		return SiteverifyResult{}, ErrInvalidRequest.With("session_token: required")
	case r.SubjectID != "" && !ident.Valid(r.SubjectID):
		return SiteverifyResult{}, ErrInvalidRequest.With("subject_id: 1 to 256 bytes of UTF-8 without control characters")
	case r.Action != "" && !ident.Action(r.Action):
		return SiteverifyResult{}, ErrInvalidRequest.With("action: 1 to 64 of A-Z a-z 0-9 _ - . /")
	case len(r.OperationReference) > 128 || !ident.Printable(r.OperationReference) || len(r.ConsentVersion) > 64 || !ident.Printable(r.ConsentVersion):
		return SiteverifyResult{}, ErrInvalidRequest.With("operation_reference (128) or consent_version (64): printable ASCII within limits")
	}
	ws := who.Workspace
	cat := m.store.Catalog()
	s, err := m.own(ctx, who, r.SessionToken)
	if err != nil {
		return SiteverifyResult{Codes: []string{CodeInvalidSession}}, nil
	}
	now := m.now()
	res := SiteverifyResult{Known: true, JourneyKey: s.JourneyKey, Method: s.Method}
	answer := func(s *catalog.JourneySession, codes ...string) (SiteverifyResult, error) {
		res.Status, res.Codes, res.NextStep = statusAt(s, now), codes, nextStep(s, now)
		return res, nil
	}
	switch st := statusAt(s, now); {
	case s.Consumed || st == StatusExpired:
		return answer(s, errcode.CodeTimeoutOrDuplicate)
	case st == StatusEscalated:
		return answer(s, CodeEscalated)
	}
	if r.Response == "" {
		// No proof: the person has not completed the method (yet).
		if s.Status != StatusCompleted {
			return answer(s, CodeNotCompleted)
		}
		return answer(s, errcode.CodeInvalidResponse)
	}
	p, perr := token.DecodeProof(r.Response, func(id string) *token.Key { return m.keys.Verifier(cat, id) })
	if r.Response == "" || perr != nil || p.WorkspaceID != ws.ID {
		return answer(s, errcode.CodeInvalidResponse)
	}
	pid := hex.EncodeToString(p.ID[:])
	if now.Unix() >= p.Expires {
		return answer(s, errcode.CodeTimeoutOrDuplicate)
	}
	if s.ProofID != pid {
		// This node may not have applied the completion yet: read the
		// session as committed before deciding.
		if f, ok := m.fresh(ctx, s.WorkspaceID, s.ID); ok {
			s = f
		}
		switch st := statusAt(s, now); {
		case s.Consumed || st == StatusExpired:
			return answer(s, errcode.CodeTimeoutOrDuplicate)
		case st == StatusEscalated:
			return answer(s, CodeEscalated)
		}
	}
	if s.ProofID != pid {
		// Not this session's current proof: another session's, or one
		// spent by an earlier attempt (a fresh proof is required).
		if s.ProofID == "" && s.Status == StatusFailed {
			return answer(s, errcode.CodeTimeoutOrDuplicate)
		}
		return answer(s, CodeProofNotForSession)
	}
	// Spend the proof cluster-wide before deciding: only the first use
	// decides and moves the session.
	op := &actors.Redeem{ID: actors.SpaceProof + pid, Expires: time.Unix(p.Expires, 0).Add(proofSkew).UnixNano(), Outcome: actors.Outcome{At: now.UnixNano()}}
	if err := m.ask.Ask(op.ID, op); err != nil {
		return SiteverifyResult{}, err
	}
	if !op.First {
		return answer(s, errcode.CodeTimeoutOrDuplicate)
	}
	codes := bindingCodes(ws, s, p, r)
	var final *catalog.JourneySession
	err = m.retryCAS(ctx, ws.ID, s.ID, func(cur *catalog.JourneySession) error {
		if cur.ProofID != pid && !cur.Consumed {
			// A lagging copy: decide on the committed one.
			if f, ok := m.fresh(ctx, ws.ID, s.ID); ok {
				cur = f
			}
		}
		if cur.ProofID != pid || cur.Consumed {
			// Escalated or re-attempted meanwhile: the spent proof no
			// longer completes anything.
			final, codes = cur, []string{errcode.CodeTimeoutOrDuplicate}
			if statusAt(cur, now) == StatusEscalated {
				codes = []string{CodeEscalated}
			}
			return nil
		}
		n, err := m.transition(ctx, cur, func(n *catalog.JourneySession) {
			if len(codes) == 0 {
				n.Consumed, n.Status = true, StatusCompleted
				return
			}
			n.Status, n.ProofID, n.FailedAttempts, n.LastError = StatusFailed, "", n.FailedAttempts+1, codes[0]
		})
		final = n
		return err
	})
	if err != nil {
		return SiteverifyResult{}, err
	}
	if len(codes) > 0 {
		m.countFailure(ws.ID, s.SubjectHash)
	}
	res.Achieved = Achieves{Assurance: trust.Level(min(p.Assurance, uint8(trust.LevelHigh))), Identity: p.Identity, Liveness: p.Liveness, DeviceBound: p.DeviceBound,
		Authorization: trust.AuthorizationCapable(p.Identity, p.HasOperation)}
	res.OperationBound = p.HasOperation
	res.Success = len(codes) == 0 && final.Consumed && final.Status == StatusCompleted
	return answer(final, codes...)
}

// bindingCodes checks a session's proof against the siteverify request:
// the same server-derived subject (always for identity-bound journeys),
// the same action and operation, the consent, and the assurance.
func bindingCodes(ws *catalog.Workspace, s *catalog.JourneySession, p token.Proof, r SiteverifyRequest) []string {
	codes := []string{}
	switch {
	case s.SubjectHash != "" && r.SubjectID != "" && subjectHash(ws, r.SubjectID) != s.SubjectHash:
		codes = append(codes, errcode.CodeSubjectMismatch)
	case s.Requirements.Identity && r.SubjectID == "":
		codes = append(codes, CodeSubjectRequired)
	case s.SubjectHash == "" && r.SubjectID != "":
		// The session was not bound to a subject: it cannot vouch for one.
		codes = append(codes, errcode.CodeSubjectMismatch)
	}
	if s.Action != "" && r.Action != s.Action {
		codes = append(codes, errcode.CodeActionMismatch)
	}
	if s.OperationHash != "" && operationHash(ws, r.OperationReference) != s.OperationHash ||
		s.OperationHash == "" && r.OperationReference != "" {
		codes = append(codes, errcode.CodeOperationMismatch)
	}
	if s.Consent.Required {
		switch {
		case !r.ConsentAccepted:
			codes = append(codes, CodeConsentRequired)
		case r.ConsentVersion != s.Consent.Version:
			codes = append(codes, CodeConsentMismatch)
		}
	}
	want, _ := trust.ParseLevel(s.RequestedAssurance)
	if !trust.Level(p.Assurance).Satisfies(want) {
		codes = append(codes, errcode.CodeInsufficient)
	}
	return codes
}
