package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
)

// shardAsker runs ops on a real in-process shard system, the way the
// router does on the owner, and records every key it was asked.
type shardAsker struct {
	sys  *actors.System
	mu   sync.Mutex
	keys []string
}

func (a *shardAsker) Ask(key string, op actors.Op) error {
	a.mu.Lock()
	a.keys = append(a.keys, key)
	a.mu.Unlock()
	return a.sys.Ask(cluster.Partition(key), op, time.Second)
}

// memStore is the catalog applied in memory, one command at a time.
type memStore struct {
	mu  sync.Mutex
	cat *catalog.Catalog
}

func (s *memStore) Catalog() *catalog.Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat
}

func (s *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := catalog.Begin(s.cat)
	v, err := cmd.Apply(tx)
	if err != nil {
		return nil, err
	}
	s.cat = tx.Commit(s.cat.Index + 1)
	return v, nil
}

type fixture struct {
	m      *Module
	ask    *shardAsker
	store  *memStore
	now    time.Time
	caller Caller
	other  Caller
}

func mustNewFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	sys := actors.NewSystem(actors.Config{Shards: 2}, func() int64 { return f.now.UnixNano() })
	t.Cleanup(sys.Stop)
	f.ask = &shardAsker{sys: sys}
	w1 := catalog.Workspace{ID: "w1", ScopeKey: []byte("key-one"), Settings: catalog.DefaultSettings()}
	w2 := catalog.Workspace{ID: "w2", ScopeKey: []byte("key-two"), Settings: catalog.DefaultSettings()}
	f.store = &memStore{cat: catalog.Empty()}
	for _, w := range []catalog.Workspace{w1, w2} {
		if _, err := f.store.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: w}); err != nil {
			t.Fatal(err)
		}
	}
	f.caller = Caller{Workspace: f.store.Catalog().Workspaces["w1"], AppID: "site-1"}
	f.other = Caller{Workspace: f.store.Catalog().Workspaces["w2"]}
	f.m = New(f.ask, f.store, func() time.Time { return f.now })
	return f
}

