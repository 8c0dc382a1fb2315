package systemtest

import (
	"context"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
)

// startInProcessDevNode starts a --dev node in this process on loopback ports.
func startInProcessDevNode(t *testing.T) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", FastRaft: true, Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	waitFor(t, 20*time.Second, "the dev workspace is seeded", func() bool { return n.Dev() != nil })
	return n
}

func fetch(t *testing.T, url, dst string) {
	t.Helper()
	resp, err := nethttp.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTheContractPassesAMainstreamLinter lints the served OpenAPI 3.1 and
// 3.0 documents with Redocly's recommended rules: zero errors.
func TestTheContractPassesAMainstreamLinter(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed (run test/system/browser/setup.sh)")
	}
	redocly := filepath.Join(browserDir, "node_modules", "@redocly", "cli", "bin", "cli.js")
	if _, err := os.Stat(redocly); err != nil {
		t.Skip("skipping: test/system/browser/node_modules/@redocly/cli is missing (run test/system/browser/setup.sh)")
	}
	n := startInProcessDevNode(t)
	dir := t.TempDir()
	for _, doc := range []string{"openapi.json", "openapi-3.0.json"} {
		path := filepath.Join(dir, doc)
		fetch(t, n.APIURL()+"/v1/"+doc, path)
		cmd := exec.Command(nodeBin, redocly, "lint", path, "--format=stylish")
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "valid") {
			t.Fatalf("redocly lint %s: %v\n%s", doc, err, out)
		}
		if strings.Contains(string(out), " error ") {
			t.Fatalf("redocly lint %s reports errors:\n%s", doc, out)
		}
	}
}

// TestAGeneratedGoClientCallsARealNode generates a typed Go client from
// the OpenAPI 3.0 document with oapi-codegen, compiles it, and calls
// /siteverify and /rate-limit/check on a real node through it.
func TestAGeneratedGoClientCallsARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads and builds a client generator")
	}
	n := startInProcessDevNode(t)
	dev := n.Dev()
	dir := t.TempDir()
	fetch(t, n.APIURL()+"/v1/openapi-3.0.json", filepath.Join(dir, "api.json"))
	files := map[string]string{
		"go.mod": "module generatedclient\n\ngo 1.24\n",
		"cfg.yaml": "package: main\noutput: client.gen.go\ngenerate:\n  models: true\n  client: true\n" +
			"output-options:\n  include-operation-ids: [siteverify, rateLimitCheck]\n",
		"main.go": `package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
)

func main() {
	c, err := NewClientWithResponses(os.Args[1])
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	sv, err := c.SiteverifyWithResponse(ctx, SiteverifyJSONRequestBody{Secret: os.Args[2], Response: "not-a-token"})
	if err != nil || sv.JSON200 == nil {
		fmt.Println("siteverify failed:", err, string(sv.Body))
		os.Exit(1)
	}
	fmt.Printf("siteverify success=%v codes=%v\n", sv.JSON200.Success, sv.JSON200.ErrorCodes)
	bearer := func(ctx context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+os.Args[2])
		return nil
	}
	rl, err := c.RateLimitCheckWithResponse(ctx, RateLimitCheckJSONRequestBody{Action: "generated.client"}, bearer)
	if err != nil || rl.JSON200 == nil {
		fmt.Println("rate-limit check failed:", err, string(rl.Body))
		os.Exit(1)
	}
	fmt.Printf("rate-limit decision=%s allowed=%v\n", rl.JSON200.Decision, rl.JSON200.Allowed)
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.5.1", "-config", "cfg.yaml", "api.json")
	run("go", "mod", "tidy")
	out := run("go", "run", ".", n.APIURL(), dev.Secret)
	if !strings.Contains(out, "siteverify success=false codes=[invalid-input-response]") || !strings.Contains(out, "rate-limit decision=allow allowed=true") {
		t.Fatalf("the generated client's calls:\n%s", out)
	}
}
