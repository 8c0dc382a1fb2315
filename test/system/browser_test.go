// Package systemtest holds tests that span the whole trustd binary: they
// build it, start it as a real process on loopback ports with a temporary
// data dir, and drive it from outside as a customer would.
package systemtest

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// browserDir holds the JavaScript side of the browser tests.
const browserDir = "browser"

// needBrowser skips the test, saying what to install, unless node,
// Chromium and the npm packages are all there (test/system/browser/setup.sh
// installs them).
func needBrowser(t *testing.T) string {
	t.Helper()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping browser test: node is not installed (run test/system/browser/setup.sh)")
	}
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping browser test: no Chromium at %s (run test/system/browser/setup.sh)", chromium)
	}
	for _, pkg := range []string{"playwright-core", "@svelte-put/cloudflare-turnstile"} {
		if _, err := os.Stat(filepath.Join(browserDir, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("skipping browser test: test/system/browser/node_modules/%s is missing (run test/system/browser/setup.sh)", pkg)
		}
	}
	return nodeBin
}

// runNodeTest runs one node:test file in the browser folder and fails the
// test with its report when it fails.
func runNodeTest(t *testing.T, nodeBin, file string, env ...string) {
	t.Helper()
	artifacts, err := filepath.Abs("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--test", "--test-reporter=spec", file)
	cmd.Dir = browserDir
	cmd.Env = append(os.Environ(), append(env, "TRUSTD_ARTIFACTS="+artifacts)...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", file, out)
	if err != nil {
		t.Fatalf("browser test %s failed: %v", file, err)
	}
	t.Logf("screenshots in %s", artifacts)
}

func TestWidgetInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	runNodeTest(t, nodeBin, "widget.test.mjs")
}

func TestBrowserEndToEnd(t *testing.T) {
	nodeBin := needBrowser(t)
	n := startDevNode(t)
	if !n.serves(t, "createChallenge") {
		t.Skip("skipping: this build has no challenge protocol (POST /v1/challenge) for the widget to talk to")
	}
	runNodeTest(t, nodeBin, "e2e.mjs", "TRUSTD_API="+n.APIBase, "TRUSTD_SECRET="+n.Secret,
		"TRUSTD_ADMIN_TOKEN="+n.AdminToken, "TRUSTD_WORKSPACE="+n.WorkspaceID)
}

// devNode is a running `trustd --dev` process.
type devNode struct {
	APIBase     string `json:"api_base"`
	SiteKey     string `json:"site_key"`
	Secret      string `json:"secret"`
	AdminToken  string `json:"admin_token"`
	WorkspaceID string `json:"workspace_id"`
}

// serves reports whether the node's contract has the operation.
func (n *devNode) serves(t *testing.T, operationID string) bool {
	t.Helper()
	resp, err := nethttp.Get(n.APIBase + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %v", resp.StatusCode, err)
	}
	return bytes.Contains(doc, []byte(`"operationId":"`+operationID+`"`))
}

// startDevNode builds trustd, starts it with --dev on free loopback ports
// and returns once the dev workspace is seeded. The process is stopped
// with SIGINT (a graceful shutdown) when the test ends.
func startDevNode(t *testing.T) *devNode {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "trustd")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/trustd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "--dev", "--data-dir", data, "--http-addr", "127.0.0.1:0",
		"--raft-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0", "--gossip-addr", freeAddr(t), "--ops-addr", "", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("trustd did not stop within 20s of SIGINT")
		}
		if t.Failed() {
			t.Logf("trustd output:\n%s", logs.String())
		}
	})

	// --dev writes its credentials, with the real port, once seeded.
	creds := filepath.Join(data, "dev-credentials.json")
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(creds); err == nil {
			var n devNode
			if err := json.Unmarshal(b, &n, json.RejectUnknownMembers(false)); err == nil && n.APIBase != "" && n.Secret != "" {
				return &n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("trustd --dev wrote no credentials within 60s:\n%s", logs.String())
		}
		select {
		case <-exited:
			t.Fatalf("trustd exited early: %v\n%s", exitErr, logs.String())
		case <-tick.C:
		}
	}
}

// syncBuffer collects a process's output; the process writes from its own
// goroutines while the test may read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
