package client_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/cluster/clustertest"
	"github.com/trustd/trustd/traffic/client"
)

// routedCluster is a real 3-node cluster (platform/cluster/clustertest) with a
// workspace, a site and one enforce policy per subject.
type routedCluster struct {
	c      *clustertest.Cluster
	secret string
}

func mustStartRoutedCluster(t *testing.T, capacity int) *routedCluster {
	t.Helper()
	c := clustertest.StartWith(t, 3, func(cfg *node.Config) { cfg.OpsAddr = "127.0.0.1:0" })
	t.Cleanup(nethttp.DefaultClient.CloseIdleConnections)
	create := func(path, body string, out any) {
		t.Helper()
		if err := json.Unmarshal(c.MustCreate(0, path, body), out); err != nil {
			t.Fatal(err)
		}
	}
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	create("/admin/v1/workspaces", `{"name":"routing"}`, &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		Secret string `json:"secret"`
	}
	create(base+"/sites", `{"name":"shop","hostnames":["shop.example"]}`, &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	create(base+"/rate-limit-policies", fmt.Sprintf(`{"name":"login","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":%d,"refill_amount":1,"refill_interval_seconds":31536000},"mode":"enforce"}`, capacity), &pol)
	for _, i := range c.Live() {
		clustertest.Eventually(t, 10*time.Second, func() error {
			if st, b, _ := c.Do(i, "GET", base+"/rate-limit-policies/"+pol.PolicyID, nil); st != 200 {
				return fmt.Errorf("node-%d has no policy yet: %d %s", i, st, b)
			}
			return nil
		})
	}
	return &routedCluster{c: c, secret: site.Secret}
}

func (rc *routedCluster) mustClient(t *testing.T, nodes ...int) *client.Client {
	t.Helper()
	var bases []string
	for _, i := range nodes {
		bases = append(bases, rc.c.Nodes[i].APIURL())
	}
	cl, err := client.New(client.Config{Nodes: bases, Secret: rc.secret, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// forwardedAsks is the sum over the live nodes of the asks they sent to
// other nodes (trustd_peer_frame_asks_total on each node's ops listener).
func (rc *routedCluster) forwardedAsks(t *testing.T) float64 {
	t.Helper()
	total := 0.0
	for _, i := range rc.c.Live() {
		resp, err := nethttp.Get("http://" + rc.c.Nodes[i].OpsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "trustd_peer_frame_asks_total "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				total, found = total+f, true
			}
		}
		resp.Body.Close()
		if !found {
			t.Fatalf("node-%d exports no trustd_peer_frame_asks_total", i)
		}
	}
	return total
}

// After one check per subject, nearly every check goes to its owner: the
// nodes forward fewer than 5 % of them.
func TestAfterWarmUpChecksGoToTheirOwner(t *testing.T) {
	rc := mustStartRoutedCluster(t, 1_000_000)
	cl := rc.mustClient(t, 0) // knows one node: the ring names the others
	const subjects = 200
	check := func(s int) {
		t.Helper()
		d, err := cl.Check(client.Request{Action: "login", SubjectID: "user-" + strconv.Itoa(s)})
		if err != nil || !d.Allowed {
			t.Fatalf("check of user-%d: %+v %v", s, d, err)
		}
	}
	before := rc.forwardedAsks(t)
	for s := range subjects { // warm-up: learn every subject's partition, fetch the ring
		check(s)
	}
	// Until the ring is in, checks enter node 0, which owns about a third
	// of the subjects: the metric sees the others forwarded.
	if warm := rc.forwardedAsks(t) - before; warm < 0.3*subjects {
		t.Fatalf("warm-up through one node forwarded %.0f asks for %d checks: the metric does not count forwarding", warm, subjects)
	}
	clustertest.Eventually(t, 10*time.Second, func() error {
		if cl.Epoch() == 0 {
			return fmt.Errorf("no ring fetched yet")
		}
		return nil
	})
	before, stats0 := rc.forwardedAsks(t), cl.Stats()
	const rounds = 5
	for range rounds {
		for s := range subjects {
			check(s)
		}
	}
	forwarded, stats := rc.forwardedAsks(t)-before, cl.Stats()
	checks := float64(subjects * rounds)
	t.Logf("%d checks after warm-up: %.0f forwarded asks; client: %d routed, %d retried, %d ring fetches",
		subjects*rounds, forwarded, stats.Routed-stats0.Routed, stats.Retried, stats.RingFetches)
	if routed := float64(stats.Routed - stats0.Routed); routed < 0.95*checks {
		t.Errorf("the client sent %.0f of %.0f checks to their owner", routed, checks)
	}
	if forwarded > 0.05*checks {
		t.Errorf("the nodes forwarded %.0f asks for %.0f checks sent to their owners", forwarded, checks)
	}
}

// Checks of one subject spread over routed and unrouted clients admit
// exactly the policy's capacity.
func TestRoutedChecksAdmitExactlyTheCapacity(t *testing.T) {
	const capacity = 100
	rc := mustStartRoutedCluster(t, capacity)
	clients := []*client.Client{rc.mustClient(t, 0), rc.mustClient(t, 1), rc.mustClient(t, 2)}
	var mu sync.Mutex
	allowed, refused := 0, 0
	var wg sync.WaitGroup
	for g := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clients[g%len(clients)]
			for range 10 {
				d, err := cl.Check(client.Request{Action: "login", SubjectID: "alice"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					allowed++
				} else {
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var routed uint64
	for _, cl := range clients {
		routed += cl.Stats().Routed
	}
	t.Logf("allowed %d, refused %d, %d checks routed to the owner", allowed, refused, routed)
	if allowed != capacity || refused != 300-capacity {
		t.Fatalf("allowed %d refused %d, want exactly %d allowed of 300", allowed, refused, capacity)
	}
	if routed == 0 {
		t.Fatal("no check was routed: the test did not exercise routing")
	}
}

// When a node leaves, the client keeps answering every check: checks it
// sends to the gone node fall back to another, and it learns the new ring.
func TestTheClientKeepsWorkingWhenANodeLeaves(t *testing.T) {
	rc := mustStartRoutedCluster(t, 1_000_000)
	cl := rc.mustClient(t, 0, 1, 2)
	const subjects = 150
	checkAll := func() {
		t.Helper()
		for s := range subjects {
			d, err := cl.Check(client.Request{Action: "login", SubjectID: "user-" + strconv.Itoa(s)})
			if err != nil || !d.Allowed {
				t.Fatalf("check of user-%d: %+v %v", s, d, err)
			}
		}
	}
	checkAll()
	checkAll()
	epoch := cl.Epoch()
	if epoch == 0 {
		t.Fatal("no ring after two rounds")
	}
	gone := 2
	rc.c.Leave(gone)
	rc.c.WaitRing(2)
	checkAll() // the gone node owned about a third of the subjects
	clustertest.Eventually(t, 10*time.Second, func() error {
		checkAll()
		if cl.Epoch() <= epoch {
			return fmt.Errorf("the client still holds ring %d", cl.Epoch())
		}
		return nil
	})
	st0 := cl.Stats()
	checkAll()
	st := cl.Stats()
	t.Logf("after the leave: ring %d → %d; last round %d of %d routed, %d retries in all",
		epoch, cl.Epoch(), st.Routed-st0.Routed, subjects, st.Retried)
	if st.Retried != st0.Retried {
		t.Errorf("%d checks retried once the new ring was in", st.Retried-st0.Retried)
	}
	if st.Routed-st0.Routed < subjects*95/100 {
		t.Errorf("only %d of %d checks routed under the new ring", st.Routed-st0.Routed, subjects)
	}
}
