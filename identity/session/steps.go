package session

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Attempt outcomes.
const (
	outPassed    = "passed"
	outReview    = "review"
	outRecapture = "recapture"
	outReject    = "reject"
)

// MaxFrameBytes bounds one decoded liveness frame.
const MaxFrameBytes = 1 << 20

// StepResult is the answer of a capture step: the session and what the
// step measured.
type StepResult struct {
	Session  Result                    `json:"session" required:"true"`
	Document *documents.DocumentResult `json:"document,omitempty" doc:"The 2.9 screening result of this document attempt."`
	Face     *FaceOutcome              `json:"face,omitempty" doc:"What the face step measured."`
}

// FaceOutcome is what one face step measured.
type FaceOutcome struct {
	Outcome            string   `json:"outcome" required:"true" enum:"passed|review|recapture"`
	LivenessPassed     bool     `json:"liveness_passed" required:"true"`
	Observed           []string `json:"observed_actions" required:"true"`
	Frames             int      `json:"frames" required:"true"`
	SimilarityDocument *float64 `json:"similarity_document,omitempty" doc:"Selfie against the document portrait; the threshold is uncalibrated."`
	SimilarityLiveness *float64 `json:"similarity_liveness,omitempty" doc:"Selfie against the face tracked through the liveness frames."`
	Reasons            []string `json:"reasons" required:"true"`
	UserMessage        string   `json:"user_message,omitempty"`
}

// DocumentRequest is the body of POST …/document.
type DocumentRequest struct {
	Front, Back           string
	Country, DocumentType string
}

// FrameInput is one liveness frame as received.
type FrameInput struct {
	Image    string
	OffsetMS int
}

// FaceRequest is the body of POST …/face.
type FaceRequest struct {
	Nonce         string
	Selfie        string
	Frames        []FrameInput
	DocumentFront string
}

func decodeImage(field, s string, limit int) ([]byte, error) {
	if i := strings.IndexByte(s, ','); i >= 0 && strings.HasPrefix(s, "data:") {
		s = s[i+1:]
	}
	if s == "" {
		return nil, errcode.Field(field, "required")
	}
	if base64.StdEncoding.DecodedLen(len(s)) > limit+3 {
		return nil, documents.ErrImageTooLarge.With("%s exceeds %d bytes", field, limit)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return b2, nil
		}
		return nil, documents.ErrImageEncoding.With("%s is not valid base64", field)
	}
	return b, nil
}

func (m *Module) scopeKey(ws string) []byte {
	if w := m.d.Store.Catalog().Workspaces[ws]; w != nil {
		return w.ScopeKey
	}
	return nil
}

// begin marks s processing (compare-and-swap on the version read), so a
// concurrent step is refused with ErrBusy; it returns the stored copy.
func (m *Module) begin(ctx context.Context, s *catalog.IdentitySession, from string, now time.Time, edit func(*catalog.IdentitySession)) (*catalog.IdentitySession, error) {
	n := *s
	n.Status, n.ProcessingFrom, n.ProcessingUntil, n.UpdatedAt = StatusProcessing, from, now.Add(m.cfg.StepTimeout), now
	if edit != nil {
		edit(&n)
	}
	return m.put(ctx, &n, s.Version, nil)
}

// abort puts a processing session back where its step started (a check
// could not run), keeping any edit made by begin.
func (m *Module) abort(s *catalog.IdentitySession, now time.Time) {
	n := *s
	n.Status, n.ProcessingFrom, n.ProcessingUntil, n.UpdatedAt = s.ProcessingFrom, "", time.Time{}, now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.put(ctx, &n, s.Version, nil); err != nil {
		m.d.Log.Warn("identity session: could not release a failed step; it times out instead", "session", s.ID, "err", err)
	}
}

