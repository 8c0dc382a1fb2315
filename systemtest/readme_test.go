package systemtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTheReadmeCommandsWorkAsWritten runs the README's quick start, the
// curls of its hot paths and its benchmark command against a real node.
// Each command is taken from the README verbatim (the test fails if the
// README changes it); only the ports and the data dir are moved, through
// the TRUSTD_* variables every flag has, so the test never collides with
// a node already running on the default ports.
func TestTheReadmeCommandsWorkAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("skipping: curl is not installed")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	must := func(cmd string) string {
		t.Helper()
		if !strings.Contains(string(readme), cmd) {
			t.Fatalf("the README no longer shows %q", cmd)
		}
		return cmd
	}
	data := t.TempDir()
	api, ops := freeAddr(t), freeAddr(t)
	env := append(os.Environ(), "TRUSTD_DATA_DIR="+data, "TRUSTD_HTTP_ADDR="+api, "TRUSTD_OPS_ADDR="+ops,
		"TRUSTD_RAFT_ADDR="+freeAddr(t), "TRUSTD_GOSSIP_ADDR="+freeAddr(t), "TRUSTD_PEER_ADDR="+freeAddr(t), "TRUSTD_LOG_LEVEL=warn")
	moved := func(cmd string) string {
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:8080", api)
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:9090", ops)
		return strings.ReplaceAll(cmd, "data/dev-credentials.json", filepath.Join(data, "dev-credentials.json"))
	}
	shell := func(ctx context.Context, cmd string, extra ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", "-c", moved(cmd))
		c.Dir = ".."
		c.Env = append(append([]string{}, env...), extra...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGINT) }
		c.WaitDelay = 20 * time.Second
		return c
	}

	// Quick start, command one: the node, in the background.
	start := must("go run ./cmd/trustd --dev")
	ctx, cancel := context.WithCancel(context.Background())
	node := shell(ctx, start)
	logf, err := os.Create(filepath.Join(data, "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	node.Stdout, node.Stderr = logf, logf
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Ctrl-C, as a reader would stop it. (`go run` itself reports exit
		// status 1 when interrupted, whatever its program returned, so
		// only the stop within the wait delay is checked here; trustd's
		// own clean exit is checked by the cluster system test.)
		cancel()
		_ = node.Wait()
		logf.Close()
	}()
	credsPath := filepath.Join(data, "dev-credentials.json")
	waitFor(t, 120*time.Second, "the dev node wrote its credentials", func() bool {
		_, err := os.Stat(credsPath)
		return err == nil
	})
	var creds struct {
		Secret string `json:"secret"`
	}
	b, _ := os.ReadFile(credsPath)
	if err := json.Unmarshal(b, &creds); err != nil {
		t.Fatal(err)
	}
	run := func(cmd string, extra ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := shell(ctx, cmd, extra...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	waitFor(t, 30*time.Second, "the node is ready", func() bool {
		out, _ := shell(context.Background(), "curl -s http://127.0.0.1:9090/readyz").CombinedOutput()
		return strings.Contains(string(out), "ready")
	})
	if out := run(must("curl -s http://127.0.0.1:8080/v1/                       # service metadata")); !strings.Contains(out, `"service":"trustd"`) {
		t.Fatalf("metadata: %s", out)
	}
	if out := run(must("curl -s http://127.0.0.1:8080/v1/openapi.json | head     # the contract (OpenAPI 3.1)")); !strings.Contains(out, `"openapi"`) {
		t.Fatalf("contract: %s", out)
	}
	if out := run(must("curl -s http://127.0.0.1:9090/readyz                     # ready when Raft has a leader")); !strings.Contains(out, "ready") {
		t.Fatalf("readyz: %s", out)
	}
	sv := must("curl -s http://127.0.0.1:8080/v1/siteverify \\\n  -d secret=\"$SECRET\" -d response=\"$TOKEN\" -d remoteip=203.0.113.7 -d action=login")
	if out := run(sv, "SECRET="+creds.Secret, "TOKEN=not-a-real-token"); !strings.Contains(out, `"invalid-input-response"`) {
		t.Fatalf("siteverify: %s", out)
	}
	rl := must("curl -s http://127.0.0.1:8080/v1/rate-limit/check \\\n  -H \"Authorization: Bearer $SECRET\" -H 'Content-Type: application/json' \\\n  -d '{\"action\":\"payment.card\",\"subject_id\":\"user-42\"}'")
	if out := run(rl, "SECRET="+creds.Secret); !strings.Contains(out, `"decision":"allow"`) {
		t.Fatalf("rate-limit check: %s", out)
	}
	bench := must("go run ./bench/cmd/trustbench --credentials data/dev-credentials.json \\\n  --scenario ratelimit --duration 10s --compare-baseline")
	bench = strings.Replace(bench, "--duration 10s", "--duration 2s", 1)
	if out := run(bench); !strings.Contains(strings.ToLower(out), "baseline") {
		t.Fatalf("benchmark: %s", out)
	}
}
