package journeys

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// memStore applies commands to an in-memory catalog, one at a time, as
// the Raft FSM does.
type memStore struct {
	mu  sync.Mutex
	cat *catalog.Catalog
	n   uint64
}

func (s *memStore) Catalog() *catalog.Catalog { s.mu.Lock(); defer s.mu.Unlock(); return s.cat }
func (s *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := catalog.Begin(s.cat)
	v, err := cmd.Apply(tx)
	if err != nil {
		return nil, err
	}
	s.n++
	s.cat = tx.Commit(s.n)
	return v, nil
}

type localAsker struct {
	mu  sync.Mutex
	st  actors.State
	now func() time.Time
}

func (a *localAsker) Ask(_ string, op actors.Op) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Now = a.now().UnixNano()
	op.Apply(&a.st)
	return nil
}
func (a *localAsker) AskPartition(_ int, op actors.Op) error { return a.Ask("", op) }

type fixedKeys struct{ k *token.Key }

func (f fixedKeys) Signer(*catalog.Catalog) *token.Key { return f.k }
func (f fixedKeys) Verifier(_ *catalog.Catalog, id string) *token.Key {
	if id == f.k.ID {
		return f.k
	}
	return nil
}

type fakeSignals struct{ s trust.Signals }

func (f *fakeSignals) SubjectSignals(context.Context, string, string, string) (trust.Signals, error) {
	return f.s, nil
}

type fakeCases struct {
	opened []string
}

func (f *fakeCases) OpenCase(_ context.Context, ws, kind, ref string, reasons []string) (string, error) {
	// The identity review queue's rule for reasons (identity/session
	// OpenCase): 1 to 64 of A-Z a-z 0-9 _ - . /.
	for _, r := range reasons {
		if !ident.Action(r) {
			return "", errors.New("the review queue refuses reason " + r)
		}
	}
	f.opened = append(f.opened, ws+"|"+kind+"|"+ref+"|"+strings.Join(reasons, ","))
	return "case-" + string(rune('0'+len(f.opened))), nil
}

type fakeHuman struct{ v HumanVerdict }

func (f *fakeHuman) VerifyHuman(context.Context, string, string, string, string) (HumanVerdict, error) {
	return f.v, nil
}

type fakePresence struct {
	pass bool
	ref  []float32
}

func (f *fakePresence) Issue(now time.Time) liveness.Challenge {
	return liveness.Challenge{Nonce: "n1", Actions: []liveness.Action{liveness.Blink}, IssuedAt: now, Deadline: now.Add(time.Minute)}
}
func (f *fakePresence) Check(_ context.Context, c liveness.Challenge, frames []liveness.Frame, _ time.Time) (liveness.Result, error) {
	if c.Nonce != "n1" {
		return liveness.Result{Reasons: []string{"wrong-challenge"}}, nil
	}
	if !f.pass {
		return liveness.Result{Reasons: []string{"action-not-observed"}, Frames: len(frames)}, nil
	}
	return liveness.Result{Passed: true, Frames: len(frames), Reference: f.ref}, nil
}

type exactMatcher struct{}

func (exactMatcher) Match(a, b []float32) (bool, error) {
	if len(a) != len(b) {
		return false, nil
	}
	for i := range a {
		if a[i] != b[i] {
			return false, nil
		}
	}
	return true, nil
}

type fixture struct {
	m     *Module
	store *memStore
	ws    *catalog.Workspace
	who   Caller
	now   time.Time
	cases *fakeCases
	human *fakeHuman
	face  *fakePresence
	sig   *fakeSignals
	key   *token.Key
	ask   *localAsker
}

func mustFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{now: time.Unix(1_800_000_000, 0), cases: &fakeCases{}, human: &fakeHuman{}, face: &fakePresence{}, sig: &fakeSignals{}}
	clock := func() time.Time { return f.now }
	f.ws = &catalog.Workspace{ID: "ws1", ScopeKey: []byte("scope-key-of-ws1")}
	cat := catalog.Empty()
	cat.Workspaces = map[string]*catalog.Workspace{"ws1": f.ws, "ws2": {ID: "ws2", ScopeKey: []byte("scope-key-of-ws2")}}
	f.store = &memStore{cat: cat}
	f.key = token.NewKey("l1", []byte("0123456789abcdef0123456789abcdef"))
	f.ask = &localAsker{now: clock}
	f.m = New(f.store, f.ask, fixedKeys{f.key}, f.sig, clock).WithCases(f.cases).WithHuman(f.human).
		WithFace(f.face, exactMatcher{}, token.NewSealer("cluster-seal-key", "journey-face-template"))
	f.who = Caller{Workspace: f.ws, AppID: "site1", Channel: "server"}
	return f
}

func (f *fixture) define(t *testing.T, s Spec) *catalog.Journey {
	t.Helper()
	j, err := NewJourney(f.ws.ID, s, f.now)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.store.Apply(context.Background(), &catalog.PutJourney{Journey: j})
	if err != nil {
		t.Fatal(err)
	}
	return v.(*catalog.Journey)
}

func (f *fixture) start(t *testing.T, r StartRequest) StartResult {
	t.Helper()
	res, err := f.m.Start(context.Background(), f.who, r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// human completes a human_verification session and returns the proof.
func (f *fixture) humanProof(t *testing.T, st StartResult) string {
	t.Helper()
	v, err := f.m.Person(context.Background(), st.PersonToken)
	if err != nil {
		t.Fatal(err)
	}
	f.human.v = HumanVerdict{Success: true, CData: v.Reference}
	a, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", "")
	if err != nil || !a.Passed {
		t.Fatalf("complete: %+v %v", a, err)
	}
	return a.Proof.Response
}

var loginJourney = Spec{Key: "login", Name: "Login", Method: MethodHuman, RequestedAssurance: "none"}

var payJourney = Spec{Key: "pay", Name: "Payment", Method: MethodAuthorization, RequestedAssurance: "high",
	Consent:      catalog.JourneyConsent{Required: true, Version: "v3"},
	Requirements: catalog.JourneyRequirements{Identity: true, Liveness: true, Authorization: true, OperationBinding: true}}

func TestDefinitionValidation(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Spec)
		ok   bool
	}{
		{"a facial authorization journey asking for high assurance is valid", func(*Spec) {}, true},
		{"an unknown method is refused", func(s *Spec) { s.Method = "sms" }, false},
		{"human verification cannot promise high assurance", func(s *Spec) { s.Method = MethodHuman }, false},
		{"a passkey cannot promise liveness", func(s *Spec) { s.Method, s.RequestedAssurance = MethodDevice, "standard" }, false},
		{"required consent needs a version", func(s *Spec) { s.Consent.Version = "" }, false},
		{"a lifetime over 300 seconds is refused", func(s *Spec) { s.SessionLifetimeSeconds = 301 }, false},
		{"an escalation may not lower the method", func(s *Spec) {
			s.Escalation = catalog.JourneyEscalation{Enabled: true, HighRiskMethod: MethodLiveness}
		}, false},
		{"an upper-case key is refused", func(s *Spec) { s.Key = "Pay" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := payJourney
			c.mut(&s)
			err := s.Validate()
			if (err == nil) != c.ok {
				t.Fatalf("Validate = %v, want ok %v", err, c.ok)
			}
		})
	}
}

func TestPolicyVersionIncrementsOnEveryChange(t *testing.T) {
	f := mustFixture(t)
	for want := 1; want <= 3; want++ {
		if j := f.define(t, loginJourney); j.PolicyVersion != want {
			t.Fatalf("policy_version %d, want %d", j.PolicyVersion, want)
		}
	}
	st := f.start(t, StartRequest{JourneyKey: "login"})
	if st.PolicyVersion != 3 || st.ExpiresIn != 300 || st.Method != MethodHuman || st.Status != StatusStarted {
		t.Fatalf("start %+v", st)
	}
}

