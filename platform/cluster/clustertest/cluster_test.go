package clustertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster"
)

// consume asks for a first use of id through node via until it gets a
// decided answer: "unavailable" (an owner that lapsed or is still waiting
// for its hand-off, on a loaded machine) burns nothing and is retried for
// a bound, as a client would.
func consume(t *testing.T, c *Cluster, via int, id string) (bool, error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		op := &actors.Consume{ID: id, Expires: time.Now().Add(time.Minute).UnixNano()}
		err := c.Nodes[via].Router().Ask("mk/"+id, op)
		if !errors.Is(err, cluster.ErrUnavailable) || time.Now().After(deadline) {
			return op.First, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAnyNodeServesAndConfigWrittenOnOneIsVisibleOnAll(t *testing.T) {
	c := Start(t, 3)
	leader := c.WaitLeader()
	follower := (leader + 1) % 3
	body := c.MustCreate(follower, "/admin/v1/workspaces", `{"name":"written on a follower"}`)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(body, &ws); err != nil || ws.WorkspaceID == "" {
		t.Fatalf("answer %s: %v", body, err)
	}
	// A write answered 201 on a follower is already applied there.
	if st, _, _ := c.Do(follower, "GET", "/admin/v1/workspaces/"+ws.WorkspaceID, nil); st != 200 {
		t.Fatalf("the follower that wrote cannot read its write: %d", st)
	}
	for _, i := range c.Live() {
		Eventually(t, 5*time.Second, func() error {
			if st, _, err := c.Do(i, "GET", "/admin/v1/workspaces/"+ws.WorkspaceID, nil); st != 200 {
				return fmt.Errorf("node-%d: %d %v", i, st, err)
			}
			return nil
		})
	}
	// Every node answers per-key asks, whichever node owns the key.
	for i := 0; i < 3; i++ {
		for k := 0; k < 20; k++ {
			if _, err := consume(t, c, i, fmt.Sprintf("any-%d-%d", i, k)); err != nil {
				t.Fatalf("ask through node-%d: %v", i, err)
			}
		}
	}
}

func TestClusterStatusShowsEveryNode(t *testing.T) {
	c := Start(t, 3)
	leader := c.WaitLeader()
	var st struct {
		Leader string `json:"leader"`
		Nodes  []struct {
			NodeID         string  `json:"node_id"`
			RaftRole       string  `json:"raft_role"`
			OwnershipShare float64 `json:"ownership_share"`
			Health         string  `json:"health"`
			State          string  `json:"state"`
		} `json:"nodes"`
	}
	Eventually(t, 5*time.Second, func() error {
		code, body, err := c.Do(2, "GET", "/admin/v1/cluster", nil)
		if err != nil || code != 200 {
			return fmt.Errorf("%d %s %v", code, body, err)
		}
		if err := json.Unmarshal(body, &st); err != nil {
			return err
		}
		if len(st.Nodes) != 3 {
			return fmt.Errorf("%d nodes", len(st.Nodes))
		}
		voters := 0
		for _, n := range st.Nodes {
			if n.RaftRole == "voter" || n.RaftRole == "leader" {
				voters++
			}
		}
		if voters != 3 {
			return fmt.Errorf("%d voters", voters)
		}
		return nil
	})
	if want := c.Nodes[leader].Cluster().NodeID(); st.Leader != want {
		t.Fatalf("leader %q, want %q", st.Leader, want)
	}
	var share float64
	for _, n := range st.Nodes {
		if n.Health != "ok" || n.State != "ready" {
			t.Errorf("%s: health %s state %s", n.NodeID, n.Health, n.State)
		}
		share += n.OwnershipShare
	}
	if share < 0.999 || share > 1.001 {
		t.Fatalf("ownership shares add up to %v", share)
	}
}

func TestMarkerConsumedThroughOneNodeIsRefusedThroughTheOthers(t *testing.T) {
	c := Start(t, 3)
	for k := 0; k < 30; k++ {
		id := fmt.Sprintf("tok-%d", k)
		via := k % 3
		first, err := consume(t, c, via, id)
		if err != nil || !first {
			t.Fatalf("%s through node-%d: first=%v err=%v", id, via, first, err)
		}
		for i := 0; i < 3; i++ {
			if first, err := consume(t, c, i, id); err != nil || first {
				t.Fatalf("replay of %s through node-%d: first=%v err=%v", id, i, first, err)
			}
		}
	}
}

func TestParallelConsumesAcrossThreeNodesYieldExactlyOneSuccess(t *testing.T) {
	c := Start(t, 3)
	for round := 0; round < 5; round++ {
		id := fmt.Sprintf("contended-%d", round)
		var firsts, fails atomic.Int32
		var wg sync.WaitGroup
		for g := 0; g < 200; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := &actors.Consume{ID: id, Expires: time.Now().Add(time.Minute).UnixNano()}
				if err := c.Nodes[g%3].Router().Ask("mk/"+id, op); err != nil {
					fails.Add(1)
					return
				}
				if op.First {
					firsts.Add(1)
				}
			}()
		}
		wg.Wait()
		if firsts.Load() != 1 || fails.Load() != 0 {
			t.Fatalf("round %d: %d first uses and %d failures of 200, want exactly 1 and 0", round, firsts.Load(), fails.Load())
		}
	}
}

