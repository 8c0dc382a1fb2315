package systemtest

import (
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestANodeSurvivesMoreConnectionsThanFileDescriptors opens more idle
// connections than the node's file-descriptor limit. The node must not
// exit (fasthttp stops serving on EMFILE unless the listener retries), and
// it answers again once the flood ends.
func TestANodeSurvivesMoreConnectionsThanFileDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	bin := buildTrustd(t)
	dir := t.TempDir()
	api, ops := freeAddr(t), freeAddr(t)
	const limit = 256
	cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n %d && exec %q \"$@\"", limit, bin), "trustd",
		"--data-dir", filepath.Join(dir, "data"), "--http-addr", api, "--ops-addr", ops,
		"--raft-addr", freeAddr(t), "--gossip-addr", freeAddr(t), "--peer-addr", freeAddr(t), "--log-level", "error")
	logf, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	client := &nethttp.Client{Timeout: 2 * time.Second}
	answers := func() bool {
		resp, err := client.Get("http://" + api + "/v1/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == 200
	}
	waitFor(t, 30*time.Second, "the node answers", answers)

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < limit+150; i++ {
		c, err := net.DialTimeout("tcp", api, time.Second)
		if err != nil {
			continue // the backlog is full: that is the flood doing its work
		}
		conns = append(conns, c)
	}
	time.Sleep(500 * time.Millisecond) // let the node run into its limit
	select {
	case err := <-exited:
		t.Fatalf("the node exited under the connection flood: %v", err)
	default:
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	waitFor(t, 20*time.Second, "the node answers after the flood", answers)
	select {
	case err := <-exited:
		t.Fatalf("the node exited: %v", err)
	default:
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
