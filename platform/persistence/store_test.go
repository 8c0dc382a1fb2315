package persistence

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

func mustOpenStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Config{DataDir: dir, NodeID: "n1", BindAddr: "127.0.0.1:0", Bootstrap: true, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func waitLeader(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConcurrentWritesArePackedAndSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenStore(t, dir)
	waitLeader(t, s)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := catalog.Workspace{ID: fmt.Sprintf("ws-%02d", i), Name: "acme", Settings: catalog.DefaultSettings()}
			if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: w}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws-00"}}); err == nil {
		t.Fatal("a duplicate workspace id was accepted")
	}
	name := "renamed"
	if _, err := s.Apply(ctx, &catalog.UpdateWorkspace{ID: "ws-01", Patch: catalog.WorkspacePatch{Name: &name}}); err != nil {
		t.Fatal(err)
	}
	if got := len(s.Catalog().Workspaces); got != 64 {
		t.Fatalf("workspaces = %d, want 64", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := mustOpenStore(t, dir)
	defer s2.Close()
	c := s2.Catalog()
	if got := len(c.Workspaces); got != 64 {
		t.Fatalf("after restart workspaces = %d, want 64", got)
	}
	if c.Workspaces["ws-01"].Name != "renamed" {
		t.Fatalf("after restart ws-01 name = %q", c.Workspaces["ws-01"].Name)
	}
}

// TestWaitReadyWaitsForTheCatalogNotOnlyRaft: a restarted store is ready
// only once its catalog holds the last command of the log it started with
// (Raft's applied index moves when an entry is handed to the FSM, before
// the FSM has applied it).
func TestWaitReadyWaitsForTheCatalogNotOnlyRaft(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenStore(t, dir)
	for i := range 20 {
		ws := catalog.Workspace{ID: fmt.Sprintf("ws-%d", i), Name: fmt.Sprintf("w%d", i), Settings: catalog.DefaultSettings()}
		if _, err := s.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: ws}); err != nil {
			t.Fatal(err)
		}
	}
	last := s.Catalog().Index
	if got := s.lastCommandAtOrBefore(s.raft.LastIndex()); got != last {
		t.Fatalf("last command entry = %d, want the catalog's index %d", got, last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpenStore(t, dir)
	defer s2.Close()
	if c := s2.Catalog(); c.Index < last || len(c.Workspaces) != 20 {
		t.Fatalf("ready with catalog index %d and %d workspaces, want index ≥ %d and 20", c.Index, len(c.Workspaces), last)
	}
}