// markersOwnedBy consumes markers until n of them are owned by node owner,
// through node via, and returns their ids.
func markersOwnedBy(t *testing.T, c *Cluster, owner, via, n int) []string {
	t.Helper()
	var ids []string
	for k := 0; len(ids) < n; k++ {
		id := fmt.Sprintf("owned-%d-%d", owner, k)
		if c.Owner(via, "mk/"+id) != owner {
			continue
		}
		if first, err := consume(t, c, via, id); err != nil || !first {
			t.Fatalf("consume %s: first=%v err=%v", id, first, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestReplaysAreRefusedAfterTheOwnerIsKilled(t *testing.T) {
	c := Start(t, 3)
	ids := markersOwnedBy(t, c, 0, 1, 40)
	c.Kill(0)
	c.WaitRing(2)
	for _, id := range ids {
		for _, i := range []int{1, 2} {
			if first, err := consume(t, c, i, id); err != nil || first {
				t.Fatalf("replay of %s through node-%d after its owner died: first=%v err=%v", id, i, first, err)
			}
		}
	}
}

func TestReplaysAreRefusedAfterJoinAndGracefulLeave(t *testing.T) {
	c := Start(t, 3)
	var ids []string
	for k := 0; k < 60; k++ {
		id := fmt.Sprintf("moving-%d", k)
		if first, err := consume(t, c, k%3, id); err != nil || !first {
			t.Fatalf("consume %s: %v %v", id, first, err)
		}
		ids = append(ids, id)
	}
	refused := func(stage string) {
		t.Helper()
		for _, id := range ids {
			for _, i := range c.Live() {
				if first, err := consume(t, c, i, id); err != nil || first {
					t.Fatalf("%s: replay of %s through node-%d: first=%v err=%v", stage, id, i, first, err)
				}
			}
		}
	}
	c.Add()
	c.WaitRing(4)
	refused("after a join")
	c.Leave(1)
	c.WaitRing(3)
	refused("after node-1 left")
	// The leaver is gone from Raft too.
	Eventually(t, 5*time.Second, func() error {
		f := c.Nodes[c.WaitLeader()].Store().Raft().GetConfiguration()
		if err := f.Error(); err != nil {
			return err
		}
		for _, s := range f.Configuration().Servers {
			if s.ID == "node-1" {
				return errors.New("node-1 is still a raft server")
			}
		}
		return nil
	})
}

func TestKillingTheLeaderElectsANewOneAndWritesResume(t *testing.T) {
	c := Start(t, 3)
	leader := c.WaitLeader()
	var created []string
	for k := 0; k < 5; k++ {
		body := c.MustCreate((leader+1+k%2)%3, "/admin/v1/workspaces", fmt.Sprintf(`{"name":"before-%d"}`, k))
		var ws struct {
			WorkspaceID string `json:"workspace_id"`
		}
		_ = json.Unmarshal(body, &ws)
		created = append(created, ws.WorkspaceID)
	}
	c.Kill(leader)
	next := c.WaitLeader()
	if next == leader {
		t.Fatal("the killed node is still leader")
	}
	var via int
	for _, i := range c.Live() {
		if i != next {
			via = i
		}
	}
	Eventually(t, 10*time.Second, func() error {
		st, body, err := c.Do(via, "POST", "/admin/v1/workspaces", []byte(`{"name":"after"}`))
		if err != nil || st != 201 {
			return fmt.Errorf("write after: %d %s %v", st, body, err)
		}
		return nil
	})
	for _, i := range c.Live() {
		for _, id := range created {
			Eventually(t, 5*time.Second, func() error {
				if st, _, err := c.Do(i, "GET", "/admin/v1/workspaces/"+id, nil); st != 200 {
					return fmt.Errorf("committed workspace %s missing on node-%d: %d %v", id, i, st, err)
				}
				return nil
			})
		}
	}
}

func TestAnUnreachableOwnerIsUnavailable(t *testing.T) {
	c := Start(t, 3)
	var id string
	for k := 0; ; k++ {
		id = fmt.Sprintf("orphan-%d", k)
		if c.Owner(1, "mk/"+id) == 0 {
			break
		}
	}
	// Close node-0 and ask through node-1 before gossip notices: the ask
	// must fail as unavailable within its bound, not hang or succeed.
	c.Kill(0)
	start := time.Now()
	_, err := consume(t, c, 1, id)
	if c.Nodes[1].Router().Ring().Epoch > 0 && err == nil {
		// Gossip may already have moved the partition; then it succeeds
		// on the successor, which is just as correct.
		return
	}
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > AskTimeout+time.Second {
		t.Fatalf("unavailable after %v, want within the ask bound", d)
	}
}

func TestDevOnAJoiningNodeDoesNotSeedASecondWorkspace(t *testing.T) {
	c := Start(t, 2)
	code, body, err := c.Do(1, "GET", "/admin/v1/workspaces", nil)
	if err != nil || code != 200 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if c.Nodes[1].Dev() != nil {
		t.Fatal("a joining node seeded dev credentials")
	}
}
