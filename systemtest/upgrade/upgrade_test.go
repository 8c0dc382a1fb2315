package upgrade

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trustd/trustd/cluster/clustertest"
	"github.com/trustd/trustd/cluster/mtls"
	"github.com/trustd/trustd/pow"
)

const (
	adminToken = "adm_upgrade_test_token"
	clusterKey = "upgrade-test-cluster-key"
)

// TestRollingUpgradeFromThePreviousRelease is the version-skew policy of
// docs/operations.md held by a test: a cluster of the previous release
// (deploy/upgrade/PREVIOUS) is upgraded to this tree one node at a time,
// followers first and the Raft leader last, under a steady load of
// rate-limit checks, siteverify of freshly minted tokens and admin writes
// through every node in rotation; the cluster serves with old and new
// builds side by side all along. Then one follower is rolled back to the
// previous release on the data directory the current build wrote (its
// log entries, with their format, and the snapshot taken at its stop),
// under the same load: the previous release reads what this build writes.
//
// The load is a client behind a load balancer: a node is taken out of
// rotation before it is stopped (as a balancer does when its /readyz
// fails or it is deregistered) and put back once its /readyz answers and
// every node sees it ready in the ring. A request answered 503
// service-unavailable (the contract's "back off and retry": while the
// leaving leader hands Raft over, or a token's owner moves) is retried,
// after its Retry-After or a bounded backoff, through the next node in
// rotation, for up to 10 s, as real clients do; an admin write is retried
// with its Idempotency-Key and a siteverify with its idempotency_key, so
// a retry never does the work twice. Failed is anything else: a
// transport error, any other status, a 503 still there after 10 s, a
// check not allowed, a fresh token's siteverify not a success (a widget's
// mint that fails counts too, except one that starts over once with a new
// challenge when a redeem answered 503 had used its challenge after all,
// as the widget does), a write without its record. The test
// asserts 0 failed requests, reports how many were answered after a
// retry, and checks that what was written before and during the upgrade
// is on every node after it.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two trustd binaries and runs real processes; skipped with -short")
	}
	root := repoRoot(t)
	prev := previousRelease(t, root)
	started := time.Now()
	oldBin := buildPrevious(t, root, prev)
	newBin := buildCurrent(t, root)
	t.Logf("built the previous release (%.12s) and this tree in %v", prev, time.Since(started).Round(time.Second))

	c := &procCluster{t: t, dir: t.TempDir()}
	t.Cleanup(c.killAll)
	ids := []string{"n1", "n2", "n3"}
	for i, id := range ids {
		n := c.add(id)
		var join []string
		if i > 0 {
			join = []string{c.nodes[0].gossip}
		}
		c.start(n, oldBin, "previous", join)
		c.waitReady(n, 60*time.Second)
	}
	c.waitMembers(60 * time.Second)

	// State written before the upgrade.
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	c.mustCreate("/admin/v1/workspaces", `{"name":"before the upgrade"}`, &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		SiteID  string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	c.mustCreate(base+"/sites", `{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`, &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	c.mustCreate(base+"/rate-limit-policies", `{"name":"api","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":1000000,"refill_amount":1000000,"refill_interval_seconds":1},"mode":"enforce"}`, &pol)
	before := []string{"/admin/v1/workspaces/" + ws.WorkspaceID, base + "/sites/" + site.SiteID, base + "/rate-limit-policies/" + pol.PolicyID}
	c.waitEverywhere(before, 15*time.Second)
	// A token used before the upgrade stays used after it.
	used, err := clustertest.MintToken(c.nodes[0].url(), site.SiteKey, "http://localhost:3000", "login")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := clustertest.SiteverifyAnswered([]string{c.nodes[1].url()}, site.Secret, used, "", time.Now().Add(10*time.Second)); err != nil || !v.Success {
		t.Fatalf("siteverify before the upgrade: %+v %v", v, err)
	}

	l := newLoad(t, c, site.Secret, site.SiteKey)
	for _, n := range c.nodes {
		l.rotation.add(n)
	}
	l.run()
	time.Sleep(time.Second) // the old cluster under load first

	// replace runs n on bin through the steps an operator follows.
	replace := func(n *node, bin, build, what string) {
		step := time.Now()
		l.rotation.remove(n)
		time.Sleep(300 * time.Millisecond) // the balancer's deregistration delay: requests in flight to n end
		c.stop(n)
		stopped := time.Since(step)
		c.start(n, bin, build, c.othersGossip(n))
		c.waitReady(n, 60*time.Second)
		c.waitMembers(60 * time.Second)
		l.rotation.add(n)
		t.Logf("%s %s in %v (stop %v); load so far: %s", n.id, what, time.Since(step).Round(100*time.Millisecond),
			stopped.Round(100*time.Millisecond), l.summary())
		time.Sleep(2 * time.Second) // mixed builds (or the new cluster) serve under load
	}
	order := c.upgradeOrder()
	for _, n := range order {
		replace(n, newBin, "current", "upgraded")
	}
	// Rolling back: a follower goes back to the previous release on the
	// data directory this build wrote (its log entries and the snapshot
	// taken at its stop), and serves beside the current build.
	back := c.upgradeOrder()[0]
	replace(back, oldBin, "previous", "rolled back to the previous release")
	l.finish()
	t.Logf("rolling upgrade of 3 nodes and rollback of one under load: %s", l.summary())
	if f := l.failed.Load(); f != 0 {
		t.Fatalf("%d failed requests during the rolling upgrade and rollback (first: %s)", f, strings.Join(l.firstFailures(), "; "))
	}
	if l.sent[kindCheck].Load() == 0 || l.sent[kindVerify].Load() == 0 || l.sent[kindWrite].Load() == 0 {
		t.Fatalf("the load did not exercise every kind of request: %s", l.summary())
	}

	// What was written before and during the upgrade is on every node.
	paths := slices.Clone(before)
	for _, id := range l.written() {
		paths = append(paths, "/admin/v1/workspaces/"+id)
	}
	c.waitEverywhere(paths, 15*time.Second)
	for _, n := range c.nodes {
		v, _, err := clustertest.SiteverifyAnswered([]string{n.url()}, site.Secret, used, "", time.Now().Add(10*time.Second))
		if err != nil || !v.Duplicate() {
			t.Fatalf("the token used before the upgrade, through %s: %+v %v; want timeout-or-duplicate", n.id, v, err)
		}
	}
	// Neither build refused the other's entries, snapshots or asks.
	for _, n := range c.nodes {
		for _, f := range n.logs {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte("newer format")) || bytes.Contains(b, []byte("undecodable")) {
				t.Fatalf("%s logged a refusal during the upgrade (%s):\n%s", n.id, filepath.Base(f), tail(b, 3000))
			}
		}
	}
	t.Logf("%d records written before and during the upgrade read back through the 3 nodes (%s on the previous release again); total %v",
		len(paths), back.id, time.Since(started).Round(time.Second))
}

