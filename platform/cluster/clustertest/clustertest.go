// Package clustertest starts real trustd nodes in one process on loopback
// ports, for tests of the cluster: Start(t, 3) returns three nodes that
// have joined one another, share one Raft group and one ring.
package clustertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/clustertest/deadline"
	"github.com/trustd/trustd/platform/cluster/mtls"
)

// AdminToken is accepted by every node of a test cluster.
const AdminToken = "adm_clustertest_token"

// Cluster is a running test cluster.
type Cluster struct {
	t     testing.TB
	mu    sync.Mutex
	Nodes []*node.Node
	down  map[int]bool
	// CA is the cluster's own certificate authority: every node gets a
	// certificate from it, so Raft and peer forwarding run over mutual TLS
	// as in production.
	CA mtls.PEM
	// mutate, when set (StartWith), adjusts each node's configuration.
	mutate func(*node.Config)
	// started: Start has returned; Add then waits for the new node's vote.
	started   bool
	closeOnce sync.Once
	// name is this cluster's own gossip label: nodes keep joining failed
	// members' addresses (platform/cluster/reconnect.go), and a loopback port a
	// killed node of another test's cluster held may be reused.
	name string
}

// AskTimeout bounds the asks of every node the helper starts: longer than
// production's 500ms, because race-instrumented nodes share two cores with
// their tests, and exactness tests must not see degraded answers.
const AskTimeout = 3 * time.Second

// Start starts n nodes: the first founds the cluster, the others join it.
// It returns once every node's ring holds all n. Nodes are closed when the
// test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartWith(t, n, nil)
}

// StartWith is Start with mutate applied to every node's configuration
// (this one's and those Add starts later).
//
// The test gets a deadline (deadline.Default, 5 minutes, or
// TRUSTD_TEST_DEADLINE): past it every goroutine's stack goes to the
// test log, the test fails and its nodes are closed, so a hung cluster
// test reports where it hangs instead of hanging the suite.
func StartWith(t testing.TB, n int, mutate func(*node.Config)) *Cluster {
	t.Helper()
	ca, err := mtls.CreateCA("clustertest", time.Hour, time.Now())
	if err != nil {
		t.Fatalf("cluster CA: %v", err)
	}
	c := &Cluster{t: t, down: map[int]bool{}, CA: ca, mutate: mutate, name: "clustertest-" + rand.Text()[:10]}
	deadline.Arm(t, 0, c.closeAll) // before closeAll's cleanup: it runs last, still armed while they run
	t.Cleanup(c.closeAll)
	for i := 0; i < n; i++ {
		c.Add()
	}
	c.WaitRing(n)
	c.WaitVoters()
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	return c
}

// Add starts one more node that joins the cluster (or founds it when it
// is the first) and returns its index.
func (c *Cluster) Add() int {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.Nodes)
	var join []string
	for j, n := range c.Nodes {
		if !c.down[j] {
			join = append(join, n.Cluster().GossipAddr())
		}
	}
	c.mu.Unlock()
	tlsCfg, err := NodeTLS(c.CA, fmt.Sprintf("node-%d", i))
	if err != nil {
		c.t.Fatalf("node-%d certificate: %v", i, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := node.Config{
		TLS:     tlsCfg,
		DataDir: c.t.TempDir(), NodeID: fmt.Sprintf("node-%d", i),
		HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0",
		Join: join, ClusterName: c.name, ClusterKey: "clustertest-key", AdminToken: AdminToken,
		FastRaft: true, ReapAfter: time.Minute,
		// Race-instrumented nodes sharing two cores with their tests can
		// take longer than production's 500ms bound to answer an ask;
		// exactness tests must not turn that into degraded answers.
		AskTimeout: AskTimeout,
	}
	if c.mutate != nil {
		c.mutate(&cfg)
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		c.t.Fatalf("start node-%d: %v", i, err)
	}
	c.mu.Lock()
	c.Nodes = append(c.Nodes, n)
	started := c.started
	c.mu.Unlock()
	if started {
		c.WaitVoters()
	}
	return i
}

// NodeTLS issues a node certificate from ca and returns the node's TLS
// configuration.
func NodeTLS(ca mtls.PEM, id string) (*mtls.Config, error) {
	p, err := mtls.CreateNodeCert(ca, mtls.NodeRequest{NodeID: id, Validity: time.Hour}, time.Now())
	if err != nil {
		return nil, err
	}
	return mtls.New(ca.Cert, p)
}

// Live returns the indexes of the nodes not killed or left.
func (c *Cluster) Live() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i := range c.Nodes {
		if !c.down[i] {
			out = append(out, i)
		}
	}
	return out
}

// Kill closes node i abruptly: no leave, no hand-off. The others detect
// the failure through gossip.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	n := c.markDown(i)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = n.Close(ctx)
}

// markDown takes node i out of Live and returns it.
func (c *Cluster) markDown(i int) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[i] = true
	return c.Nodes[i]
}

// Leave makes node i leave gracefully, then closes it.
func (c *Cluster) Leave(i int) {
	c.t.Helper()
	n := c.markDown(i)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Leave(ctx); err != nil {
		c.t.Fatalf("node-%d leave: %v", i, err)
	}
	// A node that left stops cleanly: trustd exits 0 on this.
	if err := n.Close(ctx); err != nil {
		c.t.Errorf("node-%d close after leaving: %v", i, err)
	}
}