func (f *fixture) assess(t *testing.T, subject, device, event, outcome string) Assessment {
	t.Helper()
	a, err := f.m.Assess(context.Background(), f.caller, AssessRequest{SubjectID: subject, DeviceID: device, EventType: event, Outcome: outcome})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func has(a Assessment, reason string) bool { return slices.Contains(a.Reasons, reason) }

func TestAssessCountsWhatItObserves(t *testing.T) {
	f := mustNewFixture(t)
	t.Run("failed logins of a subject add up in the window and raise risk", func(t *testing.T) {
		var a Assessment
		for i := 0; i < 3; i++ {
			a = f.assess(t, "alice", "laptop", EventLogin, OutcomeFailed)
		}
		if !has(a, ReasonSubjectFailures) {
			t.Fatalf("%+v", a)
		}
		if b := f.assess(t, "bob", "laptop", EventLogin, OutcomeAttempted); has(b, ReasonSubjectFailures) {
			t.Fatal("bob shares alice's failures")
		}
	})
	t.Run("a success after those failures is flagged, and proves the device", func(t *testing.T) {
		a := f.assess(t, "alice", "laptop", EventLogin, OutcomeSucceeded)
		if !has(a, ReasonSuccessAfterFailures) || !has(a, ReasonNewDevice) {
			t.Fatalf("%+v", a)
		}
		f.now = f.now.Add(2 * Window)
		if a := f.assess(t, "alice", "laptop", EventLogin, OutcomeAttempted); has(a, ReasonNewDevice) || has(a, ReasonSubjectFailures) || a.Classification != ClassLow {
			t.Fatalf("two windows later from the proven device: %+v", a)
		}
	})
	t.Run("a failed login never makes a device known", func(t *testing.T) {
		f.assess(t, "carol", "evil", EventLogin, OutcomeFailed)
		if a := f.assess(t, "carol", "evil", EventLogin, OutcomeAttempted); !has(a, ReasonNewDevice) {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("one device trying many subjects is credential stuffing", func(t *testing.T) {
		var a Assessment
		for i := 0; i < 10; i++ {
			a = f.assess(t, fmt.Sprint("victim-", i), "farm", EventLogin, OutcomeFailed)
		}
		if !has(a, ReasonSubjectsPerDeviceHi) || !has(a, ReasonDeviceFailures) || a.RecommendedDecision != DecisionDeny || a.Decision != DecisionDeny {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("one subject from many devices is scored", func(t *testing.T) {
		var a Assessment
		for i := 0; i < 4; i++ {
			a = f.assess(t, "dave", fmt.Sprint("phone-", i), EventLogin, OutcomeAttempted)
		}
		if !has(a, ReasonDevicesPerSubject) {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("another workspace shares nothing", func(t *testing.T) {
		a, err := f.m.Assess(context.Background(), f.other, AssessRequest{SubjectID: "victim-1", DeviceID: "farm", EventType: EventLogin, Outcome: OutcomeAttempted})
		if err != nil || a.Classification != ClassLow {
			t.Fatalf("%+v %v", a, err)
		}
	})
	t.Run("no raw identifier reaches a key", func(t *testing.T) {
		for _, k := range f.ask.keys {
			for _, raw := range []string{"alice", "laptop", "farm", "victim", "dave", "phone"} {
				if strings.Contains(k, raw) {
					t.Fatalf("key %q holds %q", k, raw)
				}
			}
		}
	})
}

func TestSignalsReadWithoutCounting(t *testing.T) {
	f := mustNewFixture(t)
	f.assess(t, "erin", "tablet", EventLogin, OutcomeFailed)
	f.assess(t, "erin", "tablet", EventLogin, OutcomeSucceeded)
	key := f.caller.Workspace.ScopeKey
	sh, dh := SubjectHash(key, "erin"), DeviceHash(key, "tablet")
	for i := 0; i < 3; i++ {
		sig, err := f.m.Signals(context.Background(), "w1", sh, dh)
		if err != nil {
			t.Fatal(err)
		}
		want := Signals{SubjectFailures: 1, DeviceFailures: 1, DevicesPerSubject: 1, SubjectsPerDevice: 1, HasDevice: true,
			DeviceKnown: true, DeviceSeen: true}
		if sig != want {
			t.Fatalf("read %d: %+v, want %+v", i, sig, want)
		}
	}
	sig, err := f.m.Signals(context.Background(), "w1", SubjectHash(key, "nobody"), "")
	if err != nil || sig != (Signals{}) {
		t.Fatalf("an unknown subject: %+v %v", sig, err)
	}
}

func TestObserveModeAppliesAllow(t *testing.T) {
	f := mustNewFixture(t)
	ws := *f.caller.Workspace
	ws.Settings.DefaultMode = "observe"
	f.caller.Workspace = &ws
	a, err := f.m.Assess(context.Background(), f.caller, AssessRequest{SubjectID: "s", DeviceID: "d", EventType: EventLogin,
		Outcome: OutcomeAttempted, CompromisedPassword: true})
	if err != nil || a.EnforcementMode != ModeObserve || a.RecommendedDecision != DecisionChallenge || a.Decision != DecisionAllow {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestFeedback(t *testing.T) {
	f := mustNewFixture(t)
	ctx := context.Background()
	a := f.assess(t, "frank", "pc", EventLogin, OutcomeSucceeded)
	fb := func(c Caller, id, label, reason string) (Feedback, error) {
		return f.m.Feedback(ctx, c, FeedbackRequest{AssessmentID: id, Label: label, ReasonCode: reason})
	}
	t.Run("refusals", func(t *testing.T) {
		// An API Protection assessment is kept under its bare id.
		bare := uuid.NewString()
		if err := f.ask.Ask("apa/"+bare, &actors.PutAssessment{Assessment: actors.Assessment{ID: bare, WorkspaceID: "w1",
			ExpiresNs: f.now.Add(time.Hour).UnixNano()}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name              string
			caller            Caller
			id, label, reason string
			want              error
		}{
			{"an unknown id", f.caller, uuid.NewString(), LabelFraudulent, "chargeback", ErrAssessmentNotFound},
			{"another workspace's assessment", f.other, a.AssessmentID, LabelFraudulent, "chargeback", ErrAssessmentNotFound},
			{"another module's assessment", f.caller, bare, LabelFraudulent, "chargeback", ErrAssessmentNotFound},
			{"a malformed id", f.caller, "not-a-uuid", LabelFraudulent, "chargeback", ErrInvalidFeedback},
			{"an unknown label", f.caller, a.AssessmentID, "abuse", "chargeback", ErrInvalidFeedback},
			{"a reason of the other label", f.caller, a.AssessmentID, LabelLegitimate, "chargeback", ErrInvalidFeedback},
		} {
			if _, err := fb(tc.caller, tc.id, tc.label, tc.reason); !errors.Is(err, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			}
		}
	})
	first, err := fb(f.caller, a.AssessmentID, LabelFraudulent, "account_takeover")
	if err != nil || !first.Accepted {
		t.Fatal(first, err)
	}
	t.Run("an exact retry within five minutes answers the first id", func(t *testing.T) {
		f.now = f.now.Add(4 * time.Minute)
		again, err := fb(f.caller, strings.ToUpper(a.AssessmentID), LabelFraudulent, "account_takeover")
		if err != nil || again.FeedbackID != first.FeedbackID {
			t.Fatalf("%+v %v, first %s", again, err, first.FeedbackID)
		}
	})
	t.Run("feedback changes later assessments of the subject and the device", func(t *testing.T) {
		if b := f.assess(t, "frank", "other-pc", EventLogin, OutcomeAttempted); !has(b, ReasonPriorFraudSubject) || has(b, ReasonPriorFraudDevice) {
			t.Fatalf("subject: %+v", b)
		}
		if b := f.assess(t, "gina", "pc", EventLogin, OutcomeAttempted); !has(b, ReasonPriorFraudDevice) || has(b, ReasonPriorFraudSubject) {
			t.Fatalf("device: %+v", b)
		}
	})
	t.Run("another label is new feedback that replaces the first", func(t *testing.T) {
		legit, err := fb(f.caller, a.AssessmentID, LabelLegitimate, "passed_two_factor")
		if err != nil || legit.FeedbackID == first.FeedbackID {
			t.Fatalf("%+v %v", legit, err)
		}
		if b := f.assess(t, "frank", "pc", EventLogin, OutcomeAttempted); has(b, ReasonPriorFraudSubject) || !has(b, ReasonPriorLegitimate) {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("after the dedup window the same feedback is new again", func(t *testing.T) {
		f.now = f.now.Add(FeedbackDedup + time.Second)
		one, _ := fb(f.caller, a.AssessmentID, LabelLegitimate, "passed_two_factor")
		f.now = f.now.Add(FeedbackDedup + time.Second)
		two, _ := fb(f.caller, a.AssessmentID, LabelLegitimate, "passed_two_factor")
		if one.FeedbackID == two.FeedbackID {
			t.Fatal("a retry after five minutes was de-duplicated")
		}
	})
	t.Run("an expired assessment takes no feedback", func(t *testing.T) {
		f.now = f.now.Add(AssessmentTTL)
		if _, err := fb(f.caller, a.AssessmentID, LabelFraudulent, "chargeback"); !errors.Is(err, ErrAssessmentNotFound) {
			t.Fatal(err)
		}
	})
}

func TestTrustedDevice(t *testing.T) {
	f := mustNewFixture(t)
	ctx := context.Background()
	trust := func(action, subject, device string) (TrustResult, error) {
		return f.m.TrustDevice(ctx, f.caller, TrustRequest{Action: action, SubjectID: subject, DeviceID: device, Label: "Hana's phone"})
	}
	if a := f.assess(t, "hana", "phone", EventLogin, OutcomeAttempted); !has(a, ReasonNewDevice) || a.TrustedDevice {
		t.Fatalf("before trust: %+v", a)
	}
	r, err := trust(ActionTrust, "hana", "phone")
	if err != nil || r.Status != StatusTrusted || r.ExpiresAt == nil || !r.ExpiresAt.Equal(f.now.Add(catalog.TrustedDeviceRetention)) {
		t.Fatalf("%+v %v", r, err)
	}
	if a := f.assess(t, "hana", "phone", EventLogin, OutcomeAttempted); has(a, ReasonNewDevice) || !a.TrustedDevice || !has(a, ReasonTrustedDevice) {
		t.Fatalf("after trust: %+v", a)
	}
	if a := f.assess(t, "ivan", "phone", EventLogin, OutcomeAttempted); a.TrustedDevice {
		t.Fatal("trusted for another subject")
	}
	r, err = trust(ActionRevoke, "hana", "phone")
	if err != nil || r.Status != StatusRevoked || r.ExpiresAt != nil {
		t.Fatalf("%+v %v", r, err)
	}
	if a := f.assess(t, "hana", "phone", EventLogin, OutcomeAttempted); !has(a, ReasonNewDevice) || a.TrustedDevice {
		t.Fatalf("after revoke: %+v", a)
	}
	if _, err := trust(ActionRevoke, "hana", "phone"); err != nil {
		t.Fatalf("a second revoke: %v", err)
	}
	t.Run("the subject's cap answers trusted-devices-full", func(t *testing.T) {
		for i := 0; i < catalog.MaxTrustedDevicesPerSubject; i++ {
			if _, err := trust(ActionTrust, "jo", fmt.Sprint("dev-", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := trust(ActionTrust, "jo", "one-more"); !errors.Is(err, ErrTrustedDevicesFull) {
			t.Fatal(err)
		}
	})
	t.Run("the catalog holds only keyed hashes", func(t *testing.T) {
		b, err := f.store.Catalog().MarshalSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []string{"\"hana\"", "\"jo\"", "\"dev-1\"", "\"phone\""} {
			if strings.Contains(string(b), raw) {
				t.Fatalf("the snapshot holds %s", raw)
			}
		}
	})
}

func TestValidation(t *testing.T) {
	f := mustNewFixture(t)
	ctx := context.Background()
	age := func(d int64) *int64 { return &d }
	ok := AssessRequest{SubjectID: "s", DeviceID: "d", EventType: EventLogin, Outcome: OutcomeFailed}
	for _, tc := range []struct {
		name string
		req  func(r *AssessRequest)
		want error
	}{
		{"a missing subject", func(r *AssessRequest) { r.SubjectID = "" }, ErrInvalidSubject},
		{"a subject with a control character", func(r *AssessRequest) { r.SubjectID = "a\nb" }, ErrInvalidSubject},
		{"a device too long", func(r *AssessRequest) { r.DeviceID = strings.Repeat("x", 257) }, ErrInvalidDevice},
		{"an unknown event type", func(r *AssessRequest) { r.EventType = "logout" }, ErrInvalidEvent},
		{"an unknown outcome", func(r *AssessRequest) { r.Outcome = "pending" }, ErrInvalidEvent},
		{"a negative account age", func(r *AssessRequest) { r.AccountAgeDays = age(-1) }, ErrInvalidHint},
		{"an absurd account age", func(r *AssessRequest) { r.AccountAgeDays = age(1 << 40) }, ErrInvalidHint},
	} {
		r := ok
		tc.req(&r)
		if _, err := f.m.Assess(ctx, f.caller, r); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		req  TrustRequest
		want error
	}{
		{"an unknown action", TrustRequest{Action: "forget", SubjectID: "s", DeviceID: "d"}, ErrInvalidTrustAction},
		{"a missing device", TrustRequest{Action: ActionTrust, SubjectID: "s"}, ErrInvalidDevice},
		{"a missing subject", TrustRequest{Action: ActionTrust, DeviceID: "d"}, ErrInvalidSubject},
		{"a label too long", TrustRequest{Action: ActionTrust, SubjectID: "s", DeviceID: "d", Label: strings.Repeat("l", 65)}, ErrInvalidTrustAction},
	} {
		if _, err := f.m.TrustDevice(ctx, f.caller, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}