func TestHumanJourneyCompletesOnceAndProofIsSingleUse(t *testing.T) {
	f := mustFixture(t)
	f.define(t, Spec{Key: "login", Name: "Login", Method: MethodHuman, RequestedAssurance: "none"})
	st := f.start(t, StartRequest{JourneyKey: "login", SubjectID: "user-1", Action: "login"})
	if !strings.HasPrefix(st.SessionToken, token.JourneySessionPrefix) || !strings.HasPrefix(st.PersonToken, token.JourneyPersonPrefix) {
		t.Fatalf("tokens %q %q", st.SessionToken, st.PersonToken)
	}
	proof := f.humanProof(t, st)
	s, _ := f.m.Status(context.Background(), f.who, st.SessionToken)
	if s.Status != StatusCompleted || s.Verified {
		t.Fatalf("status before siteverify %+v", s)
	}
	req := SiteverifyRequest{SessionToken: st.SessionToken, Response: proof, SubjectID: "user-1", Action: "login"}
	r, err := f.m.Siteverify(context.Background(), f.who, req)
	if err != nil || !r.Success || r.Status != StatusCompleted || len(r.Codes) != 0 {
		t.Fatalf("siteverify %+v %v", r, err)
	}
	// Status reads without consuming: twice the same.
	for range 2 {
		s, _ = f.m.Status(context.Background(), f.who, st.SessionToken)
		if s.Status != StatusCompleted || !s.Verified {
			t.Fatalf("status after %+v", s)
		}
	}
	r, _ = f.m.Siteverify(context.Background(), f.who, req)
	if r.Success || r.Codes[0] != errcode.CodeTimeoutOrDuplicate {
		t.Fatalf("second siteverify %+v", r)
	}
}

func TestSiteverifyRules(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*SiteverifyRequest)
		code string
	}{
		{"an identity-bound journey refuses another subject", func(r *SiteverifyRequest) { r.SubjectID = "user-2" }, errcode.CodeSubjectMismatch},
		{"an identity-bound journey refuses a missing subject", func(r *SiteverifyRequest) { r.SubjectID = "" }, CodeSubjectRequired},
		{"another action is refused", func(r *SiteverifyRequest) { r.Action = "transfer" }, errcode.CodeActionMismatch},
		{"another operation is refused", func(r *SiteverifyRequest) { r.OperationReference = "op-2" }, errcode.CodeOperationMismatch},
		{"consent not accepted is refused", func(r *SiteverifyRequest) { r.ConsentAccepted = false }, CodeConsentRequired},
		{"another consent version is refused", func(r *SiteverifyRequest) { r.ConsentVersion = "v2" }, CodeConsentMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustFixture(t)
			f.define(t, payJourney)
			f.face.pass, f.face.ref = true, []float32{1, 2, 3}
			enrol(t, f, "user-1")
			st := f.start(t, StartRequest{JourneyKey: "pay", SubjectID: "user-1", Action: "pay", OperationReference: "op-1", ConsentVersion: "v3"})
			proof := faceProof(t, f, st)
			req := SiteverifyRequest{SessionToken: st.SessionToken, Response: proof, SubjectID: "user-1", Action: "pay",
				OperationReference: "op-1", ConsentVersion: "v3", ConsentAccepted: true}
			bad := req
			c.mut(&bad)
			r, err := f.m.Siteverify(context.Background(), f.who, bad)
			if err != nil || r.Success || len(r.Codes) == 0 || r.Codes[0] != c.code || r.Status != StatusFailed || r.NextStep != "retry_with_fresh_proof" {
				t.Fatalf("siteverify %+v %v, want %s", r, err, c.code)
			}
			// After a failed attempt the same proof never succeeds, even
			// with the right fields: a fresh proof is required.
			r, _ = f.m.Siteverify(context.Background(), f.who, req)
			if r.Success || r.Codes[0] != errcode.CodeTimeoutOrDuplicate {
				t.Fatalf("retry with the spent proof %+v", r)
			}
			fresh := faceProof(t, f, st)
			req.Response = fresh
			r, _ = f.m.Siteverify(context.Background(), f.who, req)
			if !r.Success || r.Status != StatusCompleted || r.Achieved.Assurance != trust.LevelHigh || !r.Achieved.Identity || !r.Achieved.Liveness || !r.OperationBound {
				t.Fatalf("fresh proof %+v", r)
			}
		})
	}
}

