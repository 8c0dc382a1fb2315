package lease

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
)

const wsID = "11111111-1111-4111-8111-111111111111"

func mustCatalog(t *testing.T, cmds ...catalog.Command) *catalog.Catalog {
	t.Helper()
	tx := catalog.Begin(catalog.Empty())
	base := []catalog.Command{
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "k1", Purpose: catalog.KeyLive, Secret: bytes.Repeat([]byte{1}, 32), CreatedAt: time.Unix(1, 0)}},
		&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: wsID, Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}},
	}
	for _, c := range append(base, cmds...) {
		if _, err := c.Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	return tx.Commit(1)
}

func mustModule(t *testing.T, now *time.Time) *Module {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	t.Cleanup(sys.Stop)
	return New(cluster.SingleNode("n1", sys, time.Second), func() time.Time { return *now }, nil)
}

func TestLeaseLifecycleWithoutHTTP(t *testing.T) {
	cat := mustCatalog(t, &catalog.PutConcurrencyConstraint{Constraint: catalog.ConcurrencyConstraint{
		ID: "c1", WorkspaceID: wsID, Name: "one-export", Scope: catalog.ScopeSubject, ActionPattern: "export.*",
		Capacity: 1, MinTTLMs: 100, MaxTTLMs: 60_000, DefaultTTLMs: 10_000}})
	now := time.Now()
	m := mustModule(t, &now)
	who := Caller{Workspace: cat.Workspaces[wsID], AppID: "site-1"}
	lc := &LeaseContext{Action: "export.report", SubjectID: "alice"}

	first, err := m.Acquire(cat, who, lc, 0, "")
	if err != nil || !first.Acquired || len(first.FencingTokens) != 1 || first.TTLMs != 10_000 {
		t.Fatalf("first acquire: %+v %v", first, err)
	}
	second, err := m.Acquire(cat, who, lc, 0, "")
	if err != nil || second.Acquired || second.ReasonCodes[0] != "capacity-exhausted" || second.RetryAfterSeconds != 10 {
		t.Fatalf("a second holder over capacity 1: %+v %v", second, err)
	}
	if bob, _ := m.Acquire(cat, who, &LeaseContext{Action: "export.report", SubjectID: "bob"}, 0, ""); !bob.Acquired {
		t.Fatal("another subject is limited by alice's lease")
	}
	if _, err := m.Renew(cat, who, first.LeaseToken, &LeaseContext{Action: "export.report", SubjectID: "mallory"}, 0); !errors.Is(err, ErrContextMismatch) {
		t.Fatalf("renew from another context: %v", err)
	}
	if _, err := m.Renew(cat, Caller{Workspace: who.Workspace, AppID: "site-2"}, first.LeaseToken, lc, 0); !errors.Is(err, ErrContextMismatch) {
		t.Fatalf("renew from another application: %v", err)
	}
	if _, err := m.Release(cat, who, first.LeaseToken[:len(first.LeaseToken)-2]+"AA", lc); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a forged token: %v", err)
	}
	renewed, err := m.Renew(cat, who, first.LeaseToken, lc, 20_000)
	if err != nil || renewed.TTLMs != 20_000 || renewed.FencingTokens[0].FencingToken != first.FencingTokens[0].FencingToken {
		t.Fatalf("renew: %+v %v", renewed, err)
	}
	rel, err := m.Release(cat, who, renewed.LeaseToken, lc)
	if err != nil || !rel.Released {
		t.Fatalf("release: %+v %v", rel, err)
	}
	if rel, _ := m.Release(cat, who, renewed.LeaseToken, lc); rel.Released {
		t.Fatal("a second release freed something")
	}
	if _, err := m.Renew(cat, who, renewed.LeaseToken, lc, 0); !errors.Is(err, ErrExpired) {
		t.Fatalf("renewing a released lease: %v", err)
	}
	again, err := m.Acquire(cat, who, lc, 0, "")
	if err != nil || !again.Acquired || again.FencingTokens[0].FencingToken <= first.FencingTokens[0].FencingToken {
		t.Fatalf("reacquire after release must get a higher fence: %+v %v", again, err)
	}
	now = now.Add(time.Minute)
	if _, err := m.Renew(cat, who, again.LeaseToken, lc, 0); !errors.Is(err, ErrExpired) {
		t.Fatalf("renewing after expiry: %v", err)
	}
}

func TestIdempotentAcquireAndInputErrors(t *testing.T) {
	cat := mustCatalog(t, &catalog.PutConcurrencyConstraint{Constraint: catalog.ConcurrencyConstraint{
		ID: "c1", WorkspaceID: wsID, Name: "ws", Scope: catalog.ScopeWorkspace, ActionPattern: "*",
		Capacity: 1, MinTTLMs: 100, MaxTTLMs: 60_000, DefaultTTLMs: 10_000}})
	now := time.Now()
	m := mustModule(t, &now)
	who := Caller{Workspace: cat.Workspaces[wsID], AppID: "site-1"}
	lc := &LeaseContext{Action: "job.run"}
	a, _ := m.Acquire(cat, who, lc, 0, "retry-1")
	b, err := m.Acquire(cat, who, lc, 0, "retry-1")
	if err != nil || !b.Acquired || !b.IdempotentReplay || b.LeaseID != a.LeaseID {
		t.Fatalf("a retried acquire must return the held lease: %+v %v", b, err)
	}
	for _, tc := range []struct {
		name string
		lc   LeaseContext
		ttl  int64
		idem string
	}{
		{"an action with a space", LeaseContext{Action: "job run"}, 0, ""},
		{"a subject with a control character", LeaseContext{Action: "a", SubjectID: "x\x00"}, 0, ""},
		{"a ttl below the minimum", LeaseContext{Action: "a"}, 5, ""},
		{"an idempotency key with a newline", LeaseContext{Action: "a"}, 0, "a\n"},
	} {
		if _, err := m.Acquire(cat, who, &tc.lc, tc.ttl, tc.idem); !errors.Is(err, errcode.ErrInvalidField) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
