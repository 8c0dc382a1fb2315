package agents

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

func (a *shardAsker) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.keys)
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

// fixture is a Module over in-memory shards and catalog, a workspace w1
// and its agent billing-bot: invoice.* and refund.* in scope billing,
// refund.* needs a human.
type fixture struct {
	m      *Module
	ask    *shardAsker
	store  *memStore
	now    time.Time
	agent  *catalog.Agent
	secret string
	seq    int
}

func mustNewFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	sys := actors.NewSystem(actors.Config{Shards: 2}, func() int64 { return f.now.UnixNano() })
	t.Cleanup(sys.Stop)
	f.ask = &shardAsker{sys: sys}
	f.store = &memStore{cat: catalog.Empty()}
	f.m = New(Config{SealKey: "module-test"}, f.ask, f.store, func() time.Time { return f.now })
	f.mustApply(t, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "w1", ScopeKey: []byte("k"), Settings: catalog.DefaultSettings()}})
	f.agent, f.secret = f.mustAgent(t, Spec{Name: "billing-bot", AllowedActions: []string{"invoice.*", "refund.*"},
		AllowedScopes: []string{"billing", "ops"}, ApprovalRules: []catalog.AgentRule{{Action: "refund.*"}}})
	return f
}

func (f *fixture) mustApply(t *testing.T, cmd catalog.Command) any {
	t.Helper()
	v, err := f.store.Apply(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *fixture) mustAgent(t *testing.T, sp Spec) (*catalog.Agent, string) {
	t.Helper()
	a, secret, err := f.m.Register("w1", sp, f.now)
	if err != nil {
		t.Fatal(err)
	}
	return f.mustApply(t, &catalog.PutAgent{Agent: a}).(*catalog.Agent), secret
}

// signed is an HMAC-signed message of agent with secret, as the transport
// hands it over.
func (f *fixture) signed(agent, secret, body string) Message {
	f.seq++
	ts := strconv.FormatInt(f.now.Unix(), 10)
	nonce := fmt.Sprintf("module-nonce-%08d", f.seq)
	h := http.Header{}
	h.Set(HeaderAgent, agent)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderSignature, Sign([]byte(secret), ts, nonce, []byte(body)))
	return Message{Method: "POST", Host: "trustd.example", Path: "/v1/agents/decision", Header: h, Body: []byte(body)}
}

func decisionBody(req, action, scope string) string {
	return `{"request_id":"` + req + `","action":"` + action + `","scope":"` + scope + `","resource_id":"inv-1","subject_id":"cust-1","summary":"s"}`
}

// decide authenticates and decides body as the bot.
func (f *fixture) decide(t *testing.T, body string) (Decision, error) {
	t.Helper()
	cat := f.store.Catalog()
	id, err := f.m.Authenticate(cat, f.signed(f.agent.ID, f.secret, body))
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return f.m.Decide(context.Background(), cat, id, []byte(body))
}

func (f *fixture) mustDecide(t *testing.T, body string) Decision {
	t.Helper()
	d, err := f.decide(t, body)
	if err != nil {
		t.Fatalf("decide %s: %v", body, err)
	}
	return d
}

