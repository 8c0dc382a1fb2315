package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Issue 23: a leave whose step cannot finish (here a hand-off that never
// completes) is cut short by its bound and reported forced; the node
// still leaves gossip, gracefully, and nobody joins it again.
func TestALeaveThatCannotFinishIsForcedWithinItsBound(t *testing.T) {
	nodes := mustStartGossip(t, 3)
	all := []string{"node-0", "node-1", "node-2"}
	waitTables(t, nodes, all, 10*time.Second)
	leaver := nodes[2].c
	leaver.handoffs.Add(1) // a hand-off that never ends
	defer leaver.handoffs.Done()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := leaver.Leave(ctx)
	took := time.Since(start)
	if !errors.Is(err, ErrLeaveForced) || took > 4*time.Second {
		t.Fatalf("leave with a stuck hand-off: %v after %v; want ErrLeaveForced within 1 s + the 2 s gossip leave", err, took)
	}
	t.Logf("leave forced after %v: %v", took.Round(time.Millisecond), err)
	waitTables(t, nodes[:2], all[:2], 5*time.Second)
	// Left gracefully: not a reconnect target, so it stays out.
	time.Sleep(2500 * time.Millisecond)
	waitTables(t, nodes[:2], all[:2], 0)
	for _, n := range nodes[:2] {
		n.c.mu.Lock()
		g, ok := n.c.gone["node-2"]
		n.c.mu.Unlock()
		if !ok || !g.graceful {
			t.Fatalf("%s does not remember node-2 as left gracefully: %+v", n.c.NodeID(), g)
		}
	}
}
