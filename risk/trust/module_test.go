package trust

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

// localAsker applies every op to one in-memory shard state: the whole
// cluster as one partition, enough to test the module without a router.
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

type fakeSignals struct {
	s   Signals
	err error
	got []string
}

func (f *fakeSignals) SubjectSignals(_ context.Context, ws, subject, device string) (Signals, error) {
	f.got = []string{ws, subject, device}
	return f.s, f.err
}

type testModule struct {
	*Module
	now time.Time
	cat *catalog.Catalog
	ws  *catalog.Workspace
	key *token.Key
}

func mustModule(t *testing.T, sig SignalSource) *testModule {
	t.Helper()
	tm := &testModule{now: time.Unix(1_800_000_000, 0)}
	clock := func() time.Time { return tm.now }
	m, err := New(&localAsker{now: clock}, sig, clock)
	if err != nil {
		t.Fatal(err)
	}
	tm.Module = m
	tm.ws = &catalog.Workspace{ID: "ws1", ScopeKey: []byte("scope-key")}
	tm.cat = catalog.Empty()
	tm.cat.Workspaces = map[string]*catalog.Workspace{"ws1": tm.ws}
	seed := make([]byte, 32)
	tm.cat.Keys = []*catalog.SigningKey{{ID: "r1", Purpose: catalog.KeyReceipt, Secret: seed, CreatedAt: tm.now}}
	tm.key = token.NewKey("l1", []byte("0123456789abcdef0123456789abcdef"))
	return tm
}

func (tm *testModule) keys(id string) *token.Key {
	if id == tm.key.ID {
		return tm.key
	}
	return nil
}

func TestModuleSignalSourceDecides(t *testing.T) {
	sig := &fakeSignals{}
	tm := mustModule(t, sig)
	who := Caller{Workspace: tm.ws, Channel: "server"}
	cases := []struct {
		name string
		s    Signals
		err  error
		req  DecisionRequest
		want string
	}{
		{"a clean subject is allowed", Signals{}, nil, DecisionRequest{}, Allow},
		{"a hinted new device asks for a step-up", Signals{}, nil, DecisionRequest{Hints: Hints{NewDevice: true}}, Verify},
		{"a trusted device (Account Defence) needs none", Signals{TrustedDevice: true}, nil, DecisionRequest{DeviceID: "d1", Hints: Hints{NewDevice: true}}, Allow},
		{"observed failures block", Signals{FailedAttempts5m: 10}, nil, DecisionRequest{}, Block},
		{"unreadable signals fail closed to review", Signals{}, errors.New("owner down"), DecisionRequest{}, Review},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sig.s, sig.err = c.s, c.err
			c.req.Action, c.req.SubjectID = "pay", "alice"
			r, err := tm.Decide(context.Background(), tm.cat, who, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if r.Decision.Decision != c.want || r.DecisionID == "" {
				t.Fatalf("decision %+v, want %s", r.Decision, c.want)
			}
			if sig.got[1] != SubjectHash(tm.ws.ScopeKey, "alice") || sig.got[1] == "alice" {
				t.Errorf("the signal source got %q, want the subject's keyed hash", sig.got[1])
			}
			if (c.req.DeviceID != "") != (sig.got[2] != "") {
				t.Errorf("device hash %q", sig.got[2])
			}
		})
	}
}

