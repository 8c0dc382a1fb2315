package journeys

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"time"

	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
)

// Facial methods. The presence check (identity/liveness, implemented by
// the face helper over the face sidecar) issues an active challenge and
// checks the frames against it; its Result.Reference is the tracked
// face's descriptor. Enrollment keeps only that descriptor, sealed
// (AES-256-GCM under a key derived from the cluster seal key, bound to the
// workspace and subject), never an image; authorization compares a fresh
// passed check's descriptor with it through Matcher. Nothing here claims
// more than the check returned: a result that did not pass fails the
// attempt with its reasons.

// Presence is the active liveness check the facial methods use.
type Presence interface {
	Issue(now time.Time) liveness.Challenge
	Check(ctx context.Context, c liveness.Challenge, frames []liveness.Frame, now time.Time) (liveness.Result, error)
}

// Matcher decides whether two face descriptors are the same person (the
// face engine's comparison at its configured threshold).
type Matcher interface {
	Match(a, b []float32) (bool, error)
}

// WithFace sets the presence check, the matcher and the sealer of
// enrolled templates.
func (m *Module) WithFace(p Presence, match Matcher, sealer *token.Sealer) *Module {
	return m.setEngines(func(e *engines) { e.presence, e.matcher, e.sealer = p, match, sealer })
}

func isFacial(method string) bool {
	return method == MethodLiveness || method == MethodEnrollment || method == MethodAuthorization
}

// BeginFace opens a facial attempt and returns its challenge.
func (m *Module) BeginFace(ctx context.Context, capability string) (liveness.Challenge, error) {
	cat, s, _, err := m.personSession(ctx, capability)
	if err != nil {
		return liveness.Challenge{}, err
	}
	now, eng := m.now(), m.engines()
	if !isFacial(s.Method) {
		return liveness.Challenge{}, ErrWrongMethod.With("the session's method is %s", s.Method)
	}
	if err := checkOpen(s, s.Method, now); err != nil {
		return liveness.Challenge{}, err
	}
	if eng.presence == nil || (s.Method != MethodLiveness && eng.sealer == nil) || (s.Method == MethodAuthorization && eng.matcher == nil) {
		return liveness.Challenge{}, ErrMethodUnavailable.With("the face engine is not wired on this node")
	}
	if s.Method == MethodAuthorization && cat.FaceTemplate(s.WorkspaceID, s.SubjectHash, now) == nil {
		return liveness.Challenge{}, ErrNotEnrolled
	}
	c := eng.presence.Issue(now)
	state, _ := json.Marshal(c)
	if _, err := m.begin(ctx, s, state); err != nil {
		return liveness.Challenge{}, err
	}
	return c, nil
}

// MaxFrames bounds the frames of one facial attempt.
const MaxFrames = 30

// CompleteFace checks the frames of the open facial attempt.
func (m *Module) CompleteFace(ctx context.Context, capability string, frames []liveness.Frame) (Attempt, error) {
	cat, s, ws, err := m.personSession(ctx, capability)
	if err != nil {
		return Attempt{}, err
	}
	now, eng := m.now(), m.engines()
	if !isFacial(s.Method) {
		return Attempt{}, ErrWrongMethod.With("the session's method is %s", s.Method)
	}
	if err := checkOpen(s, s.Method, now); err != nil {
		return Attempt{}, err
	}
	if s.Status != StatusProofPending || len(s.MethodState) == 0 {
		return Attempt{}, ErrNoChallenge
	}
	if len(frames) == 0 || len(frames) > MaxFrames {
		return Attempt{}, ErrInvalidRequest.With("frames: 1 to %d", MaxFrames)
	}
	var c liveness.Challenge
	if json.Unmarshal(s.MethodState, &c) != nil {
		return Attempt{}, ErrNoChallenge
	}
	if eng.presence == nil {
		return Attempt{}, ErrMethodUnavailable.With("the face engine is not wired on this node")
	}
	res, err := eng.presence.Check(ctx, c, frames, now)
	if err != nil {
		// An unavailable check is never a pass, nor a failed attempt.
		return Attempt{}, ErrMethodUnavailable.With("the presence check did not answer")
	}
	if !res.Passed {
		reasons := res.Reasons
		if len(reasons) == 0 {
			reasons = []string{"liveness-not-passed"}
		}
		return m.finish(ctx, ws, s, false, reasons, false)
	}
	ad := s.WorkspaceID + "/" + s.SubjectHash
	switch s.Method {
	case MethodEnrollment:
		if len(res.Reference) == 0 {
			return m.finish(ctx, ws, s, false, []string{"no-face-reference"}, false)
		}
		t := catalog.FaceTemplate{Sealed: eng.sealer.Seal(ad, encodeDescriptor(res.Reference)), EnrolledAt: now.UTC(),
			ExpiresAt: now.UTC().Add(catalog.FaceTemplateRetention)}
		if _, err := m.store.Apply(ctx, &catalog.PutFaceTemplate{WorkspaceID: s.WorkspaceID, SubjectHash: s.SubjectHash, Template: t}); err != nil {
			return Attempt{}, err
		}
	case MethodAuthorization:
		t := cat.FaceTemplate(s.WorkspaceID, s.SubjectHash, now)
		if t == nil {
			return m.finish(ctx, ws, s, false, []string{"not-enrolled"}, false)
		}
		raw, ok := eng.sealer.Open(ad, t.Sealed)
		if !ok {
			return Attempt{}, ErrMethodUnavailable.With("the enrolled template does not open with this node's seal key")
		}
		same, err := eng.matcher.Match(res.Reference, decodeDescriptor(raw))
		if err != nil {
			return Attempt{}, ErrMethodUnavailable.With("the face comparison did not answer")
		}
		if !same {
			return m.finish(ctx, ws, s, false, []string{"face-mismatch"}, false)
		}
	}
	return m.finish(ctx, ws, s, true, nil, false)
}

// DeleteSubject deletes what journeys keep of a subject (face template,
// passkeys); it returns how many records went.
func (m *Module) DeleteSubject(ctx context.Context, ws *catalog.Workspace, subjectID string) (int, error) {
	v, err := m.store.Apply(ctx, &catalog.DeleteSubjectCredentials{WorkspaceID: ws.ID, SubjectHash: subjectHash(ws, subjectID)})
	if err != nil {
		return 0, err
	}
	n, _ := v.(int)
	return n, nil
}

func encodeDescriptor(d []float32) []byte {
	b := make([]byte, 4*len(d))
	for i, f := range d {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeDescriptor(b []byte) []float32 {
	d := make([]float32, len(b)/4)
	for i := range d {
		d[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return d
}