// settle moves n (a copy of the processing session) to status with the
// attempt recorded, opening a review case when status is manual_review.
func (m *Module) settle(ctx context.Context, cur *catalog.IdentitySession, n *catalog.IdentitySession, status string, reasons []string, now time.Time) (*catalog.IdentitySession, error) {
	n.Status, n.ProcessingFrom, n.ProcessingUntil, n.UpdatedAt = status, "", time.Time{}, now
	var k *catalog.ReviewCase
	switch status {
	case StatusReview:
		n.ReviewReasons = dedupe(reasons)
		k = &catalog.ReviewCase{ID: "case_" + randomHex(12), WorkspaceID: n.WorkspaceID, Kind: KindIdentitySession, Reference: n.ID,
			Reasons: n.ReviewReasons, Status: CaseOpen, CreatedAt: now}
		n.CaseID = k.ID
	case StatusVerified, StatusRejected, StatusCancelled:
		n.EndedAt = now
	}
	if status != StatusCollecting {
		queue(n, eventType[status], reasons)
	}
	got, err := m.put(ctx, n, cur.Version, k)
	if err != nil {
		return nil, err
	}
	m.flush(ctx, got)
	return m.reread(got), nil
}

// finish settles n as settle does and answers with the session's view, for
// the calls that answer with the whole session.
func (m *Module) finish(ctx context.Context, cur *catalog.IdentitySession, n *catalog.IdentitySession, status string, reasons []string, now time.Time) (*Result, error) {
	got, err := m.settle(ctx, cur, n, status, reasons, now)
	if err != nil {
		return nil, err
	}
	r := view(got, now)
	return &r, nil
}

// reread returns the session as stored now (after the flush's ack).
func (m *Module) reread(s *catalog.IdentitySession) *catalog.IdentitySession {
	if x := m.d.Store.Catalog().IdentitySession(s.WorkspaceID, s.ID); x != nil && x.Version == s.Version {
		return x
	}
	return s
}

// failing is the status of a failed attempt that the person can fix: a
// recapture while attempts remain, else manual review.
func failing(n *catalog.IdentitySession, reasons []string) (string, []string) {
	if len(n.Attempts) >= n.MaxAttempts {
		return StatusReview, append(slices.Clone(reasons), "attempts_exhausted")
	}
	return StatusRecapture, reasons
}

