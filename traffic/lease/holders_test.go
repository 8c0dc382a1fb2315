package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
)

type failingAsk struct{}

func (failingAsk) Ask(string, actors.Op) error { return errors.New("owner unreachable") }

func TestHoldersReadsLiveLeases(t *testing.T) {
	k := func(id, scope, app string) catalog.Command {
		return &catalog.PutConcurrencyConstraint{Constraint: catalog.ConcurrencyConstraint{ID: id, WorkspaceID: wsID, Name: id, Scope: scope,
			ApplicationID: app, ActionPattern: id + ".*", Capacity: 3, MinTTLMs: 100, MaxTTLMs: 60_000, DefaultTTLMs: 10_000}}
	}
	cat := mustCatalog(t, k("ws", catalog.ScopeWorkspace, ""), k("app", catalog.ScopeApplication, "site-1"), k("subj", catalog.ScopeSubject, ""))
	now := time.Now()
	m := mustModule(t, &now)
	ws := cat.Workspaces[wsID]
	site1, site2 := Caller{Workspace: ws, AppID: "site-1"}, Caller{Workspace: ws, AppID: "site-2"}
	acquire := func(who Caller, lc LeaseContext) *LeaseResult {
		t.Helper()
		r, err := m.Acquire(cat, who, &lc, 0, "")
		if err != nil || !r.Acquired {
			t.Fatalf("acquire %+v: %+v %v", lc, r, err)
		}
		return r
	}
	held := acquire(site1, LeaseContext{Action: "ws.export"})
	acquire(site2, LeaseContext{Action: "ws.export"})
	acquire(site1, LeaseContext{Action: "app.export"})
	acquire(site1, LeaseContext{Action: "subj.export", SubjectID: "alice"})

	for _, tc := range []struct {
		id         string
		enumerable bool
		inUse      int
		values     []HolderValue
	}{
		{"ws", true, 2, []HolderValue{{Value: "workspace", InUse: 2}}},
		{"app", true, 1, []HolderValue{{Value: "site-1", InUse: 1}}},
		{"subj", false, 0, nil},
	} {
		h, err := m.Holders(cat, ws, cat.ConcurrencyConstraints[tc.id])
		if err != nil {
			t.Fatal(err)
		}
		if h.Enumerable != tc.enumerable || h.InUse != tc.inUse || len(h.Values) != len(tc.values) || h.Capacity != 3 || h.Name != tc.id {
			t.Fatalf("%s: %+v", tc.id, h)
		}
		for i, v := range tc.values {
			if h.Values[i].Value != v.Value || h.Values[i].InUse != v.InUse || h.Values[i].Fence == 0 {
				t.Fatalf("%s value %d: %+v", tc.id, i, h.Values[i])
			}
		}
	}
	// A release shows at once.
	if _, err := m.Release(cat, site1, held.LeaseToken, &LeaseContext{Action: "ws.export"}); err != nil {
		t.Fatal(err)
	}
	if h, _ := m.Holders(cat, ws, cat.ConcurrencyConstraints["ws"]); h.InUse != 1 {
		t.Fatalf("after a release: %+v", h)
	}
	// An owner that cannot answer is an error, not zero holders.
	broken := New(failingAsk{}, func() time.Time { return now }, nil)
	if _, err := broken.Holders(cat, ws, cat.ConcurrencyConstraints["ws"]); err == nil {
		t.Fatal("an unreachable owner read as zero holders")
	}
}
