package session

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/events"
)

// memStore applies commands the way Raft does: encoded, decoded, applied
// in a transaction on an immutable catalog.
type memStore struct {
	mu  sync.Mutex
	cat *catalog.Catalog
}

func (s *memStore) Catalog() *catalog.Catalog { s.mu.Lock(); defer s.mu.Unlock(); return s.cat }
func (s *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := catalog.Encode(cmd)
	if err != nil {
		return nil, err
	}
	dec, err := catalog.Decode(cmd.Kind(), b)
	if err != nil {
		return nil, err
	}
	tx := catalog.Begin(s.cat)
	v, err := dec.Apply(tx)
	if err != nil {
		return nil, err
	}
	s.cat = tx.Commit(s.cat.Index + 1)
	return v, nil
}

type fakeScreener struct{ decisions []string }

func (f *fakeScreener) Screen(_ context.Context, r documents.Request) (*documents.DocumentResult, error) {
	if _, err := r.Validate(); err != nil {
		return nil, err
	}
	d := f.decisions[0]
	if len(f.decisions) > 1 {
		f.decisions = f.decisions[1:]
	}
	if d == "outage" {
		return nil, documents.ErrSandboxOutage
	}
	res, err := documents.Simulate(map[string]string{"verify": "ZZV", "recapture": "ZZC", "review": "ZZR", "reject": "ZZJ"}[d])
	return res, err
}

// fakeEngine answers by the image's text: "face:<x>" is one face with
// descriptor x, "none" no face, "two" two faces, "down" an outage.
type fakeEngine struct{}

func desc(x string) []float32 { return []float32{float32(x[0]), 1} }

func (fakeEngine) Analyze(_ context.Context, img []byte) (face.Analysis, error) {
	s := string(img)
	switch {
	case s == "down":
		return face.Analysis{}, face.ErrUnavailable
	case s == "none" || strings.HasPrefix(s, "doc-none"):
		return face.Analysis{}, nil
	case s == "two":
		return face.Analysis{Faces: []face.Face{{Score: .9, Descriptor: desc("a")}, {Score: .8, Descriptor: desc("b")}}}, nil
	case strings.HasPrefix(s, "doc:"):
		return face.Analysis{Faces: []face.Face{{Score: .95, Descriptor: desc(s[4:])}}}, nil
	case strings.HasPrefix(s, "face:"):
		return face.Analysis{Faces: []face.Face{{Score: .99, Descriptor: desc(s[5:])}}}, nil
	}
	return face.Analysis{}, nil
}

type fakePresence struct{ pass bool }

func (p *fakePresence) Issue(now time.Time) liveness.Challenge {
	return liveness.Challenge{Nonce: "nonce-" + randomHex(4), Actions: []liveness.Action{liveness.TurnLeft, liveness.Blink},
		IssuedAt: now, Deadline: now.Add(time.Minute)}
}
func (p *fakePresence) Check(_ context.Context, c liveness.Challenge, frames []liveness.Frame, _ time.Time) (liveness.Result, error) {
	if !p.pass {
		return liveness.Result{Frames: len(frames), Reasons: []string{"order"}}, nil
	}
	return liveness.Result{Passed: true, Frames: len(frames), Observed: c.Actions, Reference: desc(string(frames[0].Image[5:]))}, nil
}

func equalMatch(a, b []float32) (float64, bool) {
	if a[0] == b[0] {
		return 0.9, true
	}
	return 0.1, false
}

type recEmitter struct {
	mu   sync.Mutex
	got  []string
	fail bool
}

func (e *recEmitter) Emit(_ context.Context, ws, typ, subj string, seq uint64, _ any) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return "", errors.New("outbox down")
	}
	e.got = append(e.got, typ)
	return events.EventID(ws, typ, subj, seq), nil
}

type env struct {
	m     *Module
	st    *memStore
	sc    *fakeScreener
	ev    *recEmitter
	now   time.Time
	who   Caller
	deps  Deps
	clock *time.Time
}

