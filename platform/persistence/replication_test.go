package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster/clustertest/deadline"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// mustOpenGroup opens n stores on loopback that form one Raft group
// (the first bootstraps and adds the others as voters) and returns them,
// the leader first. They are closed when the test ends.
func mustOpenGroup(tb testing.TB, n, inFlight int) []*Store {
	tb.Helper()
	deadline.Arm(tb, 0, nil)
	var stores []*Store
	for i := range n {
		s, err := Open(Config{DataDir: tb.TempDir(), NodeID: fmt.Sprintf("n%d", i), BindAddr: "127.0.0.1:0",
			Bootstrap: i == 0, Fast: true, maxRPCsInFlight: inFlight})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !stores[0].IsLeader() {
		if time.Now().After(deadline) {
			tb.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range stores[1:] {
		if err := stores[0].Raft().AddVoter(raft.ServerID(s.cfg.NodeID), raft.ServerAddress(s.RaftAddr()), 0, 5*time.Second).Error(); err != nil {
			tb.Fatal(err)
		}
	}
	return stores
}

// BenchmarkApplyReplicated is the write throughput of a three-voter group
// on loopback: every Apply is committed by a quorum. Run with and without
// Raft's pipelined replication (inflight=2 is hashicorp/raft's default,
// 1 what trustd runs) for platform/persistence/DESIGN.md.
func BenchmarkApplyReplicated(b *testing.B) {
	for _, bc := range []struct{ callers, inFlight int }{{1, 2}, {1, 1}, {64, 2}, {64, 1}} {
		b.Run(fmt.Sprintf("callers=%d/inflight=%d", bc.callers, bc.inFlight), func(b *testing.B) {
			callers := bc.callers
			stores := mustOpenGroup(b, 3, bc.inFlight)
			s := stores[0]
			ctx := context.Background()
			ws := catalog.Workspace{ID: "ws", Name: "acme", Settings: catalog.DefaultSettings()}
			if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: ws}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + callers - 1) / callers
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						name := fmt.Sprintf("acme-%d-%d", c, i)
						if _, err := s.Apply(ctx, &catalog.UpdateWorkspace{ID: "ws", Patch: catalog.WorkspacePatch{Name: &name}}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*callers)/b.Elapsed().Seconds(), "applies/s")
		})
	}
}

// Issue 23: a stop that cannot finish is forced. Raft is wedged here by
// an FSM goroutine that cannot deliver a batch's results (its lock held),
// so neither the snapshot on close nor Raft's shutdown can complete:
// Close returns ErrStopForced within its bound instead of waiting for
// ever, and releases the log store.
func TestCloseIsBoundedWhenRaftCannotStop(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{DataDir: dir, NodeID: "n1", BindAddr: "127.0.0.1:0", Bootstrap: true, Fast: true,
		CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, s)
	ctx := context.Background()
	if _, err := s.Apply(ctx, &catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws", Name: "a", Settings: catalog.DefaultSettings()}}); err != nil {
		t.Fatal(err)
	}
	// A batch "forwarded by this node" whose delivery blocks on the lock.
	s.fsm.mu.Lock()
	released := false
	release := func() {
		if !released {
			released = true
			s.fsm.mu.Unlock()
		}
	}
	defer release()
	s.fsm.waiters[7] = waiter{done: make(chan struct{})}
	data, err := gproto.Marshal(&raftpb.Batch{Origin: "n1", Seq: 7})
	if err != nil {
		t.Fatal(err)
	}
	s.raft.Apply(data, time.Second) // the FSM goroutine blocks in deliver
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	err = s.Close()
	took := time.Since(start)
	if !errors.Is(err, ErrStopForced) || took > 3*time.Second {
		t.Fatalf("Close of a wedged raft: %v after %v; want ErrStopForced within its 1s bound", err, took)
	}
	t.Logf("Close forced after %v: %v", took.Round(time.Millisecond), err)
	release()
	// The log store was released: the data dir opens again.
	s2 := mustOpenStore(t, dir)
	if ws := s2.Catalog().Workspaces["ws"]; ws == nil || ws.Name != "a" {
		t.Fatal("the workspace written before the forced stop is gone")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}