func TestDecisionsFollowTheRegistryAndAreIdempotent(t *testing.T) {
	// Each case is the agent's first decision (a fresh fixture), so the
	// only behaviour observed is the scope's first use.
	cases := []struct {
		name, action, scope, decision string
		reasons                       []string
	}{
		{"an allowed action in an allowed scope, first time in it, is allowed", "invoice.read", "billing", DecisionAllow, []string{ReasonNewScope}},
		{"an action outside the globs is denied", "account.delete", "billing", DecisionDeny, []string{ReasonNewScope, ReasonActionNotAllowed}},
		{"a scope outside the list is denied and never recorded as seen", "invoice.read", "hr", DecisionDeny, []string{ReasonScopeNotAllowed}},
		{"an action under an approval rule needs a human", "refund.issue", "billing", DecisionApproval, []string{ReasonNewScope, ReasonRuleRequires}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustNewFixture(t)
			d := f.mustDecide(t, decisionBody("r1", c.action, c.scope))
			if d.Decision != c.decision || d.RecommendedDecision != c.decision || !slices.Equal(d.ReasonCodes, c.reasons) ||
				!d.Success || !d.IdentityVerified || d.AgentID != f.agent.ID || d.DecisionID == "" {
				t.Fatalf("%+v, want %s %v", d, c.decision, c.reasons)
			}
			if (d.ApprovalRequestID != "") != (c.decision == DecisionApproval) {
				t.Fatalf("approval_request_id %q with decision %s", d.ApprovalRequestID, d.Decision)
			}
		})
	}

	f := mustNewFixture(t)
	t.Run("a scope used before is no longer new", func(t *testing.T) {
		f.mustDecide(t, decisionBody("seen-1", "invoice.read", "ops"))
		if d := f.mustDecide(t, decisionBody("seen-2", "invoice.read", "ops")); slices.Contains(d.ReasonCodes, ReasonNewScope) {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("a retry with the same body gets the stored answer and opens no second approval", func(t *testing.T) {
		first := f.mustDecide(t, decisionBody("idem", "refund.issue", "billing"))
		again := f.mustDecide(t, decisionBody("idem", "refund.issue", "billing"))
		if again.DecisionID != first.DecisionID || again.ApprovalRequestID != first.ApprovalRequestID || first.ApprovalRequestID == "" {
			t.Fatalf("retry %+v, first %+v", again, first)
		}
		n := 0
		for _, ap := range f.store.Catalog().Approvals {
			if ap.RequestID == "idem" {
				n++
				if ap.ID != first.ApprovalRequestID || ap.Status != "pending" || !ap.ExpiresAt.Equal(f.now.Add(ApprovalTTL)) {
					t.Fatalf("approval %+v", ap)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d approvals for one request_id", n)
		}
	})

	t.Run("another body with a used request_id is refused", func(t *testing.T) {
		if _, err := f.decide(t, decisionBody("idem", "refund.other", "billing")); !errors.Is(err, ErrRequestReused) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("bodies are decoded strictly and validated", func(t *testing.T) {
		for _, c := range []struct {
			body string
			want error
		}{
			{`{"request_id":"a","request_id":"b","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":""}`, ErrBodyInvalid},
			{`{"request_id":"a","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":"","x":1}`, ErrBodyInvalid},
			{`{"request_id":"","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":""}`, ErrDecisionInput},
			{`{"request_id":"a","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":"` + strings.Repeat("x", 1001) + `"}`, ErrDecisionInput},
		} {
			if _, err := f.decide(t, c.body); !errors.Is(err, c.want) {
				t.Errorf("%.60s: %v, want %v", c.body, err, c.want)
			}
		}
	})

	t.Run("every decision keys the agent's four behaviour counters and its stored answer", func(t *testing.T) {
		before := len(f.ask.asked())
		f.mustDecide(t, decisionBody("keys", "invoice.read", "billing"))
		got := f.ask.asked()[before:]
		aid := f.agent.ID
		for _, want := range []string{"agv/" + aid, "agf/" + aid, "agd/" + aid, "agsc/" + aid + "/billing", "agr/" + aid + "/keys"} {
			if !slices.Contains(got, want) {
				t.Errorf("no ask of %s in %v", want, got)
			}
		}
	})
}

func TestObservedBehaviourRaisesTheRisk(t *testing.T) {
	t.Run("three failed signatures of a known agent count against its first decision", func(t *testing.T) {
		f := mustNewFixture(t)
		body := decisionBody("x", "invoice.read", "billing")
		for range 3 {
			if _, err := f.m.Authenticate(f.store.Catalog(), f.signed(f.agent.ID, "wrong", body)); !errors.Is(err, ErrSignatureInvalid) {
				t.Fatalf("wrong secret: %v", err)
			}
		}
		d := f.mustDecide(t, decisionBody("after-failures", "invoice.read", "billing"))
		if !slices.Contains(d.ReasonCodes, ReasonFailedSignatures) || d.RiskScore < 30 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("a failed signature of an unknown agent counts for nobody", func(t *testing.T) {
		f := mustNewFixture(t)
		other := "6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d"
		if _, err := f.m.Authenticate(f.store.Catalog(), f.signed(other, "x", "{}")); !errors.Is(err, ErrUnknownAgent) {
			t.Fatalf("unknown agent: %v", err)
		}
		if slices.Contains(f.ask.asked(), "agf/"+other) {
			t.Fatal("an unknown agent's failure was counted")
		}
	})
	t.Run("a denial asks the agent's denial counter, an approval does not", func(t *testing.T) {
		f := mustNewFixture(t)
		denials := func() int {
			n := 0
			for _, k := range f.ask.asked() {
				if k == "agd/"+f.agent.ID {
					n++
				}
			}
			return n
		}
		approve := f.mustDecide(t, decisionBody("to-approve", "refund.issue", "billing"))
		deny := f.mustDecide(t, decisionBody("to-deny", "refund.issue", "billing"))
		before := denials()
		if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", approve.ApprovalRequestID, true, "alice"); err != nil {
			t.Fatal(err)
		}
		if denials() != before {
			t.Fatal("an approval counted as a denial")
		}
		ap, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", deny.ApprovalRequestID, false, "bob")
		if err != nil || ap.Status != "denied" || ap.DecidedBy != "bob" {
			t.Fatalf("deny: %+v %v", ap, err)
		}
		if denials() != before+1 {
			t.Fatalf("a denial asked the counter %d times", denials()-before)
		}
		if next := f.mustDecide(t, decisionBody("after-deny", "invoice.read", "billing")); !slices.Contains(next.ReasonCodes, ReasonDeniedApprovals) {
			t.Fatalf("%+v", next)
		}
	})
}

func TestDecisionsDoNotCountAgainstTheirOwnRisk(t *testing.T) {
	f := mustNewFixture(t)
	// observed is what the agent's next decision would read of its
	// failure and denial counters (the velocity hit behaviour makes, in a
	// scope the agent may not use, changes neither).
	observed := func(t *testing.T) (fails, denials float64) {
		t.Helper()
		b := f.m.behaviour(f.agent, "not-a-scope-of-the-agent", f.now)
		return b.FailedSignatures, b.DeniedApprovals
	}
	const n = 12
	t.Run("decisions in a row read no failures and no denials and the risk does not climb", func(t *testing.T) {
		for i := range n {
			f.now = f.now.Add(time.Second)
			d := f.mustDecide(t, decisionBody(fmt.Sprintf("row-%d", i), "invoice.read", "billing"))
			wantRisk, wantReasons := 0, []string{ReasonWithinPolicy}
			if i == 0 {
				wantRisk, wantReasons = 15, []string{ReasonNewScope}
			}
			if d.RiskScore != wantRisk || !slices.Equal(d.ReasonCodes, wantReasons) || d.Decision != DecisionAllow {
				t.Fatalf("decision %d: %+v, want risk %d %v allowed", i+1, d, wantRisk, wantReasons)
			}
			if fails, denials := observed(t); fails != 0 || denials != 0 {
				t.Fatalf("after decision %d: failed_signatures %v denied_approvals %v, want 0 and 0", i+1, fails, denials)
			}
		}
		// A new scope after all of them costs what a new scope costs, no
		// more: far from the default threshold.
		d := f.mustDecide(t, decisionBody("new-scope", "invoice.read", "ops"))
		if d.RiskScore != 15 || !slices.Equal(d.ReasonCodes, []string{ReasonNewScope}) || d.Decision != DecisionAllow {
			t.Fatalf("a new scope after %d decisions: %+v, want risk 15 [new_scope] allowed", n, d)
		}
	})
	t.Run("a failed signature counts exactly one, and deciding adds nothing to it", func(t *testing.T) {
		body := decisionBody("bad", "invoice.read", "billing")
		if _, err := f.m.Authenticate(f.store.Catalog(), f.signed(f.agent.ID, "wrong", body)); !errors.Is(err, ErrSignatureInvalid) {
			t.Fatalf("wrong secret: %v", err)
		}
		for i := range 3 {
			if fails, denials := observed(t); fails != 1 || denials != 0 {
				t.Fatalf("read %d: failed_signatures %v denied_approvals %v, want 1 and 0", i+1, fails, denials)
			}
			f.mustDecide(t, decisionBody(fmt.Sprintf("after-fail-%d", i), "invoice.read", "billing"))
		}
	})
	t.Run("a denial counts exactly one, and deciding adds nothing to it", func(t *testing.T) {
		d := f.mustDecide(t, decisionBody("to-deny", "refund.issue", "billing"))
		if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", d.ApprovalRequestID, false, "bob"); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if fails, denials := observed(t); fails != 1 || denials != 1 {
				t.Fatalf("read %d: failed_signatures %v denied_approvals %v, want 1 and 1", i+1, fails, denials)
			}
			next := f.mustDecide(t, decisionBody(fmt.Sprintf("after-deny-%d", i), "invoice.read", "billing"))
			if next.RiskScore != 25 || !slices.Equal(next.ReasonCodes, []string{ReasonDeniedApprovals}) {
				t.Fatalf("decision %d after the denial: %+v, want risk 25 [denied_approvals]", i+1, next)
			}
		}
	})
}

func TestApprovalsAreDecidedOnceAndConsumedOnce(t *testing.T) {
	f := mustNewFixture(t)
	d := f.mustDecide(t, decisionBody("ap", "refund.issue", "billing"))
	status := func() (Status, error) {
		body := `{"approval_id":"` + d.ApprovalRequestID + `"}`
		cat := f.store.Catalog()
		id, err := f.m.Authenticate(cat, f.signed(f.agent.ID, f.secret, body))
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		return f.m.ApprovalStatus(context.Background(), cat, id, []byte(body))
	}
	if st, err := status(); err != nil || st.Status != "pending" || st.Consumed || st.Action != "refund.issue" || st.Scope != "billing" {
		t.Fatalf("pending: %+v %v", st, err)
	}
	if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w2", d.ApprovalRequestID, true, "eve"); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("another workspace's approval: %v", err)
	}
	if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", "no-such-approval", true, "eve"); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("a missing approval: %v", err)
	}
	if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", d.ApprovalRequestID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", d.ApprovalRequestID, false, "bob"); !errors.Is(err, ErrApprovalNotPending) {
		t.Fatalf("deny after approve: %v", err)
	}
	if st, err := status(); err != nil || st.Status != "approved" || !st.Consumed {
		t.Fatalf("the consuming read: %+v %v", st, err)
	}
	if _, err := status(); !errors.Is(err, ErrApprovalConsumed) {
		t.Fatalf("a second read: %v", err)
	}

	t.Run("another agent cannot read it", func(t *testing.T) {
		other, secret := f.mustAgent(t, Spec{Name: "other", AllowedActions: []string{"*"}, AllowedScopes: []string{"s"}})
		body := `{"approval_id":"` + d.ApprovalRequestID + `"}`
		cat := f.store.Catalog()
		id, err := f.m.Authenticate(cat, f.signed(other.ID, secret, body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.m.ApprovalStatus(context.Background(), cat, id, []byte(body)); !errors.Is(err, ErrApprovalNotFound) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("an approval past its TTL is expired and consumes nothing", func(t *testing.T) {
		late := f.mustDecide(t, decisionBody("late", "refund.issue", "billing"))
		if _, err := f.m.DecideApproval(context.Background(), f.store.Catalog(), "w1", late.ApprovalRequestID, true, "alice"); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(ApprovalTTL + time.Minute)
		body := `{"approval_id":"` + late.ApprovalRequestID + `"}`
		cat := f.store.Catalog()
		id, err := f.m.Authenticate(cat, f.signed(f.agent.ID, f.secret, body))
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.m.ApprovalStatus(context.Background(), cat, id, []byte(body))
		if err != nil || st.Status != "expired" || st.Consumed {
			t.Fatalf("%+v %v", st, err)
		}
	})
}

// The two schemes through Authenticate: a message carrying both is
// refused, an RFC 9421 message of an agent with a key is verified, and a
// nonce is spent for both schemes.
func TestAuthenticateChoosesTheScheme(t *testing.T) {
	f := mustNewFixture(t)
	body := decisionBody("s1", "invoice.read", "billing")
	both := f.signed(f.agent.ID, f.secret, body)
	both.Header.Set("Signature-Input", `sig1=("@authority");created=1;expires=2;keyid="x";nonce="y";tag="web-bot-auth"`)
	both.Header.Set("Signature", "sig1=:AAAA:")
	if _, err := f.m.Authenticate(f.store.Catalog(), both); !errors.Is(err, ErrSchemeAmbiguous) {
		t.Fatalf("both schemes: %v", err)
	}
	msg := f.signed(f.agent.ID, f.secret, body)
	if _, err := f.m.Authenticate(f.store.Catalog(), msg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Authenticate(f.store.Catalog(), msg); !errors.Is(err, ErrNonceReused) {
		t.Fatalf("replay: %v", err)
	}
}