func newEnv(t *testing.T, docs ...string) *env {
	t.Helper()
	st := &memStore{cat: catalog.Empty()}
	if _, err := st.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws1", ScopeKey: []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, sc: &fakeScreener{decisions: docs}, ev: &recEmitter{}, now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		who: Caller{WorkspaceID: "ws1", Scopes: []string{ScopeVerify}}}
	e.clock = &e.now
	e.deps = Deps{Store: st, Screener: e.sc, Engine: fakeEngine{}, Presence: &fakePresence{pass: true}, Match: equalMatch,
		Events: e.ev, Now: func() time.Time { return *e.clock }}
	e.m = New(Config{MaxAttempts: 2}, e.deps)
	return e
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func (e *env) create(t *testing.T, level string) *Created {
	t.Helper()
	c, err := e.m.Create(context.Background(), e.who, CreateRequest{SubjectID: "user-1", Action: "open_account", Assurance: level,
		Country: "UTO", DocumentType: "passport", ConsentAccepted: true, ConsentReference: "consent-v1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) doc(c *Created, front string) (*StepResult, error) {
	return e.m.Document(context.Background(), e.who, c.SessionID, c.SessionToken, DocumentRequest{Front: b64(front)})
}

func (e *env) face(t *testing.T, c *Created, selfie, frame, doc string) (*StepResult, error) {
	t.Helper()
	ch, err := e.m.Liveness(context.Background(), e.who, c.SessionID, c.SessionToken)
	if err != nil {
		return nil, err
	}
	return e.m.Face(context.Background(), e.who, c.SessionID, c.SessionToken, FaceRequest{Nonce: ch.Nonce, Selfie: b64(selfie),
		Frames: []FrameInput{{Image: b64(frame)}, {Image: b64(frame), OffsetMS: 200}}, DocumentFront: b64(doc)})
}

func is(err error, code *errcode.Code) bool { return errors.Is(err, code) }

func TestDocumentOnlyOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		docs   []string
		sends  int
		status string
		events []string
	}{
		{"a verified document completes to verified", []string{"verify"}, 1, StatusVerified, []string{events.TypeVerified}},
		{"a document in doubt completes to manual review", []string{"review"}, 1, StatusReview, []string{events.TypeReviewRequired}},
		{"a rejected document rejects at once", []string{"reject"}, 1, StatusRejected, []string{events.TypeRejected}},
		{"a poor capture asks for a recapture", []string{"recapture"}, 1, StatusRecapture, []string{events.TypeRecaptureRequired}},
		{"a recapture then a good capture verifies", []string{"recapture", "verify"}, 2, StatusVerified, []string{events.TypeRecaptureRequired, events.TypeVerified}},
		{"at the attempts cap a failing capture goes to review, not a dead end", []string{"recapture", "recapture"}, 2, StatusReview,
			[]string{events.TypeRecaptureRequired, events.TypeReviewRequired}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.docs...)
			c := e.create(t, DocumentOnly)
			if c.Status != StatusCreated || !strings.HasPrefix(c.SessionToken, CapabilityPrefix) {
				t.Fatalf("%+v", c)
			}
			var last *StepResult
			for i := 0; i < tt.sends; i++ {
				r, err := e.doc(c, "page")
				if err != nil {
					t.Fatal(err)
				}
				last = r
			}
			if last.Session.Status == StatusCollecting {
				r, err := e.m.Complete(context.Background(), e.who, c.SessionID, c.SessionToken)
				if err != nil {
					t.Fatal(err)
				}
				last.Session = *r
			}
			if last.Session.Status != tt.status || strings.Join(e.ev.got, ",") != strings.Join(tt.events, ",") {
				t.Fatalf("status %s events %v", last.Session.Status, e.ev.got)
			}
			s := e.st.Catalog().IdentitySession("ws1", c.SessionID)
			if len(s.PendingEvents) != 0 || s.Sequence != uint64(len(tt.events)) {
				t.Fatalf("pending %v seq %d", s.PendingEvents, s.Sequence)
			}
			if tt.status == StatusReview && (s.CaseID == "" || e.st.Catalog().ReviewCase("ws1", s.CaseID).Status != CaseOpen) {
				t.Fatal("no open case for a session in review")
			}
		})
	}
}

