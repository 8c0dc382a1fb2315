// Package systemtest runs trustd as real processes: built from
// ./cmd/trustd, started on loopback ports with their own data dirs, and
// killed with real signals.
package systemtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/clustertest"
)

const (
	adminToken = "adm_systemtest_token"
	clusterKey = "systemtest-cluster-key"
)

// proc is one trustd process.
type proc struct {
	id                      string
	api, gossip, peer, raft string
	cmd                     *exec.Cmd
	done                    chan struct{}
	log                     string
	killed                  bool
}

type procCluster struct {
	t     *testing.T
	bin   string
	dir   string
	mu    sync.Mutex
	procs []*proc
	ca    mtls.PEM // the cluster's own CA; made on the first start
}

// tlsArgs issues node id a certificate of the cluster CA and returns the
// flags that put its Raft and peer traffic on mutual TLS.
func (c *procCluster) tlsArgs(id string) []string {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.ca.Cert == nil {
		if c.ca, err = mtls.CreateCA("systemtest", time.Hour, time.Now()); err != nil {
			c.t.Fatal(err)
		}
	}
	p, err := mtls.CreateNodeCert(c.ca, mtls.NodeRequest{NodeID: id, Validity: time.Hour}, time.Now())
	if err != nil {
		c.t.Fatal(err)
	}
	ca, cert, key := filepath.Join(c.dir, "ca.pem"), filepath.Join(c.dir, id+".pem"), filepath.Join(c.dir, id+"-key.pem")
	for f, b := range map[string][]byte{ca: c.ca.Cert, cert: p.Cert, key: p.Key} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	return []string{"--tls-ca", ca, "--tls-cert", cert, "--tls-key", key}
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func buildTrustd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trustd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/trustd")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trustd: %v\n%s", err, out)
	}
	return bin
}

// start launches node id, joining join (gossip addresses) unless empty.
func (c *procCluster) start(id string, join []string) *proc {
	c.t.Helper()
	p := &proc{id: id, api: freeAddr(c.t), gossip: freeAddr(c.t), peer: freeAddr(c.t), raft: freeAddr(c.t),
		done: make(chan struct{}), log: filepath.Join(c.dir, id+".log")}
	data := filepath.Join(c.dir, id)
	args := []string{"--node-id", id, "--data-dir", data, "--http-addr", p.api, "--ops-addr", "",
		"--gossip-addr", p.gossip, "--peer-addr", p.peer, "--raft-addr", p.raft, "--cluster-name", "systemtest",
		"--reap-after", "2s", "--log-level", "warn"}
	args = append(args, c.tlsArgs(id)...)
	for _, j := range join {
		args = append(args, "--join", j)
	}
	logf, err := os.Create(p.log)
	if err != nil {
		c.t.Fatal(err)
	}
	p.cmd = exec.Command(c.bin, args...)
	p.cmd.Env = append(os.Environ(), "TRUSTD_ADMIN_TOKEN="+adminToken, "TRUSTD_CLUSTER_KEY="+clusterKey)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// A node dies with the test binary even when the test is killed (a
	// timeout, an interrupted run): no orphan keeps a core busy.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
		logf.Close()
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// kill sends SIGKILL and waits for the process to go.
func (c *procCluster) kill(p *proc) {
	c.t.Helper()
	c.mu.Lock()
	p.killed = true
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s did not exit after SIGKILL", p.id)
	}
}