// repoRoot is the root of the git work tree the test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").CombinedOutput()
	if err != nil {
		t.Fatalf("the rolling-upgrade test builds the previous release from git and needs a git clone of trustd: git rev-parse --show-toplevel: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// previousRelease resolves the commit deploy/upgrade/PREVIOUS names, or
// fails the test saying what to do: the policy is not held if the test
// cannot run, so a clone without that commit fails rather than skips.
func previousRelease(t *testing.T, root string) string {
	t.Helper()
	commit, err := resolvePrevious(root)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

func resolvePrevious(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "upgrade", "PREVIOUS"))
	if err != nil {
		return "", err
	}
	var ref string
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			ref = line
			break
		}
	}
	if ref == "" {
		return "", errors.New("deploy/upgrade/PREVIOUS names no commit")
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
	if err != nil {
		shallow, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output()
		return "", fmt.Errorf("the previous release %s (deploy/upgrade/PREVIOUS) is not in this clone's history (shallow clone: %s): "+
			"the rolling-upgrade test builds it from git; fetch the full history (git fetch --unshallow) and run it again",
			ref, strings.TrimSpace(string(shallow)))
	}
	return strings.TrimSpace(string(out)), nil
}

// buildPrevious extracts commit's tree (git archive: no worktree, nothing
// written to the repository) and builds its trustd, once per run. The
// tree goes to a directory named for the commit under the user's cache
// directory, reused by later runs, so the Go build cache (which keys on a
// package's directory) serves the previous release's packages again.
func buildPrevious(t *testing.T, root, commit string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	src := filepath.Join(cache, "trustd-systemtest", "previous-"+commit)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(src), "extract-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		archive := exec.Command("bash", "-c", `set -o pipefail; git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "archive", root, commit, tmp)
		if out, err := archive.CombinedOutput(); err != nil {
			t.Fatalf("git archive %s: %v\n%s", commit, err, out)
		}
		// Whole or not at all: a run killed mid-extraction leaves no
		// half tree under the final name.
		if err := os.Rename(tmp, src); err != nil && !errors.Is(err, fs.ErrExist) {
			if _, serr := os.Stat(filepath.Join(src, "go.mod")); serr != nil {
				t.Fatalf("keep the previous release's tree: %v", err)
			}
		}
	}
	return goBuild(t, src)
}