func TestIllegalTransitionsAndAuth(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify")
	c := e.create(t, DocumentOnly)
	if _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); !is(err, ErrIncomplete) {
		t.Fatalf("complete before the document: %v", err)
	}
	if _, err := e.m.Result(ctx, e.who, c.SessionID, c.SessionToken+"x"); !is(err, ErrCapability) {
		t.Fatalf("bad capability: %v", err)
	}
	if _, err := e.m.Result(ctx, Caller{WorkspaceID: "ws1", Scopes: []string{"site.verify"}}, c.SessionID, c.SessionToken); !is(err, ErrScope) {
		t.Fatalf("wrong scope: %v", err)
	}
	if _, err := e.m.Result(ctx, Caller{WorkspaceID: "ws2", Scopes: []string{ScopeVerify}}, c.SessionID, c.SessionToken); !is(err, ErrNotFound) {
		t.Fatalf("other workspace: %v", err)
	}
	if _, err := e.doc(c, "page"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.doc(c, "page"); !is(err, ErrState) {
		t.Fatalf("second document: %v", err)
	}
	if _, err := e.m.Liveness(ctx, e.who, c.SessionID, c.SessionToken); !is(err, ErrState) {
		t.Fatalf("liveness on document_only: %v", err)
	}
	if _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"complete":   func() error { _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); return err },
		"cancel":     func() error { _, err := e.m.Cancel(ctx, e.who, c.SessionID, c.SessionToken); return err },
		"document":   func() error { _, err := e.doc(c, "page"); return err },
		"review-fix": func() error { _, err := e.m.Resolve(ctx, "ws1", "case_x", DecisionVerified, "", "op"); return err },
	} {
		if err := f(); !is(err, ErrState) && !is(err, ErrCaseNotFound) {
			t.Fatalf("%s after verified: %v", name, err)
		}
	}
	// A document_only credential cannot touch a standard session.
	s := e.create(t, Standard)
	if _, err := e.m.Result(ctx, Caller{WorkspaceID: "ws1", Scopes: []string{ScopeDocumentVerify}}, s.SessionID, s.SessionToken); !is(err, ErrScope) {
		t.Fatalf("document scope on standard: %v", err)
	}
	if _, err := e.m.Create(ctx, Caller{WorkspaceID: "ws1", Scopes: []string{ScopeDocumentVerify}}, CreateRequest{SubjectID: "u", Action: "a",
		Assurance: High, Country: "UTO", DocumentType: "passport", ConsentAccepted: true, ConsentReference: "c"}); !is(err, ErrScope) {
		t.Fatalf("document scope creating high: %v", err)
	}
	if _, err := e.m.Create(ctx, e.who, CreateRequest{SubjectID: "u", Action: "a", Assurance: DocumentOnly, Country: "UTO",
		DocumentType: "passport", ConsentReference: "c"}); !is(err, ErrConsent) {
		t.Fatalf("no consent: %v", err)
	}
	// Expired capture deadline.
	x := e.create(t, DocumentOnly)
	e.now = e.now.Add(2 * time.Hour)
	if _, err := e.doc(x, "page"); !is(err, ErrExpired) {
		t.Fatalf("after the deadline: %v", err)
	}
	if r, err := e.m.Result(ctx, e.who, x.SessionID, x.SessionToken); err != nil || !r.Expired {
		t.Fatalf("result after the deadline: %+v %v", r, err)
	}
	e.now = e.now.Add(48 * time.Hour)
	if _, err := e.m.Result(ctx, e.who, x.SessionID, x.SessionToken); !is(err, ErrCapability) {
		t.Fatalf("capability after its end: %v", err)
	}
}

