package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

const (
	adminToken = "adm_faults_token"
	clusterKey = "faults-cluster-key-0123456789abcdef"
)

// node is one trustd process slot: its addresses and data dir stay the
// same across restarts.
type node struct {
	i                            int
	id, ns                       string
	api, ops, gossip, peer, raft string
	data, log, ca, cert, key     string
	mu                           sync.Mutex
	cmd                          *exec.Cmd
	done                         chan struct{}
	running, paused              bool
}

// procs is a cluster of trustd processes, in network namespaces when net
// is set, else on loopback.
type procs struct {
	t     *testing.T
	bin   string
	dir   string
	net   *netEnv
	nodes []*node
}

// buildTrustd builds ./cmd/trustd once per test binary.
var buildOnce struct {
	sync.Once
	bin string
	err error
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.bin != "" {
		_ = os.RemoveAll(filepath.Dir(buildOnce.bin))
	}
	os.Exit(code)
}

func buildTrustd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trustd-faults-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.bin = filepath.Join(dir, "trustd")
		cmd := exec.Command("go", "build", "-o", buildOnce.bin, "./cmd/trustd")
		cmd.Dir = "../../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build ./cmd/trustd: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
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

// newProcs lays out n nodes (addresses, data dirs, certificates of a
// fresh cluster CA) without starting them.
func newProcs(t *testing.T, bin string, env *netEnv, n int) *procs {
	t.Helper()
	c := &procs{t: t, bin: bin, dir: t.TempDir(), net: env}
	// Registered after TempDir's removal, so it runs before it: no node
	// writes into a data dir being removed, whatever failed.
	t.Cleanup(c.killAll)
	ca, err := mtls.CreateCA("faults", 2*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(c.dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		nd := &node{i: i, id: fmt.Sprintf("n%d", i+1), ca: caFile}
		req := mtls.NodeRequest{NodeID: nd.id, Validity: 2 * time.Hour}
		if env != nil {
			ip := env.ips[i]
			nd.ns = env.ns[i]
			nd.api, nd.ops, nd.gossip, nd.peer, nd.raft = ip+":8080", ip+":9090", ip+":7946", ip+":8090", ip+":8300"
			req.IPs = []net.IP{net.ParseIP(ip)}
		} else {
			nd.api, nd.ops, nd.gossip, nd.peer, nd.raft = freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
		}
		p, err := mtls.CreateNodeCert(ca, req, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		nd.cert, nd.key = filepath.Join(c.dir, nd.id+".pem"), filepath.Join(c.dir, nd.id+"-key.pem")
		for f, b := range map[string][]byte{nd.cert: p.Cert, nd.key: p.Key} {
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		nd.data, nd.log = filepath.Join(c.dir, nd.id), filepath.Join(c.dir, nd.id+".log")
		c.nodes = append(c.nodes, nd)
	}
	return c
}

// start launches node nd (again) with its data dir, joining join.
func (c *procs) start(nd *node, join []string) error {
	args := []string{"--node-id", nd.id, "--data-dir", nd.data, "--http-addr", nd.api, "--ops-addr", nd.ops,
		"--gossip-addr", nd.gossip, "--peer-addr", nd.peer, "--raft-addr", nd.raft, "--cluster-name", "faults",
		"--log-level", "info", "--tls-ca", nd.ca, "--tls-cert", nd.cert, "--tls-key", nd.key}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	logf, err := os.OpenFile(nd.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n=== %s start %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	var cmd *exec.Cmd
	if nd.ns != "" {
		// ip netns exec enters the namespace and execs trustd in place:
		// the pid is trustd's, so signals reach it.
		cmd = exec.Command("ip", append([]string{"netns", "exec", nd.ns, c.bin}, args...)...)
	} else {
		cmd = exec.Command(c.bin, args...)
	}
	cmd.Env = append(os.Environ(), "TRUSTD_ADMIN_TOKEN="+adminToken, "TRUSTD_CLUSTER_KEY="+clusterKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Nodes die with the test binary, even on a test timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	nd.mu.Lock()
	nd.cmd, nd.done, nd.running, nd.paused = cmd, done, true, false
	nd.mu.Unlock()
	return nil
}

func (nd *node) signal(s syscall.Signal) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil && nd.running {
		_ = nd.cmd.Process.Signal(s)
	}
}

// kill sends SIGKILL and waits (bounded) for the exit.
func (nd *node) kill() error {
	nd.mu.Lock()
	cmd, done, running := nd.cmd, nd.done, nd.running
	nd.running, nd.paused = false, false
	nd.mu.Unlock()
	if cmd == nil || !running {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit 10 s after SIGKILL", nd.id)
	}
}

func (nd *node) pause() {
	nd.signal(syscall.SIGSTOP)
	nd.mu.Lock()
	nd.paused = true
	nd.mu.Unlock()
}

func (nd *node) resume() {
	nd.signal(syscall.SIGCONT)
	nd.mu.Lock()
	nd.paused = false
	nd.mu.Unlock()
}

func (nd *node) isRunning() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.running
}

// stop sends SIGTERM (a graceful leave) and returns how long the exit
// took; past bound it kills the node and says so.
func (nd *node) stop(bound time.Duration) (time.Duration, bool) {
	nd.mu.Lock()
	cmd, done, running, paused := nd.cmd, nd.done, nd.running, nd.paused
	nd.mu.Unlock()
	if !running {
		return 0, true
	}
	if paused {
		nd.resume()
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		nd.mu.Lock()
		nd.running = false
		nd.mu.Unlock()
		return time.Since(start), true
	case <-time.After(bound):
		_ = nd.kill()
		return time.Since(start), false
	}
}

func (c *procs) killAll() {
	for _, nd := range c.nodes {
		nd.resume()
		_ = nd.kill()
	}
}

func (c *procs) tailLogs(n int) string {
	var b strings.Builder
	for _, nd := range c.nodes {
		data, _ := os.ReadFile(nd.log)
		if len(data) > n {
			data = data[len(data)-n:]
		}
		fmt.Fprintf(&b, "--- %s log (last %d bytes) ---\n%s\n", nd.id, n, data)
	}
	return b.String()
}

// joinOf lists the gossip addresses of every node but nd.
func (c *procs) joinOf(nd *node) []string {
	var out []string
	for _, o := range c.nodes {
		if o != nd {
			out = append(out, o.gossip)
		}
	}
	return out
}

// boot starts the nodes one after another: the first founds the
// cluster, each next joins once the previous one is ready.
func (c *procs) boot(within time.Duration) error {
	deadline := time.Now().Add(within)
	for i, nd := range c.nodes {
		var join []string
		if i > 0 {
			join = []string{c.nodes[0].gossip}
		}
		if err := c.start(nd, join); err != nil {
			return err
		}
		if err := waitUntil(deadline, func() error { return ready(nd) }); err != nil {
			return fmt.Errorf("%s not ready: %w", nd.id, err)
		}
	}
	return waitUntil(deadline, func() error { _, err := c.whole(); return err })
}

// ---- HTTP ----

var httpc = &nethttp.Client{Transport: &nethttp.Transport{MaxIdleConnsPerHost: 16, MaxConnsPerHost: 32,
	DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}}

// call sends one request bounded by timeout; status 0 with err when no
// answer came back.
func call(method, url, bearer string, body []byte, contentType string, timeout time.Duration) (int, []byte, error) {
	return callWith(method, url, bearer, body, contentType, timeout, nil)
}

func callWith(method, url, bearer string, body []byte, contentType string, timeout time.Duration, hdr map[string]string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, b, err
	}
	return resp.StatusCode, b, nil
}

func ready(nd *node) error {
	st, b, err := call("GET", "http://"+nd.ops+"/readyz", "", nil, "", time.Second)
	if err != nil || st != 200 {
		return fmt.Errorf("%s /readyz: %d %s %v", nd.id, st, bytes.TrimSpace(b), err)
	}
	return nil
}

type clusterView struct {
	Leader string `json:"leader"`
	Nodes  []struct {
		NodeID string `json:"node_id"`
		State  string `json:"state"`
		Health string `json:"health"`
	} `json:"nodes"`
}

func status(nd *node, timeout time.Duration) (clusterView, error) {
	var v clusterView
	st, b, err := call("GET", "http://"+nd.api+"/admin/v1/cluster", adminToken, nil, "", timeout)
	if err != nil || st != 200 {
		return v, fmt.Errorf("%s: GET /admin/v1/cluster: %d %s %v", nd.id, st, bytes.TrimSpace(b), err)
	}
	return v, json.Unmarshal(b, &v)
}

// whole checks that every node sees every node ready and healthy and one
// same leader; it returns that leader.
func (c *procs) whole() (string, error) {
	leader := ""
	for _, nd := range c.nodes {
		v, err := status(nd, time.Second)
		if err != nil {
			return "", err
		}
		ok := 0
		var seen []string
		for _, n := range v.Nodes {
			seen = append(seen, n.NodeID+":"+n.State+"/"+n.Health)
			if n.State == "ready" && n.Health == "ok" {
				ok++
			}
		}
		if ok != len(c.nodes) || len(v.Nodes) != len(c.nodes) {
			return "", fmt.Errorf("%s sees %v", nd.id, seen)
		}
		if v.Leader == "" || (leader != "" && v.Leader != leader) {
			return "", fmt.Errorf("%s sees leader %q, another saw %q", nd.id, v.Leader, leader)
		}
		leader = v.Leader
	}
	return leader, nil
}

func (c *procs) byID(id string) *node {
	for _, nd := range c.nodes {
		if nd.id == id {
			return nd
		}
	}
	return nil
}

// leader asks the nodes in turn for the Raft leader.
func (c *procs) leader() *node {
	for _, nd := range c.nodes {
		if v, err := status(nd, time.Second); err == nil && v.Leader != "" {
			return c.byID(v.Leader)
		}
	}
	return nil
}

// waitUntil polls f every 100 ms until it returns nil or the deadline
// passes; it returns f's last error then.
func waitUntil(deadline time.Time, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