func buildCurrent(t *testing.T, root string) string { t.Helper(); return goBuild(t, root) }

func goBuild(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trustd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/trustd")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trustd in %s: %v\n%s", dir, err, out)
	}
	return bin
}

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

// rotation is the load balancer's set of nodes.
type rotation struct {
	mu    sync.Mutex
	nodes []*node
}

func (r *rotation) add(n *node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = append(r.nodes, n)
}

func (r *rotation) remove(n *node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = slices.DeleteFunc(r.nodes, func(o *node) bool { return o == n })
}

func (r *rotation) pick(rng *rand.Rand) *node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[rng.IntN(len(r.nodes))]
}

const (
	kindCheck = iota
	kindVerify
	kindWrite
	kinds
)

var kindNames = [kinds]string{"rate-limit checks", "siteverify of fresh tokens", "admin writes"}

// load is the steady traffic of the upgrade: bounded in time by the
// test (finish), each loop pacing itself.
type load struct {
	t               *testing.T
	c               *procCluster
	secret, siteKey string
	rotation        rotation

	sent    [kinds]atomic.Int64
	retried atomic.Int64 // requests answered after a retried 503 service-unavailable
	degr    atomic.Int64 // checks answered by the policy's degraded behaviour
	// restarted counts mints that started over with a new challenge: a
	// redeem answered 503 had used the challenge after all (mint).
	restarted atomic.Int64
	failed    atomic.Int64

	mu       sync.Mutex
	failures []string
	ids      []string // workspaces written during the upgrade

	stop chan struct{}
	wg   sync.WaitGroup
}

func newLoad(t *testing.T, c *procCluster, secret, siteKey string) *load {
	return &load{t: t, c: c, secret: secret, siteKey: siteKey, stop: make(chan struct{})}
}

func (l *load) fail(format string, args ...any) {
	l.failed.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

func (l *load) firstFailures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failures)
}

func (l *load) written() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

func (l *load) summary() string {
	var parts []string
	for k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", l.sent[k].Load(), kindNames[k]))
	}
	return fmt.Sprintf("%s; %d failed, %d answered after a retried 503 service-unavailable, %d mints started over after a 503'd redeem had used the challenge, %d degraded checks",
		strings.Join(parts, ", "), l.failed.Load(), l.retried.Load(), l.restarted.Load(), l.degr.Load())
}

// call sends one request through a node in rotation. A 503 whose code
// is service-unavailable ("back off and retry", the contract says; it
// used nothing: a write is retried with its Idempotency-Key, a
// siteverify with its idempotency_key) is retried through the next node
// in rotation after its Retry-After, or a backoff of 50 ms doubling to
// 500 ms when it has none, for up to 10 s; any other answer is returned.
func (l *load) call(rng *rand.Rand, method, path, bearer string, hdr map[string]string, body []byte) (*node, int, []byte, error) {
	n, st, b, _, err := l.callRetried(rng, method, path, bearer, hdr, body)
	return n, st, b, err
}

// callRetried is call that also says whether a 503 was retried.
func (l *load) callRetried(rng *rand.Rand, method, path, bearer string, hdr map[string]string, body []byte) (*node, int, []byte, bool, error) {
	deadline := time.Now().Add(10 * time.Second)
	backoff := 50 * time.Millisecond
	retried := false
	for {
		n := l.rotation.pick(rng)
		st, h, b, err := do(method, n.url()+path, bearer, hdr, body)
		if err == nil && st == 503 && unavailable(b) && time.Now().Before(deadline) {
			wait := backoff
			if secs, e := strconv.Atoi(h.Get("Retry-After")); e == nil {
				wait = min(time.Duration(max(secs, 0))*time.Second, time.Second)
			}
			backoff = min(2*backoff, 500*time.Millisecond)
			retried = true
			time.Sleep(wait)
			continue
		}
		if retried && err == nil && st != 503 {
			l.retried.Add(1)
		}
		return n, st, b, retried, err
	}
}

// unavailable reports the service-unavailable code in either error shape
// (siteverify's {"success":false,"error":...} and ApiError's).
func unavailable(body []byte) bool {
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error == "service-unavailable"
}