// enrol runs a facial_enrollment journey for subject.
func enrol(t *testing.T, f *fixture, subject string) {
	t.Helper()
	f.define(t, Spec{Key: "enrol", Name: "Enrol", Method: MethodEnrollment, RequestedAssurance: "none"})
	st := f.start(t, StartRequest{JourneyKey: "enrol", SubjectID: subject})
	faceProof(t, f, st)
	if f.store.Catalog().FaceTemplate("ws1", subjectHash(f.ws, subject), f.now) == nil {
		t.Fatal("no template after enrollment")
	}
}

func faceProof(t *testing.T, f *fixture, st StartResult) string {
	t.Helper()
	if _, err := f.m.BeginFace(context.Background(), st.PersonToken); err != nil {
		t.Fatal(err)
	}
	a, err := f.m.CompleteFace(context.Background(), st.PersonToken, []liveness.Frame{{Image: []byte{1}}})
	if err != nil || !a.Passed {
		t.Fatalf("face %+v %v", a, err)
	}
	return a.Proof.Response
}

func TestFacialAuthorizationRefusesAnotherFace(t *testing.T) {
	f := mustFixture(t)
	f.face.pass, f.face.ref = true, []float32{1, 2, 3}
	enrol(t, f, "user-1")
	tpl := f.store.Catalog().FaceTemplate("ws1", subjectHash(f.ws, "user-1"), f.now)
	if strings.Contains(string(tpl.Sealed), "\x00\x00\x80\x3f") {
		t.Fatal("the template is stored in the clear")
	}
	f.define(t, payJourney)
	st := f.start(t, StartRequest{JourneyKey: "pay", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	f.face.ref = []float32{9, 9, 9}
	f.m.BeginFace(context.Background(), st.PersonToken)
	a, err := f.m.CompleteFace(context.Background(), st.PersonToken, []liveness.Frame{{Image: []byte{1}}})
	if err != nil || a.Passed || a.Reasons[0] != "face-mismatch" || a.Status != StatusFailed {
		t.Fatalf("another face %+v %v", a, err)
	}
	// A failed liveness check is a failed attempt, never a proof.
	f.face.pass = false
	f.m.BeginFace(context.Background(), st.PersonToken)
	a, _ = f.m.CompleteFace(context.Background(), st.PersonToken, []liveness.Frame{{Image: []byte{1}}})
	if a.Passed || a.Proof.Response != "" {
		t.Fatalf("failed liveness %+v", a)
	}
	// Deleting the subject deletes the template: authorization is refused.
	if n, err := f.m.DeleteSubject(context.Background(), f.ws, "user-1"); err != nil || n != 1 {
		t.Fatalf("delete %d %v", n, err)
	}
	st = f.start(t, StartRequest{JourneyKey: "pay", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	if _, err := f.m.BeginFace(context.Background(), st.PersonToken); !errors.Is(err, ErrNotEnrolled) {
		t.Fatalf("after delete %v", err)
	}
}

func TestAssistedReviewNeverApprovesAFailedProof(t *testing.T) {
	f := mustFixture(t)
	f.define(t, Spec{Key: "login", Name: "Login", Method: MethodHuman, RequestedAssurance: "none", Requirements: catalog.JourneyRequirements{Identity: false}})
	st := f.start(t, StartRequest{JourneyKey: "login", SubjectID: "user-1", Action: "login"})
	proof := f.humanProof(t, st)
	r, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: proof, SubjectID: "user-1", Action: "other"})
	if r.Success || r.Status != StatusFailed {
		t.Fatalf("failed attempt %+v", r)
	}
	e, err := f.m.Escalate(context.Background(), f.who, EscalateRequest{SessionToken: st.SessionToken, ReasonCode: "user_stuck", Priority: "high", OperationLabel: "login"})
	if err != nil || e.CaseReference == "" || e.Status != StatusEscalated {
		t.Fatalf("escalate %+v %v", e, err)
	}
	if got := f.cases.opened[0]; strings.Contains(got, "user-1") || !strings.Contains(got, "journey-session:") {
		t.Fatalf("the case carries personal data or no reference: %q", got)
	}
	// Neither the failed proof nor a fresh one completes an escalated
	// session, and the person cannot start another attempt.
	for _, p := range []string{proof, "tp1_garbage"} {
		r, _ = f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: p, SubjectID: "user-1", Action: "login"})
		if r.Success || r.Status != StatusEscalated {
			t.Fatalf("after escalation %+v", r)
		}
	}
	if _, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", ""); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("attempt after escalation %v", err)
	}
	// Escalating again returns the same case.
	e2, _ := f.m.Escalate(context.Background(), f.who, EscalateRequest{SessionToken: st.SessionToken, ReasonCode: "user_stuck"})
	if e2.CaseReference != e.CaseReference || len(f.cases.opened) != 1 {
		t.Fatalf("second escalate %+v", e2)
	}
}