func (c *Cluster) closeAll() {
	c.closeOnce.Do(func() {
		for _, i := range c.Live() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Nodes[i].Close(ctx)
			cancel()
		}
	})
}

// Owner returns the index of the node owning key in node from's ring.
func (c *Cluster) Owner(from int, key string) int {
	r := c.Nodes[from].Router().Ring()
	o := r.Owner(cluster.Partition(key))
	if o < 0 {
		return -1
	}
	return c.index(r.Members[o].ID)
}

// Replica returns the index of key's replica in node from's ring.
func (c *Cluster) Replica(from int, key string) int {
	r := c.Nodes[from].Router().Ring()
	o := r.Replica(cluster.Partition(key))
	if o < 0 {
		return -1
	}
	return c.index(r.Members[o].ID)
}

func (c *Cluster) index(id string) int {
	for i, n := range c.Nodes {
		if n.Cluster().NodeID() == id {
			return i
		}
	}
	return -1
}

// Leader returns the index of the live node that leads Raft, or -1.
func (c *Cluster) Leader() int {
	for _, i := range c.Live() {
		if c.Nodes[i].Store().IsLeader() {
			return i
		}
	}
	return -1
}

// WaitLeader waits for a live Raft leader.
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	var l int
	Eventually(c.t, 10*time.Second, func() error {
		if l = c.Leader(); l < 0 {
			return fmt.Errorf("no leader among %v", c.Live())
		}
		return nil
	})
	return l
}

// WaitVoters waits until the leader's Raft configuration holds every
// live node, the first cluster.MaxVoters of them as voters. Members join
// Raft as non-voters and are promoted once caught up (platform/cluster/voters.go),
// so a test that kills a node right after the ring formed would otherwise
// find a quorum that does not count the newest members yet.
func (c *Cluster) WaitVoters() {
	c.t.Helper()
	Eventually(c.t, 20*time.Second, func() error {
		l := c.Leader()
		if l < 0 {
			return fmt.Errorf("no leader among %v", c.Live())
		}
		f := c.Nodes[l].Store().Raft().GetConfiguration()
		if err := f.Error(); err != nil {
			return err
		}
		role := map[string]raft.ServerSuffrage{}
		for _, s := range f.Configuration().Servers {
			role[string(s.ID)] = s.Suffrage
		}
		live := c.Live()
		voters := 0
		for _, i := range live {
			id := c.Nodes[i].Cluster().NodeID()
			s, ok := role[id]
			if !ok {
				return fmt.Errorf("%s is not in the raft configuration %v", id, role)
			}
			if s == raft.Voter {
				voters++
			}
		}
		if voters < min(len(live), cluster.MaxVoters) {
			return fmt.Errorf("%d of %d live nodes vote: %v", voters, len(live), role)
		}
		return nil
	})
}

// Name is the cluster's gossip label.
func (c *Cluster) Name() string { return c.name }

// WaitRing waits until every live node's ring holds exactly the live
// nodes, want of them, and every node holds the partitions it owns.
func (c *Cluster) WaitRing(want int) {
	c.t.Helper()
	Eventually(c.t, 15*time.Second, func() error {
		live := c.Live()
		if len(live) != want {
			return fmt.Errorf("%d live nodes, want %d", len(live), want)
		}
		var ids []string
		for _, i := range live {
			ids = append(ids, c.Nodes[i].Cluster().NodeID())
		}
		for _, i := range live {
			var got []string
			for _, m := range c.Nodes[i].Router().Ring().Members {
				got = append(got, m.ID)
			}
			if !slices.Equal(got, ids) {
				return fmt.Errorf("node-%d ring %v, want %v", i, got, ids)
			}
			if !c.Nodes[i].Router().Ring().HeldAll() {
				return fmt.Errorf("node-%d does not hold all its partitions yet", i)
			}
		}
		return nil
	})
}

// Eventually polls f until it returns nil or the deadline passes.
func Eventually(t testing.TB, within time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", within, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Do sends an admin-authenticated request to node i's API and returns the
// status and body.
func (c *Cluster) Do(i int, method, path string, body []byte) (int, []byte, error) {
	return c.DoAs(i, method, path, AdminToken, body)
}

// DoAs sends a request with bearer as its Authorization to node i's API.
func (c *Cluster) DoAs(i int, method, path, bearer string, body []byte) (int, []byte, error) {
	return c.DoWith(i, method, path, bearer, body, nil)
}

// DoWith is DoAs with extra request headers.
func (c *Cluster) DoWith(i int, method, path, bearer string, body []byte, headers map[string]string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, c.Nodes[i].APIURL()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	cl := &nethttp.Client{Timeout: 15 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// MustCreate POSTs an admin create through node i until it is answered
// 201 (an election under load answers 503 for a moment) and returns the
// answer. Every attempt carries one Idempotency-Key, so a 503 whose
// create committed does not create twice.
func (c *Cluster) MustCreate(i int, path, body string) []byte {
	c.t.Helper()
	var out []byte
	key := map[string]string{"Idempotency-Key": "clustertest-" + rand.Text()}
	Eventually(c.t, 10*time.Second, func() error {
		st, b, err := c.DoWith(i, "POST", path, AdminToken, []byte(body), key)
		if err != nil || st != 201 {
			return fmt.Errorf("POST %s through node-%d: %d %s %v", path, i, st, b, err)
		}
		out = b
		return nil
	})
	return out
}