func TestProcessingRefusesConcurrentStepsAndTimesOut(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify")
	c := e.create(t, DocumentOnly)
	s := e.st.Catalog().IdentitySession("ws1", c.SessionID)
	if _, err := e.m.begin(ctx, s, StatusCreated, e.now, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.doc(c, "page"); !is(err, ErrBusy) {
		t.Fatalf("a step while processing: %v", err)
	}
	if _, err := e.m.Cancel(ctx, e.who, c.SessionID, c.SessionToken); !is(err, ErrBusy) {
		t.Fatalf("cancel while processing: %v", err)
	}
	// A stale read loses the compare-and-swap.
	if _, err := e.m.put(ctx, s, s.Version, nil); !is(err, ErrBusy) {
		t.Fatalf("stale write: %v", err)
	}
	e.now = e.now.Add(3 * time.Minute)
	if r, err := e.doc(c, "page"); err != nil || r.Session.Status != StatusCollecting {
		t.Fatalf("after the step timeout: %+v %v", r, err)
	}
}

func TestStandardFaceStep(t *testing.T) {
	ctx := context.Background()
	t.Run("matching selfie, liveness and portrait verify", func(t *testing.T) {
		e := newEnv(t, "verify")
		c := e.create(t, Standard)
		if _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); !is(err, ErrIncomplete) {
			t.Fatalf("complete with no face: %v", err)
		}
		if _, err := e.doc(c, "doc:a"); err != nil {
			t.Fatal(err)
		}
		r, err := e.face(t, c, "face:a", "face:a", "doc:a")
		if err != nil || r.Face.Outcome != outPassed || *r.Face.SimilarityDocument != 0.9 || r.Session.Steps.Face != "passed" {
			t.Fatalf("%+v %v", r, err)
		}
		f, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken)
		if err != nil || f.Status != StatusVerified || f.Attempts[1].Checks["face_match_document"] != "passed" || f.Attempts[1].Metrics["similarity_document"] != 0.9 {
			t.Fatalf("%+v %v", f, err)
		}
	})
	t.Run("high assurance always ends in review, then a reviewer verifies", func(t *testing.T) {
		e := newEnv(t, "verify")
		c := e.create(t, High)
		_, _ = e.doc(c, "doc:a")
		if _, err := e.face(t, c, "face:a", "face:a", "doc:a"); err != nil {
			t.Fatal(err)
		}
		f, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken)
		if err != nil || f.Status != StatusReview || f.ReviewReasons[0] != "high_assurance_review" {
			t.Fatalf("%+v %v", f, err)
		}
		list, _ := e.m.Cases("ws1", CaseOpen)
		if len(list.Cases) != 1 || list.Cases[0].Reference != c.SessionID || list.Cases[0].Session == nil {
			t.Fatalf("%+v", list)
		}
		cv, err := e.m.Resolve(ctx, "ws1", list.Cases[0].CaseID, DecisionVerified, "checked by hand", "alice")
		if err != nil || cv.Status != CaseResolved {
			t.Fatalf("%+v %v", cv, err)
		}
		if _, err := e.m.Resolve(ctx, "ws1", list.Cases[0].CaseID, DecisionRejected, "", "bob"); !is(err, ErrCaseClosed) {
			t.Fatalf("second resolve: %v", err)
		}
		r, _ := e.m.Result(ctx, e.who, c.SessionID, c.SessionToken)
		if r.Status != StatusVerified || r.Resolution.Decision != DecisionVerified {
			t.Fatalf("%+v", r)
		}
		want := []string{events.TypeReviewRequired, events.TypeReviewResolved, events.TypeVerified}
		if strings.Join(e.ev.got, ",") != strings.Join(want, ",") {
			t.Fatalf("events %v", e.ev.got)
		}
	})
	t.Run("a different face than the portrait goes to review", func(t *testing.T) {
		e := newEnv(t, "verify")
		c := e.create(t, Standard)
		_, _ = e.doc(c, "doc:a")
		r, err := e.face(t, c, "face:b", "face:b", "doc:a")
		if err != nil || r.Session.Status != StatusReview || r.Face.Reasons[0] != "face_mismatch_document" {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("failed liveness asks for a recapture; at the cap, review", func(t *testing.T) {
		e := newEnv(t, "verify")
		e.deps.Presence = &fakePresence{pass: false}
		e.m = New(Config{MaxAttempts: 3}, e.deps)
		c := e.create(t, Standard)
		_, _ = e.doc(c, "doc:a")
		r, err := e.face(t, c, "face:a", "face:a", "doc:a")
		if err != nil || r.Session.Status != StatusRecapture || r.Face.Reasons[0] != "liveness_order" {
			t.Fatalf("%+v %v", r, err)
		}
		r, err = e.face(t, c, "face:a", "face:a", "doc:a")
		if err != nil || r.Session.Status != StatusReview {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("the face step refuses a document image other than the screened one, a stale nonce, a replayed nonce", func(t *testing.T) {
		e := newEnv(t, "verify")
		e.m = New(Config{MaxAttempts: 3}, e.deps)
		c := e.create(t, Standard)
		_, _ = e.doc(c, "doc:a")
		if _, err := e.face(t, c, "face:a", "face:a", "doc:b"); !is(err, ErrDocumentImage) {
			t.Fatalf("other document: %v", err)
		}
		ch, _ := e.m.Liveness(ctx, e.who, c.SessionID, c.SessionToken)
		req := FaceRequest{Nonce: "wrong", Selfie: b64("face:a"), Frames: []FrameInput{{Image: b64("face:a")}}, DocumentFront: b64("doc:a")}
		if _, err := e.m.Face(ctx, e.who, c.SessionID, c.SessionToken, req); !is(err, ErrNonce) {
			t.Fatalf("wrong nonce: %v", err)
		}
		req.Nonce = ch.Nonce
		e.deps.Presence = &fakePresence{pass: false}
		e.m = New(Config{MaxAttempts: 3}, e.deps)
		if _, err := e.m.Face(ctx, e.who, c.SessionID, c.SessionToken, req); err != nil {
			t.Fatal(err)
		}
		if _, err := e.m.Face(ctx, e.who, c.SessionID, c.SessionToken, req); !is(err, ErrNoChallenge) {
			t.Fatalf("replayed nonce: %v", err)
		}
		ch, _ = e.m.Liveness(ctx, e.who, c.SessionID, c.SessionToken)
		req.Nonce = ch.Nonce
		e.now = e.now.Add(2 * time.Minute)
		if _, err := e.m.Face(ctx, e.who, c.SessionID, c.SessionToken, req); !is(err, ErrChallengeStale) {
			t.Fatalf("stale challenge: %v", err)
		}
	})
	t.Run("no engine, or an engine outage, fails closed and leaves the session as it was", func(t *testing.T) {
		e := newEnv(t, "verify")
		e.deps.Engine = nil
		e.m = New(Config{}, e.deps)
		c := e.create(t, Standard)
		_, _ = e.doc(c, "doc:a")
		if _, err := e.m.Liveness(ctx, e.who, c.SessionID, c.SessionToken); !is(err, face.ErrUnavailable) {
			t.Fatalf("no engine: %v", err)
		}
		e.deps.Engine = fakeEngine{}
		e.m = New(Config{}, e.deps)
		r, err := e.face(t, c, "down", "face:a", "doc:a")
		if !is(err, face.ErrUnavailable) || r != nil {
			t.Fatalf("outage: %+v %v", r, err)
		}
		res, _ := e.m.Result(ctx, e.who, c.SessionID, c.SessionToken)
		if res.Status != StatusCollecting || res.AttemptsUsed != 1 || res.Steps.Face != "pending" {
			t.Fatalf("after an outage: %+v", res)
		}
		if _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); !is(err, ErrIncomplete) {
			t.Fatalf("complete after an outage: %v", err)
		}
	})
}

func TestRedactAndCancel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "review")
	c := e.create(t, DocumentOnly)
	_, _ = e.doc(c, "page")
	if _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); err != nil {
		t.Fatal(err)
	}
	r, err := e.m.Redact(ctx, e.who, c.SessionID, c.SessionToken)
	if err != nil || r.Status != StatusCancelled || !r.Redacted || len(r.Attempts[0].Reasons) != 0 || len(r.Attempts[0].Metrics) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	s := e.st.Catalog().IdentitySession("ws1", c.SessionID)
	if s.SubjectHash != "" || s.DocumentImageHash != "" || s.ConsentReference != "" {
		t.Fatalf("traces left: %+v", s)
	}
	if k := e.st.Catalog().ReviewCase("ws1", s.CaseID); k.Status != CaseWithdrawn || k.Reasons[0] != "redacted" {
		t.Fatalf("case %+v", k)
	}
	if e.ev.got[len(e.ev.got)-1] != events.TypeRedacted {
		t.Fatalf("events %v", e.ev.got)
	}
	d := e.create(t, DocumentOnly)
	if r, err := e.m.Cancel(ctx, e.who, d.SessionID, d.SessionToken); err != nil || r.Status != StatusCancelled {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestEventsSurviveAnOutboxFailure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "reject")
	e.ev.fail = true
	c := e.create(t, DocumentOnly)
	if _, err := e.doc(c, "page"); err != nil {
		t.Fatal(err)
	}
	if s := e.st.Catalog().IdentitySession("ws1", c.SessionID); len(s.PendingEvents) != 1 {
		t.Fatalf("pending %v", s.PendingEvents)
	}
	e.ev.fail = false
	if n := e.m.FlushPending(ctx); n != 1 || len(e.ev.got) != 1 {
		t.Fatalf("flushed %d, got %v", n, e.ev.got)
	}
	if s := e.st.Catalog().IdentitySession("ws1", c.SessionID); len(s.PendingEvents) != 0 {
		t.Fatalf("pending after flush %v", s.PendingEvents)
	}
}

func TestOpenCaseForOtherModules(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify")
	id, err := e.m.OpenCase(ctx, "ws1", "journey_escalation", "jrn_123", []string{"velocity"})
	if err != nil {
		t.Fatal(err)
	}
	cv, err := e.m.Resolve(ctx, "ws1", id, DecisionRejected, "fraud ring", "bob")
	if err != nil || cv.Status != CaseResolved || cv.Decision != DecisionRejected || cv.Session != nil {
		t.Fatalf("%+v %v", cv, err)
	}
	if _, err := e.m.OpenCase(ctx, "ws1", KindIdentitySession, "x", nil); !is(err, errcode.ErrInvalidField) {
		t.Fatalf("reserved kind: %v", err)
	}
}

type blockingScreener struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingScreener) Screen(_ context.Context, _ documents.Request) (*documents.DocumentResult, error) {
	b.entered <- struct{}{}
	<-b.release
	return documents.Simulate("ZZV")
}

