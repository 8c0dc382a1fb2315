package upgrade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

// node is one member of the cluster across its restarts: same id,
// addresses and data directory, whichever binary runs it.
type node struct {
	id, api, ops, gossip, peer, raft, data string
	tls                                    []string
	cmd                                    *exec.Cmd
	done                                   chan struct{}
	logs                                   []string
}

func (n *node) url() string { return "http://" + n.api }

type procCluster struct {
	t     *testing.T
	dir   string
	ca    mtls.PEM
	nodes []*node
	runs  int
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// add makes node id: its addresses, data directory and a certificate of
// the cluster's CA, so Raft and peer traffic run on mutual TLS as in a
// real deployment.
func (c *procCluster) add(id string) *node {
	t := c.t
	t.Helper()
	var err error
	if c.ca.Cert == nil {
		if c.ca, err = mtls.CreateCA("upgrade", time.Hour, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.dir, "ca.pem"), c.ca.Cert, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := mtls.CreateNodeCert(c.ca, mtls.NodeRequest{NodeID: id, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(c.dir, id+".pem"), filepath.Join(c.dir, id+"-key.pem")
	for f, b := range map[string][]byte{cert: p.Cert, key: p.Key} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n := &node{id: id, api: freeAddr(t), ops: freeAddr(t), gossip: freeAddr(t), peer: freeAddr(t), raft: freeAddr(t),
		data: filepath.Join(c.dir, id), tls: []string{"--tls-ca", filepath.Join(c.dir, "ca.pem"), "--tls-cert", cert, "--tls-key", key}}
	c.nodes = append(c.nodes, n)
	return n
}

// start runs bin (build names it in the log file) as n, joining join (gossip addresses) unless empty.
func (c *procCluster) start(n *node, bin, build string, join []string) {
	t := c.t
	t.Helper()
	c.runs++
	args := []string{"--node-id", n.id, "--data-dir", n.data, "--http-addr", n.api, "--ops-addr", n.ops,
		"--gossip-addr", n.gossip, "--peer-addr", n.peer, "--raft-addr", n.raft, "--cluster-name", "upgrade",
		"--log-level", "warn"}
	args = append(args, n.tls...)
	for _, j := range join {
		args = append(args, "--join", j)
	}
	logPath := filepath.Join(c.dir, fmt.Sprintf("%s.%d.%s.log", n.id, c.runs, build))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n.logs = append(n.logs, logPath)
	n.cmd = exec.Command(bin, args...)
	n.cmd.Env = append(os.Environ(), "TRUSTD_ADMIN_TOKEN="+adminToken, "TRUSTD_CLUSTER_KEY="+clusterKey)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	// A node dies with the test binary even when the test is killed.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	n.done = done
	cmd := n.cmd
	go func() {
		defer close(done)
		_ = cmd.Wait()
		logf.Close()
	}()
}

// stop is the graceful stop of an upgrade: SIGTERM (the node drains,
// hands its keys off and leaves), then a clean exit.
func (c *procCluster) stop(n *node) {
	c.t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(60 * time.Second):
		c.t.Fatalf("%s did not exit within 60 s of SIGTERM", n.id)
	}
	b, _ := os.ReadFile(n.logs[len(n.logs)-1])
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		c.t.Fatalf("%s exited %d after SIGTERM:\n%s", n.id, code, tail(b, 3000))
	}
	if len(b) > 0 {
		c.t.Logf("%s's log after SIGTERM:\n%s", n.id, tail(b, 2000))
	}
}

func (c *procCluster) killAll() {
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue
		}
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
		}
	}
	if c.t.Failed() {
		for _, n := range c.nodes {
			for _, f := range n.logs {
				if b, err := os.ReadFile(f); err == nil {
					c.t.Logf("--- %s (last 3000 bytes) ---\n%s", filepath.Base(f), tail(b, 3000))
				}
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

// othersGossip is every other node's gossip address: the --join an
// operator's configuration lists.
func (c *procCluster) othersGossip(n *node) []string {
	var out []string
	for _, o := range c.nodes {
		if o != n {
			out = append(out, o.gossip)
		}
	}
	return out
}

var client = &nethttp.Client{Timeout: 5 * time.Second}

func do(method, u, bearer string, hdr map[string]string, body []byte) (int, nethttp.Header, []byte, error) {
	req, err := nethttp.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
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
		time.Sleep(100 * time.Millisecond)
	}
}

// waitReady waits for n's /readyz, as an operator's script or a
// Kubernetes readiness probe does.
func (c *procCluster) waitReady(n *node, within time.Duration) {
	c.t.Helper()
	eventually(c.t, within, func() error {
		select {
		case <-n.done:
			b, _ := os.ReadFile(n.logs[len(n.logs)-1])
			c.t.Fatalf("%s exited while starting:\n%s", n.id, tail(b, 3000))
		default:
		}
		st, _, b, err := do("GET", "http://"+n.ops+"/readyz", "", nil, nil)
		if err != nil || st != 200 {
			return fmt.Errorf("%s /readyz: %d %s %v", n.id, st, b, err)
		}
		return nil
	})
}

type clusterView struct {
	Leader string `json:"leader"`
	Nodes  []struct {
		NodeID   string `json:"node_id"`
		State    string `json:"state"`
		Health   string `json:"health"`
		RaftRole string `json:"raft_role"`
	} `json:"nodes"`
}

func status(n *node) (clusterView, error) {
	var v clusterView
	st, _, b, err := do("GET", n.url()+"/admin/v1/cluster", adminToken, nil, nil)
	if err != nil || st != 200 {
		return v, fmt.Errorf("%s: GET /admin/v1/cluster: %d %s %v", n.id, st, b, err)
	}
	return v, json.Unmarshal(b, &v)
}

// waitMembers waits until every node sees every node ready, healthy and
// voting in Raft, and a leader: the node is back in the ring.
func (c *procCluster) waitMembers(within time.Duration) {
	c.t.Helper()
	eventually(c.t, within, func() error {
		for _, n := range c.nodes {
			v, err := status(n)
			if err != nil {
				return err
			}
			if len(v.Nodes) != len(c.nodes) || v.Leader == "" {
				return fmt.Errorf("%s sees %d members and leader %q", n.id, len(v.Nodes), v.Leader)
			}
			for _, m := range v.Nodes {
				if m.State != "ready" || m.Health != "ok" || (m.RaftRole != "leader" && m.RaftRole != "voter") {
					return fmt.Errorf("%s sees %s %s, %s, raft %s", n.id, m.NodeID, m.State, m.Health, m.RaftRole)
				}
			}
		}
		return nil
	})
}

// upgradeOrder is followers first, the Raft leader last.
func (c *procCluster) upgradeOrder() []*node {
	v, err := status(c.nodes[0])
	if err != nil {
		c.t.Fatal(err)
	}
	var order []*node
	var leader *node
	for _, n := range c.nodes {
		if n.id == v.Leader {
			leader = n
		} else {
			order = append(order, n)
		}
	}
	if leader == nil {
		c.t.Fatalf("no leader among the nodes (%q)", v.Leader)
	}
	return append(order, leader)
}

func (c *procCluster) mustCreate(path, body string, out any) {
	c.t.Helper()
	eventually(c.t, 15*time.Second, func() error {
		st, _, b, err := do("POST", c.nodes[0].url()+path, adminToken, nil, []byte(body))
		if err != nil || st != 201 {
			return fmt.Errorf("POST %s: %d %s %v", path, st, b, err)
		}
		return json.Unmarshal(b, out)
	})
}

// waitEverywhere waits until every node reads every path.
func (c *procCluster) waitEverywhere(paths []string, within time.Duration) {
	c.t.Helper()
	for _, n := range c.nodes {
		for _, p := range paths {
			eventually(c.t, within, func() error {
				if st, _, b, err := do("GET", n.url()+p, adminToken, nil, nil); err != nil || st != 200 {
					return fmt.Errorf("%s GET %s: %d %s %v", n.id, p, st, b, err)
				}
				return nil
			})
		}
	}
}
