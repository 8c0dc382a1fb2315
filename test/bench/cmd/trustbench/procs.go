package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/lib/proc"
	"github.com/trustd/trustd/test/bench/baseline/server"
)

// The servers --suite and --cluster start: the baseline (this binary run
// with --serve-baseline, so it is its own process as trustd is) and trustd
// nodes. Each child is killed with trustbench (Pdeathsig) and stopped with
// SIGTERM at the end; its output goes to a log file in the run's
// temporary directory, named when something fails.

// child is a server process trustbench started.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startChild(name, bin string, args, env []string, logPath string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM and waits up to 20 s (a trustd node leaves its
// cluster first), then kills.
func (c *child) stop() {
	proc.Stop(c.cmd.Process, c.done, 20*time.Second)
}

// exited reports an early exit with the end of the child's log.
func (c *child) exited() error {
	select {
	case <-c.done:
		b, _ := os.ReadFile(c.log)
		if len(b) > 2000 {
			b = b[len(b)-2000:]
		}
		return fmt.Errorf("%s exited: %s", c.name, b)
	default:
		return nil
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago (another process may take it before the child binds; the child then
// fails to start and says so).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitFor polls ok every 100 ms until it is true, c exits or 60 s pass.
func waitFor(ctx context.Context, c *child, what string, ok func() bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if err := c.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not %s after 60 s (log: %s)", c.name, what, c.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// serveBaseline is --serve-baseline: the baseline server in this process
// until ctx ends.
func serveBaseline(ctx context.Context, addr string, stderr io.Writer) int {
	stop, err := server.Start(addr)
	if err != nil {
		fmt.Fprintln(stderr, "trustbench:", err)
		return 1
	}
	<-ctx.Done()
	stop()
	return 0
}

// startBaseline runs this binary as the baseline server in its own process.
func startBaseline(ctx context.Context, dir string) (*child, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	c, err := startChild("baseline", self, []string{"--serve-baseline", addr}, nil, filepath.Join(dir, "baseline.log"))
	if err != nil {
		return nil, "", err
	}
	err = waitFor(ctx, c, "listening", func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	if err != nil {
		c.stop()
		return nil, "", err
	}
	return c, "http://" + addr, nil
}

// trustdBinary is --trustd-bin, or trustd built into dir.
func trustdBinary(ctx context.Context, o *options, dir string, log io.Writer) (string, error) {
	if o.trustdBin != "" {
		return o.trustdBin, nil
	}
	bin := filepath.Join(dir, "trustd")
	fmt.Fprintln(log, "building trustd (go build ./cmd/trustd; --trustd-bin skips this)")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/trustd/trustd/cmd/trustd")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/trustd (run from the repository, or pass --trustd-bin): %w", err)
	}
	return bin, nil
}

// testCluster is a set of trustd nodes started by trustbench on loopback.
type testCluster struct {
	nodes []*child
	apis  []string // API base URL of each node
	ops   []string // ops listener base URL of each node
	token string
}

func (tc *testCluster) pids() []int {
	var out []int
	for _, n := range tc.nodes {
		out = append(out, n.pid())
	}
	return out
}

// stop stops the nodes, last first (each leaves the cluster gracefully).
func (tc *testCluster) stop() {
	for i := len(tc.nodes) - 1; i >= 0; i-- {
		tc.nodes[i].stop()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startCluster starts n trustd nodes named prefix-1…n in dir, each joining
// the first and ready before the next starts. With withTLS the nodes talk
// over mutual TLS with certificates of a CA made for this run (what
// `trustctl tls` makes) and share a cluster key. Per-IP and per-credential
// ingress limits are off: every request comes from one address and one
// site.
//
// extraEnv is added to every node's environment (--node-gomaxprocs).
func startCluster(ctx context.Context, bin, dir, prefix string, n int, withTLS bool, extraEnv []string, log io.Writer) (tc *testCluster, err error) {
	tc = &testCluster{token: "adm_" + randomHex(24)}
	defer func() {
		if err != nil {
			tc.stop()
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var ca mtls.PEM
	if withTLS {
		if ca, err = mtls.CreateCA(prefix+" bench CA", 24*time.Hour, time.Now()); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.Cert, 0o600); err != nil {
			return nil, err
		}
	}
	env := append([]string{"TRUSTD_ADMIN_TOKEN=" + tc.token, "TRUSTD_CLUSTER_KEY=" + randomHex(24)}, extraEnv...)
	var join string
	for i := 1; i <= n; i++ {
		id := prefix + "-" + strconv.Itoa(i)
		addrs := make([]string, 5) // http, ops, gossip, peer, raft
		for j := range addrs {
			if addrs[j], err = freeAddr(); err != nil {
				return nil, err
			}
		}
		args := []string{"--node-id", id, "--data-dir", filepath.Join(dir, id), "--cluster-name", prefix,
			"--http-addr", addrs[0], "--ops-addr", addrs[1], "--gossip-addr", addrs[2], "--peer-addr", addrs[3],
			"--raft-addr", addrs[4], "--join", join, "--log-level", "warn",
			"--ingress-ip-rate", "0", "--ingress-credential-rate", "0"}
		if withTLS {
			cert, err := mtls.CreateNodeCert(ca, mtls.NodeRequest{NodeID: id, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, time.Now())
			if err != nil {
				return nil, err
			}
			certPath, keyPath := filepath.Join(dir, id+".pem"), filepath.Join(dir, id+"-key.pem")
			if err := errors.Join(os.WriteFile(certPath, cert.Cert, 0o600), os.WriteFile(keyPath, cert.Key, 0o600)); err != nil {
				return nil, err
			}
			args = append(args, "--tls-ca", filepath.Join(dir, "ca.pem"), "--tls-cert", certPath, "--tls-key", keyPath)
		}
		if i == 1 {
			join = addrs[2]
		}
		c, err := startChild(id, bin, args, env, filepath.Join(dir, id+".log"))
		if err != nil {
			return nil, err
		}
		tc.nodes = append(tc.nodes, c)
		tc.apis = append(tc.apis, "http://"+addrs[0])
		tc.ops = append(tc.ops, "http://"+addrs[1])
		ready := "http://" + addrs[1] + "/readyz"
		hc := &http.Client{Timeout: time.Second}
		if err := waitFor(ctx, c, "ready", func() bool {
			resp, err := hc.Get(ready)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "%s ready: api %s, pid %d\n", id, tc.apis[i-1], c.pid())
	}
	if n > 1 {
		// Every node must see all n members in its ring before measuring,
		// or the first seconds route on a partial ring.
		if err := waitRing(ctx, tc, n); err != nil {
			return nil, err
		}
	}
	return tc, nil
}

// peerFrames reads node i's counters of ask frames sent to the keys'
// owners and the asks they carried (trustd_peer_frames_total,
// trustd_peer_frame_asks_total) from its ops listener.
func (tc *testCluster) peerFrames(ctx context.Context, i int) (frames, asks float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tc.ops[i]+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch name {
		case "trustd_peer_frames_total":
			frames, err = strconv.ParseFloat(value, 64)
		case "trustd_peer_frame_asks_total":
			asks, err = strconv.ParseFloat(value, 64)
		default:
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %s: %w", tc.ops[i], name, err)
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("%s/metrics has no peer frame counters", tc.ops[i])
	}
	return frames, asks, nil
}

// askTotal is the sum over every node of tc of the asks it forwarded to
// another node (trustd_peer_frame_asks_total).
func (tc *testCluster) askTotal(ctx context.Context) (float64, error) {
	total := 0.0
	for i := range tc.ops {
		_, asks, err := tc.peerFrames(ctx, i)
		if err != nil {
			return 0, err
		}
		total += asks
	}
	return total, nil
}