func (l *load) run() {
	loop := func(every time.Duration, seed uint64, f func(rng *rand.Rand, k int)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			tick := time.NewTicker(every)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				f(rng, k)
			}
		}()
	}
	for g := range 3 {
		loop(10*time.Millisecond, uint64(g), l.check)
	}
	loop(50*time.Millisecond, 10, l.verify)
	loop(100*time.Millisecond, 20, l.write)
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) check(rng *rand.Rand, k int) {
	l.sent[kindCheck].Add(1)
	body := fmt.Sprintf(`{"action":"read","subject_id":"user-%d"}`, rng.IntN(500))
	n, st, b, err := l.call(rng, "POST", "/v1/rate-limit/check", l.secret, nil, []byte(body))
	var d struct {
		Allowed  bool `json:"allowed"`
		Degraded bool `json:"degraded"`
	}
	switch {
	case err != nil || st != 200 || json.Unmarshal(b, &d) != nil || !d.Allowed:
		l.fail("check through %s: %d %s %v", n.id, st, b, err)
	case d.Degraded:
		l.degr.Add(1)
	}
}

// verify mints a token as the widget does (challenge, proof of work,
// redeem) through nodes in rotation, and siteverifies it through another,
// as the customer's backend does.
func (l *load) verify(rng *rand.Rand, k int) {
	l.sent[kindVerify].Add(1)
	tok, err := l.mint(rng)
	if err != nil {
		l.fail("%v", err)
		return
	}
	form := url.Values{"secret": {l.secret}, "response": {tok}, "idempotency_key": {fmt.Sprintf("upgrade-%d-%d", k, rng.Uint64())}}
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	n, st, b, err := l.call(rng, "POST", "/v1/siteverify", "", hdr, []byte(form.Encode()))
	var v clustertest.Verdict
	if err != nil || st != 200 || json.Unmarshal(b, &v) != nil || !v.Success {
		l.fail("siteverify through %s: %d %s %v", n.id, st, b, err)
	}
}

// mint runs the widget's protocol. A redeem answered 503 may still have
// used the challenge (its owner ran the op after the forwarding node
// stopped waiting: cluster/DESIGN.md, asks abandoned at their bound), so
// the retry is told challenge-used; the widget then starts over with a
// new challenge, and so does mint, once. challenge-used without a 503
// before it is a failure.
func (l *load) mint(rng *rand.Rand) (string, error) {
	hdr := map[string]string{"Origin": "http://localhost:3000"}
	for attempt := 0; ; attempt++ {
		body, _ := json.Marshal(map[string]any{"sitekey": l.siteKey, "action": "login"})
		n, st, b, err := l.call(rng, "POST", "/v1/challenge", "", hdr, body)
		var ch struct {
			Challenge string `json:"challenge"`
			Pow       struct {
				Salt       string `json:"salt"`
				Iterations int    `json:"iterations"`
				Difficulty int    `json:"difficulty"`
			} `json:"pow"`
		}
		if err != nil || st != 200 || json.Unmarshal(b, &ch) != nil {
			return "", fmt.Errorf("challenge through %s: %d %s %v", n.id, st, b, err)
		}
		salt, err := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
		if err != nil {
			return "", fmt.Errorf("challenge through %s: salt %q: %v", n.id, ch.Pow.Salt, err)
		}
		nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
		if !ok {
			return "", fmt.Errorf("challenge through %s: no proof-of-work solution", n.id)
		}
		body, _ = json.Marshal(map[string]any{"challenge": ch.Challenge, "nonce": nonce,
			"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}})
		n, st, b, retried, err := l.callRetried(rng, "POST", "/v1/challenge/redeem", "", hdr, body)
		var rd struct {
			Success bool   `json:"success"`
			Token   string `json:"token"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(b, &rd)
		if err == nil && st == 409 && rd.Error == "challenge-used" && retried && attempt == 0 {
			l.restarted.Add(1)
			continue
		}
		if err != nil || st != 200 || !rd.Success || rd.Token == "" {
			return "", fmt.Errorf("redeem through %s: %d %s %v", n.id, st, b, err)
		}
		return rd.Token, nil
	}
}

func (l *load) write(rng *rand.Rand, k int) {
	l.sent[kindWrite].Add(1)
	hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("upgrade-write-%d", k)}
	n, st, b, err := l.call(rng, "POST", "/admin/v1/workspaces", adminToken, hdr, []byte(fmt.Sprintf(`{"name":"during the upgrade %d"}`, k)))
	var w struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err != nil || st != 201 || json.Unmarshal(b, &w) != nil || w.WorkspaceID == "" {
		l.fail("admin write through %s: %d %s %v", n.id, st, b, err)
		return
	}
	l.mu.Lock()
	l.ids = append(l.ids, w.WorkspaceID)
	l.mu.Unlock()
}
