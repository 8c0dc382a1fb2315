package clustertest

import (
	"fmt"
	"github.com/trustd/trustd/platform/cluster"
	"slices"
	"testing"
	"time"
)

// dropped polls until no node in watchers has id in its ring and returns
// how long that took from start.
func dropped(c *Cluster, watchers []int, id string, start time.Time, within time.Duration) (time.Duration, error) {
	deadline := start.Add(within)
	for {
		holding := false
		for _, i := range watchers {
			for _, m := range c.Nodes[i].Router().Ring().Members {
				holding = holding || m.ID == id
			}
		}
		if !holding {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s still in a ring %v after it went", id, within)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFailureDetectionAndLeavePropagation measures how long the other
// nodes take to drop a crashed node from their rings (the quorum fences it
// once its liveness right has lapsed: never before the TTL, about
// TTL+margin after) and a node that leaves gracefully (at once: it
// drains through the quorum).
func TestFailureDetectionAndLeavePropagation(t *testing.T) {
	c := Start(t, 4)
	start := time.Now()
	c.Kill(3)
	crash, err := dropped(c, []int{0, 1, 2}, "node-3", start, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.WaitRing(3)

	watchers := slices.DeleteFunc(c.Live(), func(i int) bool { return i == 2 })
	start = time.Now()
	var leave time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		leave, err = dropped(c, watchers, "node-2", start, 5*time.Second)
	}()
	c.Leave(2)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crashed node dropped from every ring after %v; leaving node after %v", crash.Round(time.Millisecond), leave.Round(time.Millisecond))
	if crash < cluster.DefaultLivenessTTL {
		t.Errorf("a crashed node left the rings after %v, before its liveness right (%v) could have lapsed", crash, cluster.DefaultLivenessTTL)
	}
	if crash > 2*cluster.DefaultLivenessTTL {
		t.Errorf("failure detection took %v, want about the liveness TTL plus margin (~%v)", crash, cluster.DefaultLivenessTTL+cluster.DefaultLivenessTTL/10)
	}
	if leave > time.Second {
		t.Errorf("leave took %v to spread, want well under a second", leave)
	}
}