func TestEscalateWithoutQueueIsUnavailable(t *testing.T) {
	f := mustFixture(t)
	f.m.WithCases(nil)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	if _, err := f.m.Escalate(context.Background(), f.who, EscalateRequest{SessionToken: st.SessionToken, ReasonCode: "x"}); !errors.Is(err, ErrMethodUnavailable) {
		t.Fatalf("err %v", err)
	}
}

func TestRiskEscalatesTheMethod(t *testing.T) {
	f := mustFixture(t)
	s := loginJourney
	s.Escalation = catalog.JourneyEscalation{Enabled: true, HighRiskMethod: MethodAuthorization, MediumRiskMethod: MethodDevice}
	f.define(t, s)
	cases := []struct {
		name   string
		label  string
		hint   StartRequest
		method string
	}{
		{"a quiet subject keeps the defined method", "", StartRequest{}, MethodHuman},
		{"a caller's high score hint escalates to facial authorization", "", StartRequest{RiskScore: 0.7}, MethodAuthorization},
		{"a caller's medium level hint escalates to a passkey", "", StartRequest{RiskLevel: "medium"}, MethodDevice},
		{"the service's own abuse label escalates even with a low hint", "abuse", StartRequest{RiskLevel: "low"}, MethodDevice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.sig.s = trust.Signals{Label: c.label}
			r := c.hint
			r.JourneyKey, r.SubjectID = "login", "user-1"
			st := f.start(t, r)
			if st.Method != c.method {
				t.Fatalf("method %s, want %s (level %s)", st.Method, c.method, st.RiskLevel)
			}
		})
	}
}

func TestSessionsAreTheCallersOnly(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	others := []Caller{
		{Workspace: f.store.Catalog().Workspaces["ws2"], AppID: "site9", Channel: "server"},
		{Workspace: f.ws, AppID: "site2", Channel: "server"},
		{Workspace: f.ws, AppID: "site1", Channel: "mobile"},
	}
	for _, o := range others {
		if _, err := f.m.Status(context.Background(), o, st.SessionToken); !errors.Is(err, ErrInvalidSession) {
			t.Fatalf("status as %+v: %v", o, err)
		}
		r, _ := f.m.Siteverify(context.Background(), o, SiteverifyRequest{SessionToken: st.SessionToken, Response: "x"})
		if r.Known || r.Codes[0] != CodeInvalidSession {
			t.Fatalf("siteverify as %+v: %+v", o, r)
		}
	}
	// The person's capability is not a session token, nor the reverse.
	if _, err := f.m.Status(context.Background(), f.who, st.PersonToken); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("capability as session token: %v", err)
	}
	if _, err := f.m.Person(context.Background(), st.SessionToken); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("session token as capability: %v", err)
	}
}