func TestModuleProofOrchestrateReceiptFeedback(t *testing.T) {
	tm := mustModule(t, nil)
	who := Caller{Workspace: tm.ws, Channel: "server"}
	proof := IssueProof(tm.key, tm.ws, ProofInput{Method: MethodFacial, Assurance: LevelStandard, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: "op-1", Action: "pay", AuthTime: tm.now}, tm.now)
	req := SiteverifyRequest{Response: proof, Action: "pay", ExpectedAssurance: "standard", RequireOperationBinding: true, OperationReference: "op-1"}
	r, err := tm.VerifyProof(who, "site1", req, tm.keys)
	if err != nil || !r.Success() || r.AssessmentID == "" {
		t.Fatalf("first exchange: %+v %v", r, err)
	}
	if again, _ := tm.VerifyProof(who, "site1", req, tm.keys); again.Success() || again.Codes[0] != errcode.CodeTimeoutOrDuplicate {
		t.Fatalf("replay: %+v", again)
	}
	other := &catalog.Workspace{ID: "ws2", ScopeKey: []byte("other")}
	if r2, _ := tm.VerifyProof(Caller{Workspace: other}, "", SiteverifyRequest{Response: proof}, tm.keys); r2.Known || r2.Codes[0] != errcode.CodeInvalidResponse {
		t.Fatalf("another workspace's exchange: %+v", r2)
	}

	orq := OrchestrateRequest{AssessmentID: r.AssessmentID, SubjectID: "alice", Action: "pay", OperationReference: "op-1"}
	o, err := tm.Orchestrate(tm.cat, who, orq)
	if err != nil || o.Decision.Decision != Allow || o.Receipt == "" || o.AssuranceLevel != LevelStandard {
		t.Fatalf("orchestrate: %+v %v", o, err)
	}
	if _, err := tm.Orchestrate(tm.cat, who, orq); !errors.Is(err, ErrAssessmentUsed) {
		t.Fatalf("second orchestration: %v", err)
	}
	cl, codes := tm.VerifyReceipt(tm.cat, who, VerifyReceiptRequest{Receipt: o.Receipt, Action: "pay", OperationReference: "op-1", SubjectID: "alice"})
	if cl == nil || len(codes) != 0 || cl.Audience != "ws1" || cl.Decision != Allow {
		t.Fatalf("receipt: %+v %v", cl, codes)
	}
	if _, codes := tm.VerifyReceipt(tm.cat, Caller{Workspace: other}, VerifyReceiptRequest{Receipt: o.Receipt}); codes[0] != CodeWrongWorkspace {
		t.Fatalf("receipt in another workspace: %v", codes)
	}
	tm.now = tm.now.Add(ReceiptTTL)
	if _, codes := tm.VerifyReceipt(tm.cat, who, VerifyReceiptRequest{Receipt: o.Receipt}); len(codes) != 1 || codes[0] != CodeReceiptExpired {
		t.Fatalf("an expired receipt: %v", codes)
	}

	// Feedback on the orchestrated decision: de-duplicated, and it raises
	// the subject's next decision.
	fb := FeedbackRequest{DecisionID: o.DecisionID, Label: "fraudulent", ReasonCode: "failed_step_up"}
	f1, err := tm.Feedback(who, fb)
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := tm.Feedback(who, fb)
	if !f2.Duplicate || f2.FeedbackID != f1.FeedbackID {
		t.Fatalf("retry: %+v %+v", f1, f2)
	}
	if _, err := tm.Feedback(Caller{Workspace: other}, fb); !errors.Is(err, ErrUnknownDecision) {
		t.Fatalf("feedback from another workspace: %v", err)
	}
	d, err := tm.Decide(context.Background(), tm.cat, who, DecisionRequest{Action: "pay", SubjectID: "alice"})
	if err != nil || d.Decision.Decision != Review {
		t.Fatalf("after fraudulent feedback: %+v %v", d.Decision, err)
	}
}

func TestOrchestrateWithoutAReceiptKeyKeepsTheVerification(t *testing.T) {
	tm := mustModule(t, nil)
	who := Caller{Workspace: tm.ws}
	keys := tm.cat.Keys
	tm.cat.Keys = nil
	proof := IssueProof(tm.key, tm.ws, ProofInput{Method: MethodFacial, Assurance: LevelHigh, AuthTime: tm.now}, tm.now)
	r, err := tm.VerifyProof(who, "", SiteverifyRequest{Response: proof}, tm.keys)
	if err != nil || !r.Success() {
		t.Fatalf("exchange: %+v %v", r, err)
	}
	orq := OrchestrateRequest{AssessmentID: r.AssessmentID, SubjectID: "bob", Action: "pay", OperationReference: "op"}
	if _, err := tm.Orchestrate(tm.cat, who, orq); !errors.Is(err, ErrNoReceiptKey) {
		t.Fatalf("no receipt key: %v", err)
	}
	tm.cat.Keys = keys
	if o, err := tm.Orchestrate(tm.cat, who, orq); err != nil || o.Receipt == "" {
		t.Fatalf("once a key exists: %+v %v", o, err)
	}
}