func TestConcurrentStepsOnOneSession(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify")
	bs := &blockingScreener{entered: make(chan struct{}), release: make(chan struct{})}
	e.deps.Screener = bs
	e.m = New(Config{}, e.deps)
	c := e.create(t, DocumentOnly)
	done := make(chan error, 1)
	go func() {
		_, err := e.doc(c, "page")
		done <- err
	}()
	<-bs.entered
	for name, f := range map[string]func() error{
		"a second document": func() error { _, err := e.doc(c, "page"); return err },
		"complete":          func() error { _, err := e.m.Complete(ctx, e.who, c.SessionID, c.SessionToken); return err },
		"cancel":            func() error { _, err := e.m.Cancel(ctx, e.who, c.SessionID, c.SessionToken); return err },
		"redact":            func() error { _, err := e.m.Redact(ctx, e.who, c.SessionID, c.SessionToken); return err },
	} {
		if err := f(); !is(err, ErrBusy) {
			t.Fatalf("%s while a step runs: %v", name, err)
		}
	}
	if r, err := e.m.Result(ctx, e.who, c.SessionID, c.SessionToken); err != nil || r.Status != StatusProcessing {
		t.Fatalf("result while a step runs: %+v %v", r, err)
	}
	close(bs.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r, _ := e.m.Result(ctx, e.who, c.SessionID, c.SessionToken); r.Status != StatusCollecting || r.AttemptsUsed != 1 {
		t.Fatalf("after the step: %+v", r)
	}
}

// Retention runs on a timer (the leader's sweep calls Prune), not only on
// the next create: an ended session goes IdentitySessionRetention after it
// ended, a session never completed after its capture deadline plus the
// retention, a session in manual review stays until a reviewer decides,
// and a resolved case goes ReviewCaseRetention after its resolution.
// Nothing is written while nothing is due.
func TestRetentionPrunesOnATimer(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify", "review", "verify")
	done := e.create(t, DocumentOnly)
	_, _ = e.doc(done, "page")
	if r, err := e.m.Complete(ctx, e.who, done.SessionID, done.SessionToken); err != nil || r.Status != StatusVerified {
		t.Fatalf("%+v %v", r, err)
	}
	review := e.create(t, DocumentOnly)
	_, _ = e.doc(review, "page")
	if r, err := e.m.Complete(ctx, e.who, review.SessionID, review.SessionToken); err != nil || r.Status != StatusReview {
		t.Fatalf("%+v %v", r, err)
	}
	idle := e.create(t, DocumentOnly)
	resolved := e.create(t, DocumentOnly)
	_, _ = e.doc(resolved, "page")
	caseID, err := e.m.OpenCase(ctx, "ws1", "journey_escalation", "jrn_1", []string{"velocity"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Resolve(ctx, "ws1", caseID, DecisionRejected, "no", "alice"); err != nil {
		t.Fatal(err)
	}
	sessions := func() int { return len(e.st.Catalog().Identity["ws1"].Sessions) }
	cases := func() int { return len(e.st.Catalog().Identity["ws1"].Cases) }
	before := e.st.Catalog().Index
	if n, err := e.m.Prune(ctx); n != 0 || err != nil || e.st.Catalog().Index != before {
		t.Fatalf("prune with nothing due: %d %v, index %d → %d", n, err, before, e.st.Catalog().Index)
	}
	// Just past the retention of the verified session (its capture
	// deadline is later, so the idle one is not due yet).
	e.now = e.now.Add(catalog.IdentitySessionRetention + time.Minute)
	if n, err := e.m.Prune(ctx); n != 1 || err != nil {
		t.Fatalf("prune after the retention: %d %v", n, err)
	}
	if e.st.Catalog().IdentitySession("ws1", done.SessionID) != nil || sessions() != 3 {
		t.Fatalf("the ended session was not pruned (%d left)", sessions())
	}
	// Past the idle sessions' capture deadline plus retention: both idle
	// ones go; the one in review stays.
	e.now = e.now.Add(2 * time.Hour)
	if n, err := e.m.Prune(ctx); n != 2 || err != nil {
		t.Fatalf("prune of idle sessions: %d %v", n, err)
	}
	if e.st.Catalog().IdentitySession("ws1", review.SessionID) == nil || e.st.Catalog().IdentitySession("ws1", idle.SessionID) != nil {
		t.Fatal("retention pruned the session in review or kept an idle one")
	}
	// The resolved case goes after its own retention; the open case stays.
	if cases() != 2 {
		t.Fatalf("%d cases", cases())
	}
	e.now = e.now.Add(catalog.ReviewCaseRetention)
	if n, err := e.m.Prune(ctx); n != 1 || err != nil || cases() != 1 {
		t.Fatalf("prune of the resolved case: %d %v, %d cases left", n, err, cases())
	}
	if e.st.Catalog().ReviewCase("ws1", caseID) != nil || sessions() != 1 {
		t.Fatal("the resolved case was kept, or the session in review was pruned")
	}
}