func TestExpiredSessionAndWrongCData(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	f.human.v = HumanVerdict{Success: true, CData: "journey:another-session"}
	a, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", "")
	if err != nil || a.Passed || a.Reasons[0] != "cdata-mismatch" {
		t.Fatalf("widget of another session %+v %v", a, err)
	}
	proof := f.humanProof(t, st)
	f.now = f.now.Add(301 * time.Second)
	r, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: proof})
	if r.Success || r.Status != StatusExpired || r.Codes[0] != errcode.CodeTimeoutOrDuplicate || r.NextStep != "start_new_journey" {
		t.Fatalf("expired %+v", r)
	}
}

// A widget token this call did not consume (a replay, a double submit, an
// expired token) never moves the session nor counts as an attempt; a
// failed first use does, and a mobile session has no widget.
func TestAReplayedWidgetTokenNeverMovesTheSession(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	status := func() StatusResult {
		s, err := f.m.Status(context.Background(), f.who, st.SessionToken)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	f.human.v = HumanVerdict{Codes: []string{"timeout-or-duplicate"}, CData: "journey:whatever"}
	for range MaxAttempts + 1 {
		a, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", "")
		if err != nil || a.Passed || a.Status != StatusStarted || a.Reasons[0] != "timeout-or-duplicate" {
			t.Fatalf("replay %+v %v", a, err)
		}
	}
	if s := status(); s.Status != StatusStarted || s.Session.Attempts != 0 {
		t.Fatalf("after replays %+v", s)
	}
	f.human.v = HumanVerdict{Codes: []string{"remoteip-mismatch"}, CData: "journey:whatever"}
	if a, _ := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", "198.51.100.1"); a.Passed || a.Status != StatusFailed {
		t.Fatalf("first use from another address %+v", a)
	}
	if s := status(); s.Session.Attempts != 1 || s.NextStep != "retry_with_fresh_proof" {
		t.Fatalf("after a failed first use %+v", s)
	}
	f.humanProof(t, st)

	mob := f.who
	mob.AppID, mob.Channel = "app1", "mobile"
	ms, err := f.m.Start(context.Background(), mob, StartRequest{JourneyKey: "login"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.CompleteHuman(context.Background(), ms.PersonToken, "widget-token", ""); !errors.Is(err, ErrMethodUnavailable) {
		t.Fatalf("a mobile session ran the widget: %v", err)
	}
}

func TestAProofOfAnotherSessionIsRefused(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	a, b := f.start(t, StartRequest{JourneyKey: "login"}), f.start(t, StartRequest{JourneyKey: "login"})
	proofA := f.humanProof(t, a)
	f.humanProof(t, b)
	r, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: b.SessionToken, Response: proofA})
	if r.Success || r.Codes[0] != CodeProofNotForSession {
		t.Fatalf("%+v", r)
	}
}

func TestJourneyProofIsSpentAtTrustSiteverifyToo(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login", Action: "login"})
	proof := f.humanProof(t, st)
	tm, err := trust.New(f.ask, f.sig, func() time.Time { return f.now })
	if err != nil {
		t.Fatal(err)
	}
	res, err := tm.VerifyProof(f.who, "site1", trust.SiteverifyRequest{Response: proof, Action: "login"}, fixedKeys{f.key}.lookup(f.store.Catalog()))
	if err != nil || !res.Success() || res.Achieved.Method != MethodHuman {
		t.Fatalf("trust siteverify %+v %v", res, err)
	}
	r, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: proof, Action: "login"})
	if r.Success || r.Codes[0] != errcode.CodeTimeoutOrDuplicate {
		t.Fatalf("journey siteverify after trust siteverify %+v", r)
	}
	if s, _ := f.m.Status(context.Background(), f.who, st.SessionToken); s.Status != StatusCompleted || s.Verified {
		t.Fatalf("a replay changed the session: %+v", s)
	}
}

func (f fixedKeys) lookup(cat *catalog.Catalog) token.Lookup {
	return func(id string) *token.Key { return f.Verifier(cat, id) }
}

