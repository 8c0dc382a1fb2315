package catalog

import (
	"errors"
	"testing"
)

// applyAt applies one membership command at a Raft index, as the FSM does.
func applyAt(t *testing.T, c *Catalog, index uint64, cmd Command) (*Catalog, any, error) {
	t.Helper()
	tx := BeginMembership(c, index)
	v, err := cmd.Apply(tx)
	return tx.Commit(index), v, err
}

func beat(id string, epoch uint64, state string) *NodeHeartbeat {
	return &NodeHeartbeat{ID: id, Epoch: epoch, State: state, PeerAddr: id + ":8090"}
}

func ringIDs(rs RingState) []string {
	var out []string
	for _, m := range rs.Members {
		out = append(out, m.ID)
	}
	return out
}

func TestMembershipEpochsFencesAndRing(t *testing.T) {
	c := Empty()
	var v any
	var err error
	idx := uint64(0)
	step := func(cmd Command) {
		t.Helper()
		idx++
		c, v, err = applyAt(t, c, idx, cmd)
	}

	step(beat("a", 0, NodeReady)) // a first renewal asks for an epoch and starts joining
	if err != nil || v.(uint64) != 1 || c.Nodes["a"].State != NodeJoining {
		t.Fatalf("first renewal: epoch=%v err=%v state=%s; want epoch 1, joining", v, err, c.Nodes["a"].State)
	}
	if len(c.Ring.Members) != 0 {
		t.Fatalf("a joining node is in the ring: %v", ringIDs(c.Ring))
	}
	step(beat("a", 1, NodeReady))
	if err != nil || c.Ring.Index != idx || len(c.Ring.Members) != 1 {
		t.Fatalf("ready renewal: err=%v ring=%+v", err, c.Ring)
	}
	ringA := c.Ring
	step(beat("b", 0, NodeJoining))
	step(beat("b", 1, NodeReady))
	if got := ringIDs(c.Ring); len(got) != 2 || c.PrevRing.Index != ringA.Index {
		t.Fatalf("ring after b ready: %v, previous %+v", got, c.PrevRing)
	}
	ringAB := c.Ring.Index
	step(beat("a", 1, NodeReady)) // a plain renewal moves nothing
	if c.Ring.Index != ringAB || c.Nodes["a"].Beat != idx {
		t.Fatalf("a renewal changed the ring (%d → %d) or did not record its beat (%d)", ringAB, c.Ring.Index, c.Nodes["a"].Beat)
	}

	step(&FenceNode{ID: "b", Epoch: 2}) // not b's epoch: nothing
	if v.(bool) || c.Nodes["b"].Fenced {
		t.Fatal("a fence naming a stale epoch took effect")
	}
	step(&FenceNode{ID: "b", Epoch: 1})
	if !v.(bool) || ringIDs(c.Ring)[0] != "a" || len(c.Ring.Members) != 1 {
		t.Fatalf("fence of b: done=%v ring=%v", v, ringIDs(c.Ring))
	}
	step(beat("b", 1, NodeReady)) // b, back from a pause, cannot renew its old epoch
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("renewal of a fenced epoch: err=%v, want ErrFenced", err)
	}
	step(&NodeHeartbeat{ID: "b", Epoch: 1, Rejoin: true, State: NodeReady})
	if err != nil || v.(uint64) != 2 || c.Nodes["b"].State != NodeJoining || c.Nodes["b"].Fenced {
		t.Fatalf("rejoin: epoch=%v err=%v record=%+v; want epoch 2, joining, unfenced", v, err, c.Nodes["b"])
	}
	step(beat("b", 2, NodeReady))
	if len(c.Ring.Members) != 2 || c.Ring.Members[1].Epoch != 2 {
		t.Fatalf("b back under epoch 2: ring %+v", c.Ring.Members)
	}

	step(beat("b", 2, NodeDraining))
	step(beat("b", 2, NodeReady)) // a draining node never turns ready again under its epoch
	if c.Nodes["b"].State != NodeDraining || len(c.Ring.Members) != 1 {
		t.Fatalf("draining b: state %s, ring %v", c.Nodes["b"].State, ringIDs(c.Ring))
	}
	step(&RemoveNode{ID: "b", Epoch: 2})
	if c.Nodes["b"] != nil {
		t.Fatal("removed record still there")
	}
}

func TestMembershipTransactionsKeepTheIndexes(t *testing.T) {
	c := Empty()
	tx := Begin(c)
	if _, err := (&CreateWorkspace{Workspace: Workspace{ID: "ws_1", Name: "one"}}).Apply(tx); err != nil {
		t.Fatal(err)
	}
	c = tx.Commit(1)
	next, _, err := applyAt(t, c, 2, beat("a", 0, NodeJoining))
	if err != nil {
		t.Fatal(err)
	}
	if next.siteSecrets != c.siteSecrets || next.Workspaces["ws_1"] == nil || next.Index != 2 {
		t.Fatal("a membership transaction rebuilt the indexes or lost a table")
	}
	if c.Nodes["a"] != nil {
		t.Fatal("a membership transaction wrote into the previous version")
	}
}

func TestHeartbeatRefusesBadInput(t *testing.T) {
	for _, hb := range []*NodeHeartbeat{{ID: "", State: NodeReady}, {ID: "a", State: "leader"}} {
		if _, _, err := applyAt(t, Empty(), 1, hb); err == nil {
			t.Fatalf("heartbeat %+v accepted", hb)
		}
	}
}