func (c *procCluster) killAll() {
	for _, p := range c.procs {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
	if c.t.Failed() {
		for _, p := range c.procs {
			if b, err := os.ReadFile(p.log); err == nil {
				c.t.Logf("--- %s log (last 3000 bytes) ---\n%s", p.id, tail(b, 3000))
			}
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (c *procCluster) live() []*proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*proc
	for _, p := range c.procs {
		if !p.killed {
			out = append(out, p)
		}
	}
	return out
}

func (c *procCluster) byID(id string) *proc {
	for _, p := range c.procs {
		if p.id == id {
			return p
		}
	}
	return nil
}

var client = &nethttp.Client{Timeout: 5 * time.Second}

func do(method, url, bearer string, body []byte) (int, []byte, error) {
	req, err := nethttp.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func eventually(t *testing.T, within time.Duration, f func() error) {
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
		time.Sleep(50 * time.Millisecond)
	}
}

type clusterView struct {
	Leader string `json:"leader"`
	Nodes  []struct {
		NodeID         string  `json:"node_id"`
		State          string  `json:"state"`
		Health         string  `json:"health"`
		OwnershipShare float64 `json:"ownership_share"`
		RaftRole       string  `json:"raft_role"`
	} `json:"nodes"`
}

func status(p *proc) (clusterView, error) {
	var v clusterView
	st, b, err := do("GET", "http://"+p.api+"/admin/v1/cluster", adminToken, nil)
	if err != nil || st != 200 {
		return v, fmt.Errorf("%s: GET /admin/v1/cluster: %d %s %v", p.id, st, b, err)
	}
	return v, json.Unmarshal(b, &v)
}

// waitMembers waits until every live process reports exactly the live
// processes as ready, healthy, voting members owning shares within
// tolerance of an even split, and a leader.
func (c *procCluster) waitMembers(within time.Duration) clusterView {
	c.t.Helper()
	var last clusterView
	eventually(c.t, within, func() error {
		live := c.live()
		for _, p := range live {
			v, err := status(p)
			if err != nil {
				return err
			}
			ready := 0
			for _, n := range v.Nodes {
				if n.State != "ready" || n.Health != "ok" {
					continue
				}
				// Nodes join Raft as non-voters and vote once caught up; a
				// test that kills one needs the others counted in the quorum.
				if n.RaftRole != "leader" && n.RaftRole != "voter" {
					return fmt.Errorf("%s sees %s as raft %s", p.id, n.NodeID, n.RaftRole)
				}
				ready++
				if even := 1 / float64(len(live)); n.OwnershipShare < even*0.6 || n.OwnershipShare > even*1.4 {
					return fmt.Errorf("%s sees %s owning %.3f, want about %.3f", p.id, n.NodeID, n.OwnershipShare, even)
				}
			}
			if ready != len(live) || len(v.Nodes) != len(live) {
				return fmt.Errorf("%s sees %d ready of %d members, want %d", p.id, ready, len(v.Nodes), len(live))
			}
			if v.Leader == "" || c.byID(v.Leader) == nil || c.byID(v.Leader).killed {
				return fmt.Errorf("%s sees leader %q", p.id, v.Leader)
			}
			last = v
		}
		return nil
	})
	return last
}

func mustCreate(t *testing.T, p *proc, path, body string, out any) {
	t.Helper()
	eventually(t, 15*time.Second, func() error {
		st, b, err := do("POST", "http://"+p.api+path, adminToken, []byte(body))
		if err != nil || st != 201 {
			return fmt.Errorf("POST %s through %s: %d %s %v", path, p.id, st, b, err)
		}
		return json.Unmarshal(b, out)
	})
}

// TestThreeProcessesSurviveLeaderLossJoinsAndOwnerLoss builds trustd and
// runs a cluster of real processes through: a fourth node joining under
// rate-limit load (no request fails, shares rebalance), the Raft leader
// killed (a new one is elected, admin writes through another node
// succeed), and a token's owner killed (replays are refused through the
// others, the first caller's idempotent retry gets its outcome back).
func TestThreeProcessesSurviveLeaderLossJoinsAndOwnerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("systemtest builds trustd and runs real processes; skipped with -short")
	}
	c := &procCluster{t: t, bin: buildTrustd(t), dir: t.TempDir()}
	t.Cleanup(c.killAll)

	first := c.start("n1", nil)
	eventually(t, 20*time.Second, func() error { _, err := status(first); return err })
	c.start("n2", []string{first.gossip})
	c.start("n3", []string{first.gossip})
	c.waitMembers(30 * time.Second)

	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	mustCreate(t, first, "/admin/v1/workspaces", `{"name":"system"}`, &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		SiteID  string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	mustCreate(t, first, base+"/sites", `{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`, &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	mustCreate(t, first, base+"/rate-limit-policies", `{"name":"api","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":1000000,"refill_amount":1000000,"refill_interval_seconds":1},"mode":"enforce"}`, &pol)
	for _, p := range c.live() {
		eventually(t, 10*time.Second, func() error {
			if st, b, err := do("GET", "http://"+p.api+base+"/rate-limit-policies/"+pol.PolicyID, adminToken, nil); st != 200 {
				return fmt.Errorf("%s has no policy yet: %d %s %v", p.id, st, b, err)
			}
			return nil
		})
	}

	t.Run("a fourth node joins under load without a failed request", func(t *testing.T) {
		targets := c.live()
		var sent, failed, degraded atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					p := targets[(g+k)%len(targets)]
					body := fmt.Sprintf(`{"action":"read","subject_id":"user-%d"}`, (g*7919+k)%500)
					st, b, err := do("POST", "http://"+p.api+"/v1/rate-limit/check", site.Secret, []byte(body))
					sent.Add(1)
					var d struct {
						Allowed  bool `json:"allowed"`
						Degraded bool `json:"degraded"`
					}
					switch {
					case err != nil || st != 200 || json.Unmarshal(b, &d) != nil || !d.Allowed:
						failed.Add(1)
						t.Errorf("check through %s: %d %s %v", p.id, st, b, err)
					case d.Degraded:
						degraded.Add(1)
					}
				}
			}()
		}
		// Load runs for a moment before, during and after the join.
		time.Sleep(500 * time.Millisecond)
		c.start("n4", []string{first.gossip})
		v := c.waitMembers(30 * time.Second)
		time.Sleep(time.Second)
		close(stop)
		wg.Wait()
		t.Logf("%d checks during the join: %d failed, %d degraded; shares after: %+v", sent.Load(), failed.Load(), degraded.Load(), v.Nodes)
		if failed.Load() != 0 || degraded.Load() != 0 {
			t.Fatalf("%d failed and %d degraded checks of %d while a node joined", failed.Load(), degraded.Load(), sent.Load())
		}
	})

	t.Run("killing the raft leader elects another and admin writes go on", func(t *testing.T) {
		v, err := status(first)
		if err != nil {
			t.Fatal(err)
		}
		leader := c.byID(v.Leader)
		c.kill(leader)
		var next string
		eventually(t, 30*time.Second, func() error {
			for _, p := range c.live() {
				v, err := status(p)
				if err != nil {
					return err
				}
				if v.Leader == "" || v.Leader == leader.id {
					return fmt.Errorf("%s sees leader %q", p.id, v.Leader)
				}
				next = v.Leader
			}
			return nil
		})
		var via *proc
		for _, p := range c.live() {
			if p.id != next {
				via = p
			}
		}
		var after struct {
			WorkspaceID string `json:"workspace_id"`
		}
		mustCreate(t, via, "/admin/v1/workspaces", `{"name":"after the leader died"}`, &after)
		for _, p := range c.live() {
			eventually(t, 10*time.Second, func() error {
				if st, b, err := do("GET", "http://"+p.api+"/admin/v1/workspaces/"+after.WorkspaceID, adminToken, nil); st != 200 {
					return fmt.Errorf("%s cannot read the write: %d %s %v", p.id, st, b, err)
				}
				return nil
			})
		}
		t.Logf("killed leader %s; %s leads; a write through %s is visible on every live node", leader.id, next, via.id)
		c.waitMembers(30 * time.Second)
	})

	t.Run("killing a token's owner leaves its replays refused", func(t *testing.T) {
		live := c.live()
		ids := make([]cluster.Member, len(live))
		for i, p := range live {
			ids[i] = cluster.Member{ID: p.id}
		}
		ring := cluster.NewRing(1, ids, "")
		var tok string
		var owner *proc
		for k := 0; owner == nil || owner == live[0]; k++ {
			if k == 40 {
				t.Fatal("no token owned by a node other than the first in 40 mints")
			}
			var err error
			if tok, err = clustertest.MintToken("http://"+live[k%len(live)].api, site.SiteKey, "http://localhost:3000", "login"); err != nil {
				t.Fatal(err)
			}
			key, err := clustertest.TokenMarkerKey(tok)
			if err != nil {
				t.Fatal(err)
			}
			owner = c.byID(ring.Members[ring.Owner(cluster.Partition(key))].ID)
		}
		within := func() time.Time { return time.Now().Add(10 * time.Second) }
		api := func(p *proc) []string { return []string{"http://" + p.api} }
		if v, _, err := clustertest.SiteverifyAnswered(api(live[0]), site.Secret, tok, "first-caller", within()); err != nil || !v.Success {
			t.Fatalf("first siteverify through %s: %+v %v", live[0].id, v, err)
		}
		c.kill(owner)
		c.waitMembers(30 * time.Second)
		for _, p := range c.live() {
			for _, idem := range []string{"", "someone-else"} {
				if v, _, err := clustertest.SiteverifyAnswered(api(p), site.Secret, tok, idem, within()); err != nil || !v.Duplicate() {
					t.Fatalf("replay through %s (idempotency key %q) after owner %s died: %+v %v", p.id, idem, owner.id, v, err)
				}
			}
			if v, _, err := clustertest.SiteverifyAnswered(api(p), site.Secret, tok, "first-caller", within()); err != nil || !v.Success {
				t.Fatalf("the first caller's retry through %s after owner %s died: %+v %v", p.id, owner.id, v, err)
			}
		}
		t.Logf("token owned by %s, consumed through %s; after SIGKILL of the owner every replay through %d survivors is refused", owner.id, live[0].id, len(c.live()))
	})

	t.Run("a node stopped with SIGTERM leaves the cluster and exits 0", func(t *testing.T) {
		live := c.live()
		if len(live) < 2 {
			t.Skip("needs two live nodes")
		}
		p := live[len(live)-1]
		c.mu.Lock()
		p.killed = true
		c.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not exit after SIGTERM", p.id)
		}
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			b, _ := os.ReadFile(p.log)
			t.Fatalf("%s exited %d after a graceful leave:\n%s", p.id, code, tail(b, 2000))
		}
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), "snapshot on close") {
			t.Fatalf("%s logged a snapshot failure on a clean stop:\n%s", p.id, tail(b, 2000))
		}
	})
}