func (f *fixture) sessionID(t *testing.T, st StartResult) string {
	t.Helper()
	j, err := token.DecodeJourney(st.SessionToken, false, fixedKeys{f.key}.lookup(f.store.Catalog()))
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(j.ID[:])
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestContinueOnlyOnSuccessAndCompleted(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	// Before the person completes: not completed, and nothing changes.
	r, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken})
	if r.Success || r.Status != StatusStarted || r.Codes[0] != CodeNotCompleted {
		t.Fatalf("before completion %+v", r)
	}
	// Every answer that is not success true carries a status other than a
	// verified completion, and every success carries completed.
	proof := f.humanProof(t, st)
	for _, bad := range []string{"", "tp1_forged", proof + "x"} {
		r, _ = f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: bad})
		if r.Success {
			t.Fatalf("%q succeeded", bad)
		}
	}
	r, _ = f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: proof})
	if !r.Success || r.Status != StatusCompleted {
		t.Fatalf("the genuine proof %+v", r)
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	f := mustFixture(t)
	f.define(t, loginJourney)
	st := f.start(t, StartRequest{JourneyKey: "login"})
	f.human.v = HumanVerdict{Success: false, Codes: []string{"invalid-input-response"}}
	for i := 0; i < MaxAttempts; i++ {
		a, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", "")
		if err != nil || a.Passed || a.Status != StatusFailed {
			t.Fatalf("attempt %d: %+v %v", i, a, err)
		}
	}
	if _, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", ""); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("attempt past the bound: %v", err)
	}
	s, _ := f.m.Status(context.Background(), f.who, st.SessionToken)
	if s.NextStep != "start_new_journey" || s.Session.FailedAttempts != MaxAttempts {
		t.Fatalf("status %+v", s)
	}
}

func TestHighRiskStartOpensAReviewCaseWithoutPersonalData(t *testing.T) {
	f := mustFixture(t)
	s := loginJourney
	s.Escalation = catalog.JourneyEscalation{Enabled: true, ReviewOnHighRisk: true}
	f.define(t, s)
	st := f.start(t, StartRequest{JourneyKey: "login", SubjectID: "user-1", RiskLevel: "high"})
	if st.Status != StatusEscalated || len(f.cases.opened) != 1 || strings.Contains(f.cases.opened[0], "user-1") {
		t.Fatalf("start %+v cases %v", st, f.cases.opened)
	}
	if _, err := f.m.CompleteHuman(context.Background(), st.PersonToken, "widget-token", ""); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("an escalated session accepted an attempt: %v", err)
	}
	status, _ := f.m.Status(context.Background(), f.who, st.SessionToken)
	if status.Session.CaseReference == "" || status.NextStep != "await_review" {
		t.Fatalf("status %+v", status)
	}
}

func TestBindingCodesRefuseAProofBelowTheRequestedAssurance(t *testing.T) {
	ws := &catalog.Workspace{ID: "ws1", ScopeKey: []byte("k")}
	s := &catalog.JourneySession{RequestedAssurance: "high"}
	codes := bindingCodes(ws, s, token.Proof{Assurance: uint8(trust.LevelStandard)}, SiteverifyRequest{})
	if len(codes) != 1 || codes[0] != errcode.CodeInsufficient {
		t.Fatalf("codes %v", codes)
	}
	if codes = bindingCodes(ws, s, token.Proof{Assurance: uint8(trust.LevelHigh)}, SiteverifyRequest{}); len(codes) != 0 {
		t.Fatalf("a high proof: %v", codes)
	}
}

func TestHighRiskReviewWithoutAQueueFailsClosed(t *testing.T) {
	f := mustFixture(t)
	f.m.WithCases(nil)
	s := loginJourney
	s.Escalation = catalog.JourneyEscalation{Enabled: true, ReviewOnHighRisk: true}
	f.define(t, s)
	if _, err := f.m.Start(context.Background(), f.who, StartRequest{JourneyKey: "login", SubjectID: "u", RiskLevel: "critical"}); !errors.Is(err, ErrMethodUnavailable) {
		t.Fatalf("err %v", err)
	}
	if n := f.store.Catalog().JourneySessionCount("ws1"); n != 0 {
		t.Fatalf("%d sessions stored", n)
	}
}