func dedupe(ss []string) []string {
	out := []string{}
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Document screens the session's document.
func (m *Module) Document(ctx context.Context, who Caller, id, capability string, r DocumentRequest) (*StepResult, error) {
	s, from, now, err := m.loadStep(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	if s.DocumentDecision != "" {
		return nil, ErrState.With("the document step already passed")
	}
	if r.Country != "" && r.Country != s.Country {
		return nil, errcode.Field("country", "differs from the session's "+s.Country)
	}
	if r.DocumentType != "" && r.DocumentType != s.DocumentType {
		return nil, errcode.Field("document_type", "differs from the session's "+s.DocumentType)
	}
	req := documents.Request{Country: s.Country, DocumentType: s.DocumentType, Front: r.Front, Back: r.Back}
	if _, err := req.Validate(); err != nil {
		return nil, err
	}
	front, err := decodeImage("front_image", r.Front, documents.MaxImageBytes)
	if err != nil {
		return nil, err
	}
	p, err := m.begin(ctx, s, from, now, nil)
	if err != nil {
		return nil, err
	}
	res, err := m.d.Screener.Screen(ctx, req)
	if err != nil {
		m.abort(p, m.d.Now().UTC())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("document screening: %w", context.DeadlineExceeded)
		}
		return nil, err
	}
	now = m.d.Now().UTC()
	n := *p
	v := res.Verification
	a := catalog.IdentityAttempt{N: len(p.Attempts) + 1, Step: "document", At: now, Reasons: dedupe(v.Risk.Reasons),
		Checks: map[string]string{"image_quality": v.Checks.ImageQuality.Status, "mrz": v.Checks.MRZ.Status,
			"document_authenticity": v.Checks.DocumentAuthenticity.Status, "authoritative_source": v.Checks.AuthoritativeSource.Status},
		Metrics: qualityMetrics(v.Checks.ImageQuality.Detail)}
	n.Attempts = append(slices.Clone(p.Attempts), a)
	status, reasons := StatusCollecting, a.Reasons
	switch v.Risk.Decision {
	case documents.Verify, documents.Review:
		n.DocumentDecision, n.DocumentReasons = v.Risk.Decision, a.Reasons
		n.DocumentImageHash = keyed(m.scopeKey(s.WorkspaceID), "document-front", front)
		n.Attempts[len(n.Attempts)-1].Outcome = outPassed
		if v.Risk.Decision == documents.Review {
			n.Attempts[len(n.Attempts)-1].Outcome = outReview
		}
	case documents.Reject:
		n.Attempts[len(n.Attempts)-1].Outcome = outReject
		status = StatusRejected
	default: // recapture, or anything the screener may add later: never a pass
		n.Attempts[len(n.Attempts)-1].Outcome = outRecapture
		status, reasons = failing(&n, a.Reasons)
	}
	got, err := m.settle(ctx, p, &n, status, reasons, now)
	if err != nil {
		return nil, err
	}
	return &StepResult{Session: view(got, now), Document: res}, nil
}

// qualityMetrics keeps the numeric measurements of the capture-quality
// detail (as its JSON shows them, two levels deep), at most 24: measured
// values first (front.*, back.*), then the thresholds.
func qualityMetrics(d map[string]any) map[string]float64 {
	out := map[string]float64{}
	raw, err := json.Marshal(d)
	if err != nil {
		return out
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return out
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmp.Compare(boolInt(a == "thresholds"), boolInt(b == "thresholds"))
	})
	for _, k := range keys {
		switch x := m[k].(type) {
		case float64:
			if len(out) < 24 {
				out[k] = x
			}
		case map[string]any:
			for _, k2 := range slices.Sorted(maps.Keys(x)) {
				if f, ok := x[k2].(float64); ok && len(out) < 24 {
					out[k+"."+k2] = f
				}
			}
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// faceReady checks the face engine, the presence check and the matcher
// are all wired; without any of them no facial check can run.
func (m *Module) faceReady() error {
	if m.d.Engine == nil || m.d.Presence == nil || m.d.Match == nil {
		return face.ErrUnavailable
	}
	return nil
}

// faceStepAllowed checks the session is at its face step and the face
// engine is wired (faceReady).
func (m *Module) faceStepAllowed(s *catalog.IdentitySession) error {
	if s.Assurance == DocumentOnly {
		return ErrState.With("a document_only session has no face step")
	}
	if s.DocumentDecision == "" {
		return ErrIncomplete.With("the document step must pass before the face step")
	}
	if s.FacePassed {
		return ErrState.With("the face step already passed")
	}
	return m.faceReady()
}

// Liveness issues the session's liveness challenge (replacing an
// outstanding one).
func (m *Module) Liveness(ctx context.Context, who Caller, id, capability string) (*Challenge, error) {
	s, _, now, err := m.loadStep(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	if err := m.faceStepAllowed(s); err != nil {
		return nil, err
	}
	c := m.d.Presence.Issue(now)
	n := *s
	n.UpdatedAt = now
	acts := make([]string, len(c.Actions))
	for i, a := range c.Actions {
		acts[i] = string(a)
	}
	n.Challenge = &catalog.IdentityChallenge{Nonce: c.Nonce, Actions: acts, IssuedAt: c.IssuedAt, Deadline: c.Deadline}
	if _, err := m.put(ctx, &n, s.Version, nil); err != nil {
		return nil, err
	}
	return &Challenge{Nonce: c.Nonce, Actions: acts, IssuedAt: c.IssuedAt, Deadline: c.Deadline}, nil
}

// Face runs the liveness check on the frames and compares the selfie with
// the liveness face and with the document portrait.
func (m *Module) Face(ctx context.Context, who Caller, id, capability string, r FaceRequest) (*StepResult, error) {
	s, from, now, err := m.loadStep(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	if err := m.faceStepAllowed(s); err != nil {
		return nil, err
	}
	c := s.Challenge
	if c == nil {
		return nil, ErrNoChallenge
	}
	if !now.Before(c.Deadline) {
		return nil, ErrChallengeStale
	}
	if subtle.ConstantTimeCompare([]byte(r.Nonce), []byte(c.Nonce)) != 1 {
		return nil, ErrNonce
	}
	selfie, err := decodeImage("selfie", r.Selfie, documents.MaxImageBytes)
	if err != nil {
		return nil, err
	}
	doc, err := decodeImage("document_front_image", r.DocumentFront, documents.MaxImageBytes)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(keyed(m.scopeKey(s.WorkspaceID), "document-front", doc)), []byte(s.DocumentImageHash)) != 1 {
		return nil, ErrDocumentImage
	}
	if len(r.Frames) == 0 || len(r.Frames) > m.cfg.MaxFrames {
		return nil, errcode.Field("frames", fmt.Sprintf("1 to %d frames", m.cfg.MaxFrames))
	}
	frames := make([]liveness.Frame, len(r.Frames))
	for i, f := range r.Frames {
		b, err := decodeImage(fmt.Sprintf("frames[%d].image", i), f.Image, MaxFrameBytes)
		if err != nil {
			return nil, err
		}
		if f.OffsetMS < 0 || f.OffsetMS > 120_000 || i > 0 && f.OffsetMS < r.Frames[i-1].OffsetMS {
			return nil, errcode.Field(fmt.Sprintf("frames[%d].offset_ms", i), "0 to 120000, not decreasing")
		}
		frames[i] = liveness.Frame{Image: b, OffsetMS: f.OffsetMS}
	}
	// The challenge is consumed by the step that starts with it, whatever
	// the outcome: a nonce answers one burst of frames.
	p, err := m.begin(ctx, s, from, now, func(n *catalog.IdentitySession) { n.Challenge = nil })
	if err != nil {
		return nil, err
	}
	acts := make([]liveness.Action, len(c.Actions))
	for i, a := range c.Actions {
		acts[i] = liveness.Action(a)
	}
	live, err := m.d.Presence.Check(ctx, liveness.Challenge{Nonce: c.Nonce, Actions: acts, IssuedAt: c.IssuedAt, Deadline: c.Deadline}, frames, now)
	var sa, da face.Analysis
	if err == nil {
		sa, err = m.d.Engine.Analyze(ctx, selfie)
	}
	if err == nil {
		da, err = m.d.Engine.Analyze(ctx, doc)
	}
	if err != nil {
		m.abort(p, m.d.Now().UTC())
		m.d.Log.Warn("identity session: facial check could not run; failing closed", "session", s.ID, "err", err)
		if errors.Is(err, face.ErrUnavailable) || ctx.Err() != nil {
			return nil, face.ErrUnavailable
		}
		return nil, face.ErrUnavailable.With("the face engine failed: the check did not run; retry later")
	}
	now = m.d.Now().UTC()
	fo, checks, metrics := m.judge(live, sa, da)
	n := *p
	a := catalog.IdentityAttempt{N: len(p.Attempts) + 1, Step: "face", At: now, Outcome: fo.Outcome, Checks: checks,
		Reasons: fo.Reasons, Metrics: metrics}
	n.Attempts = append(slices.Clone(p.Attempts), a)
	status, reasons := StatusCollecting, fo.Reasons
	switch fo.Outcome {
	case outPassed:
		n.FacePassed = true
	case outReview:
		status = StatusReview
	default:
		status, reasons = failing(&n, fo.Reasons)
		fo.UserMessage = "Retake the selfie in good light, face the camera, and follow the prompts in order."
	}
	got, err := m.settle(ctx, p, &n, status, reasons, now)
	if err != nil {
		return nil, err
	}
	return &StepResult{Session: view(got, now), Face: fo}, nil
}

// judge folds the measurements into the step outcome: a capture fault
// (liveness not passed, no single face in the selfie) is a recapture; a
// doubt about identity (no portrait face, a mismatch against the document
// or the liveness face) is a review, never a silent pass or reject.
func (m *Module) judge(live liveness.Result, sa, da face.Analysis) (*FaceOutcome, map[string]string, map[string]float64) {
	fo := &FaceOutcome{LivenessPassed: live.Passed, Frames: live.Frames, Observed: []string{}, Reasons: []string{}}
	for i, a := range live.Observed {
		if i < 16 {
			fo.Observed = append(fo.Observed, string(a))
		}
	}
	checks := map[string]string{"liveness": "failed", "face_match_document": "not_run", "face_match_liveness": "not_run"}
	metrics := map[string]float64{"frames": float64(live.Frames), "observed_actions": float64(len(live.Observed)),
		"selfie_faces": float64(len(sa.Faces)), "document_faces": float64(len(da.Faces))}
	var recapture, review []string
	if live.Passed {
		checks["liveness"] = "passed"
	} else {
		for i, r := range live.Reasons {
			// Reason codes go to Raft and to webhooks: bounded, plain.
			if i < 8 && len(r) <= 48 && ident.Action(r) {
				recapture = append(recapture, "liveness_"+r)
			}
		}
		if len(live.Reasons) == 0 {
			recapture = append(recapture, "liveness_failed")
		}
	}
	switch len(sa.Faces) {
	case 0:
		recapture = append(recapture, "selfie_no_face")
	case 1:
		metrics["selfie_face_score"] = sa.Faces[0].Score
	default:
		recapture = append(recapture, "selfie_multiple_faces")
	}
	if len(da.Faces) == 0 {
		review = append(review, "document_portrait_not_found")
	} else {
		metrics["document_face_score"] = da.Faces[0].Score
	}
	if len(sa.Faces) == 1 && len(sa.Faces[0].Descriptor) > 0 {
		sd := sa.Faces[0].Descriptor
		// match compares the selfie with the face ref, recording the
		// check face_match_<against> and the metric similarity_<against>;
		// a mismatch is a review.
		match := func(against string, ref []float32) *float64 {
			sim, same := m.d.Match(sd, ref)
			metrics["similarity_"+against] = sim
			checks["face_match_"+against] = "failed"
			if same {
				checks["face_match_"+against] = "passed"
			} else {
				review = append(review, "face_mismatch_"+against)
			}
			return &sim
		}
		if len(da.Faces) > 0 && len(da.Faces[0].Descriptor) > 0 {
			fo.SimilarityDocument = match("document", da.Faces[0].Descriptor)
		}
		if live.Passed {
			if len(live.Reference) == 0 {
				review = append(review, "liveness_reference_missing")
			} else {
				fo.SimilarityLiveness = match("liveness", live.Reference)
			}
		}
	} else if len(sa.Faces) == 1 {
		review = append(review, "selfie_descriptor_missing")
	}
	switch {
	case len(recapture) > 0:
		fo.Outcome, fo.Reasons = outRecapture, dedupe(recapture)
	case len(review) > 0:
		fo.Outcome, fo.Reasons = outReview, dedupe(review)
	default:
		fo.Outcome = outPassed
	}
	return fo, checks, metrics
}

// Complete decides the session once every required step passed:
// verified, or manual review when the document asked for it or the level
// is high (which always has a human look).
func (m *Module) Complete(ctx context.Context, who Caller, id, capability string) (*Result, error) {
	s, now, err := m.load(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	st := effective(s, now)
	switch {
	case st == StatusProcessing:
		return nil, ErrBusy
	case !capturing(st):
		return nil, ErrState.With("the session is %s", st)
	case !now.Before(s.ExpiresAt):
		return nil, ErrExpired
	case s.DocumentDecision == "":
		return nil, ErrIncomplete.With("the document step has not passed")
	case s.Assurance != DocumentOnly && !s.FacePassed:
		return nil, ErrIncomplete.With("the face step has not passed")
	}
	n := *s
	n.Challenge = nil
	status, reasons := StatusVerified, []string{}
	if s.DocumentDecision == documents.Review {
		status, reasons = StatusReview, append(reasons, s.DocumentReasons...)
	}
	if s.Assurance == High {
		status, reasons = StatusReview, append(reasons, "high_assurance_review")
	}
	return m.finish(ctx, s, &n, status, reasons, now)
}

// Result reads the session.
func (m *Module) Result(ctx context.Context, who Caller, id, capability string) (*Result, error) {
	s, now, err := m.load(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	// load may have flushed events: show the record as stored now.
	if x := m.d.Store.Catalog().IdentitySession(s.WorkspaceID, s.ID); x != nil {
		s = x
	}
	r := view(s, now)
	return &r, nil
}

// Cancel ends a session that has no outcome yet.
func (m *Module) Cancel(ctx context.Context, who Caller, id, capability string) (*Result, error) {
	s, now, err := m.load(ctx, who, id, capability)
	if err != nil {
		return nil, err
	}
	st := effective(s, now)
	if st == StatusProcessing {
		return nil, ErrBusy
	}
	if !capturing(st) {
		return nil, ErrState.With("the session is %s", st)
	}
	n := *s
	n.Challenge = nil
	return m.finish(ctx, s, &n, StatusCancelled, []string{"cancelled_by_client"}, now)
}
