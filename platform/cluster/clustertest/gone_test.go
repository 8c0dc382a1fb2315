package clustertest

import (
	"bufio"
	"fmt"
	"io"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// dials reads trustd_peer_dials_total from node i's ops listener.
func (c *Cluster) dials(t *testing.T, i int) float64 {
	t.Helper()
	resp, err := nethttp.Get("http://" + c.Nodes[i].OpsAddr() + "/metrics")
	if err != nil {
		t.Fatalf("node-%d metrics: %v", i, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "trustd_peer_dials_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	t.Fatalf("node-%d exports no trustd_peer_dials_total", i)
	return 0
}

// Issue 23: after a member that owned partitions left, every node kept
// dialling its peer address in a tight loop (1,800-2,950 connections per
// 3 s, for 15+ minutes; one failed call started the pipelined client's
// redial loop). Here the remaining nodes are polled for the cluster's
// status and metrics (fanned out to every member) throughout the leave,
// and serve asks for every partition and those polls for 3 s after it:
// their peer transports dial a handful of times at most.
func TestAMemberThatLeftIsNotDialledInALoop(t *testing.T) {
	c := StartWith(t, 3, func(cfg *node.Config) { cfg.OpsAddr = "127.0.0.1:0" })
	c.WaitLeader()
	bucket := ratelimit.BucketConfig{Capacity: 1 << 20, RefillAmount: 1, RefillInterval: 1 << 62}
	ask := func(i, k int) error {
		key := fmt.Sprintf("key-%d", k)
		return c.Nodes[i].Router().Ask(key, &actors.Reserve{Key: key, Bucket: bucket, Cost: 1})
	}
	for k := range 64 { // every node has talked to node-2
		for _, i := range []int{0, 1} {
			if err := ask(i, k); err != nil {
				t.Fatalf("ask through node-%d before the leave: %v", i, err)
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, i := range []int{0, 1} {
		wg.Add(1)
		go func() { // the console's polling, through the leave and after it
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				_, _, _ = c.Do(i, "GET", "/admin/v1/cluster", nil)
				_, _, _ = c.Do(i, "GET", "/admin/v1/cluster/metrics", nil)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	leaveStart := time.Now()
	c.Leave(2)
	c.WaitRing(2)
	t.Logf("node-2 left in %v while polled", time.Since(leaveStart).Round(time.Millisecond))
	before := c.dials(t, 0) + c.dials(t, 1)
	end := time.Now().Add(3 * time.Second)
	for k := 0; time.Now().Before(end); k++ {
		for _, i := range []int{0, 1} {
			if err := ask(i, k); err != nil {
				t.Fatalf("ask through node-%d after node-2 left: %v", i, err)
			}
		}
	}
	d := c.dials(t, 0) + c.dials(t, 1) - before
	if d > 5 {
		t.Fatalf("node-0 and node-1 dialled %v times in the 3 s after node-2 left, want a handful at most", d)
	}
	t.Logf("node-0 and node-1 dialled %v times in the 3 s after node-2 left (%v before)", d, before)
}
