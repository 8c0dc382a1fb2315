package systemtest

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/journeys/journeystest"
	"github.com/trustd/trustd/test/bench/challenge"
)

// TestTheReadmeCommandsWorkAsWritten runs the README's commands against a
// real `go run ./cmd/trustd --dev` node, as a newcomer would, from a fresh
// working folder that holds the node's ./data. Each command is taken from
// the README verbatim (the test fails when the README no longer shows it)
// with only these changes:
//   - ports: the node listens on free ports (through the TRUSTD_* variables
//     every flag has), so 127.0.0.1:8080 and :9090 in a command become
//     those, and trustctl is pointed there with TRUSTD_ADDR;
//   - `go run ./cmd/trustctl` runs a trustctl built once (the same code;
//     `go run` itself is run for trustd and for trustctl --help);
//   - a <placeholder> becomes the value the README says it comes from: an
//     id an earlier command printed, the widget token (minted by solving
//     the site's real challenge, as the widget does), the journey's session
//     token and proof (the person's page driven with a software passkey
//     over the same calls the page makes).
//
// At the end every command line of the README's code blocks must have been
// run here or be listed in notRun with the reason.
func TestTheReadmeCommandsWorkAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("skipping: curl is not installed")
	}
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	data := filepath.Join(work, "data")
	for _, l := range []string{"docs", "deploy"} {
		if err := os.Symlink(filepath.Join(repo, l), filepath.Join(work, l)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "trustctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/trustctl").CombinedOutput(); err != nil {
		t.Fatalf("go build trustctl: %v\n%s", err, out)
	}
	api, ops := freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(api)
	env := append(os.Environ(), "TRUSTD_DATA_DIR="+data, "TRUSTD_HTTP_ADDR="+api, "TRUSTD_OPS_ADDR="+ops,
		"TRUSTD_RAFT_ADDR="+freeAddr(t), "TRUSTD_GOSSIP_ADDR="+freeAddr(t), "TRUSTD_PEER_ADDR="+freeAddr(t),
		"TRUSTD_LOG_LEVEL=warn", "TRUSTD_ADDR=http://"+api)

	covered := map[string]bool{}
	must := func(cmd string) string {
		t.Helper()
		if !strings.Contains(readme, cmd) {
			t.Fatalf("the README no longer shows %q", cmd)
		}
		for _, l := range strings.Split(cmd, "\n") {
			covered[strings.TrimSpace(l)] = true
		}
		return cmd
	}
	moved := func(cmd string, fill map[string]string) string {
		for k, v := range fill {
			cmd = strings.ReplaceAll(cmd, k, v)
		}
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:8080", api)
		cmd = strings.ReplaceAll(cmd, "localhost:8080", "localhost:"+port)
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:9090", ops)
		return strings.ReplaceAll(cmd, "go run ./cmd/trustctl ", bin+" ")
	}
	shell := func(ctx context.Context, dir, cmd string, extra ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir = dir
		c.Env = append(append([]string{}, env...), extra...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGINT) }
		c.WaitDelay = 20 * time.Second
		return c
	}
	runIn := func(dir, cmd string, fill map[string]string, extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := shell(ctx, dir, moved(cmd, fill), extra...).CombinedOutput()
		return string(out), err
	}

	// Quick start, command one: the node, in the background, from the
	// repository (go run needs the module), its data in the working folder.
	must("go run ./cmd/trustd --dev     # one node, embedded storage in ./data, prints a dev workspace")
	start := "go run ./cmd/trustd --dev"
	ctx, cancel := context.WithCancel(context.Background())
	node := shell(ctx, repo, start)
	logf, err := os.Create(filepath.Join(work, "node.log"))
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
		// only the stop within the wait delay is checked here.)
		cancel()
		_ = node.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(work, "node.log"))
			t.Logf("node output:\n%s", b)
		}
	}()
	credsPath := filepath.Join(data, "dev-credentials.json")
	waitFor(t, 4*time.Minute, "the dev node wrote its credentials", func() bool {
		_, err := os.Stat(credsPath)
		return err == nil
	})
	var creds struct {
		Secret      string `json:"secret"`
		SiteKey     string `json:"site_key"`
		APIBase     string `json:"api_base"`
		WorkspaceID string `json:"workspace_id"`
	}
	b, _ := os.ReadFile(credsPath)
	if err := json.Unmarshal(b, &creds, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	if want := "http://localhost:" + port + "/v1"; creds.APIBase != want {
		t.Errorf("--dev announces %s, want %s (WebAuthn needs a domain name)", creds.APIBase, want)
	}
	banner, _ := os.ReadFile(filepath.Join(work, "node.log"))
	for _, want := range []string{"/demo", "credential", "$SECRET"} {
		if !strings.Contains(string(banner), want) {
			t.Errorf("the dev banner does not mention %s:\n%s", want, banner)
		}
	}

	// work runs a command in the working folder after the README's block
	// that sets $SECRET, $WORKSPACE and $CREDENTIAL; want lists what its
	// output must hold.
	vars := must(`SECRET=$(grep -o '"secret":"[^"]*' data/dev-credentials.json | cut -d'"' -f4)            # the site's secret, server-side only
WORKSPACE=$(grep -o '"workspace_id":"[^"]*' data/dev-credentials.json | cut -d'"' -f4)   # the workspace of trustctl --workspace
CREDENTIAL=$(grep -o '"credential":"[^"]*' data/dev-credentials.json | cut -d'"' -f4)    # a server credential (Bearer), scopes site.verify, identity.*`)
	work1 := func(cmd string, fill map[string]string, want ...string) string {
		t.Helper()
		out, err := runIn(work, vars+"\n"+must(cmd), fill)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: the output lacks %q:\n%s", cmd, w, out)
			}
		}
		return out
	}
	waitFor(t, 60*time.Second, "the node is ready", func() bool {
		out, _ := runIn(work, "curl -s http://127.0.0.1:9090/readyz", nil)
		return strings.Contains(out, "ready")
	})
	if out, _ := runIn(work, vars+"\necho \"$SECRET|$WORKSPACE\"", nil); strings.TrimSpace(out) != creds.Secret+"|"+creds.WorkspaceID {
		t.Fatalf("the README's variables: %q", out)
	}

	work1("curl -s http://127.0.0.1:8080/v1/                       # service metadata", nil,
		`"service":"trustd"`, `/v1/openapi.json"`, `/v1/openapi-3.0.json"`, `/v1/postman-collection.json"`, `/v1/changelog.json"`, `/v1/docs/README.md"`)
	work1("curl -s http://127.0.0.1:8080/v1/openapi.json | head     # the contract (OpenAPI 3.1)", nil, `"openapi"`)
	work1("curl -s http://127.0.0.1:9090/readyz                     # ready when Raft has a leader", nil, "ready")
	for _, help := range []string{"go run ./cmd/trustd --help", "go run ./cmd/trustctl --help"} {
		must(help)
		c := exec.Command("bash", "-c", help) // the go run itself, from the repository
		c.Dir = repo
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "usage") {
			t.Fatalf("%s: %v\n%s", help, err, out)
		}
	}

	// The hot paths. $TOKEN: a token of the dev site, minted by the
	// widget's own protocol (challenge, proof of work, redeem) from a page
	// at localhost, bound to the action login as the demo's widget binds it.
	m := challenge.NewMinter("http://"+api, "http://localhost:"+port, creds.SiteKey, 1)
	m.Action = "login"
	token, err := m.Mint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if page := getBody(t, "http://"+api+"/v1/demo"); !strings.Contains(page, `id="token"`) {
		t.Errorf("the demo page does not show the token:\n%s", page)
	}
	work1("TOKEN='<the token from the demo page>'\ncurl -s http://127.0.0.1:8080/v1/siteverify \\\n  -d secret=\"$SECRET\" -d response=\"$TOKEN\" -d action=login",
		map[string]string{"<the token from the demo page>": token}, `"success":true`)
	work1("curl -s http://127.0.0.1:8080/v1/rate-limit/check \\\n  -H \"Authorization: Bearer $SECRET\" -H 'Content-Type: application/json' \\\n  -d '{\"action\":\"payment.card\",\"subject_id\":\"user-42\"}'",
		nil, `"decision":"allow"`)

	// Documents: the shipped specimen, as a file upload and as JSON from a
	// file. With tesseract the MRZ reads (verify); without, it is review.
	work1("curl -s http://127.0.0.1:8080/v1/documents/supported", nil, `"passport"`)
	decision := regexp.MustCompile(`"decision":"(verify|review)"`)
	out := work1("curl -s http://127.0.0.1:8080/v1/documents/verify -F secret=\"$SECRET\" \\\n  -F country=UTO -F document_type=passport -F front_image=@docs/specimen-passport.jpg",
		nil, `"success":true`)
	if !decision.MatchString(out) {
		t.Fatalf("the specimen, uploaded: %s", out)
	}
	if _, err := exec.LookPath("tesseract"); err == nil && !strings.Contains(out, `"decision":"verify"`) {
		t.Errorf("with tesseract installed the specimen should verify: %s", out)
	}
	out = work1("printf '{\"secret\":\"%s\",\"country\":\"UTO\",\"document_type\":\"passport\",\"front_image\":\"%s\"}' \\\n  \"$SECRET\" \"$(base64 -w0 docs/specimen-passport.jpg)\" > document.json\ncurl -s http://127.0.0.1:8080/v1/documents/verify -H 'Content-Type: application/json' --data-binary @document.json",
		nil, `"success":true`)
	if !decision.MatchString(out) {
		t.Fatalf("the specimen, as JSON: %s", out)
	}

	// Journeys: define, start, the person's page (a software passkey
	// through the page's own calls), exchange.
	work1("go run ./cmd/trustctl journeys put pay --workspace $WORKSPACE --name Payment --method device_authorization \\\n  --requested-assurance standard --requirements '{\"identity\":true,\"liveness\":false,\"authorization\":true,\"operation_binding\":true}'", nil)
	out = work1("curl -s http://127.0.0.1:8080/v1/journeys/start -H 'Content-Type: application/json' \\\n  -d '{\"secret\":\"'$SECRET'\",\"journey_key\":\"pay\",\"subject_id\":\"user-42\",\"action\":\"pay\",\"operation_reference\":\"order-7\"}'", nil)
	var started struct {
		SessionToken string `json:"session_token"`
		Endpoint     string `json:"endpoint"`
	}
	if err := json.Unmarshal([]byte(out), &started, json.RejectUnknownMembers(false)); err != nil || started.SessionToken == "" {
		t.Fatalf("journeys/start: %v %s", err, out)
	}
	page := "http://localhost:" + port
	if !strings.HasPrefix(started.Endpoint, page+"/v1/journeys/person#") {
		t.Fatalf("the person's page is %s, want it at %s (WebAuthn needs a domain name)", started.Endpoint, page)
	}
	proof := completePasskeyPage(t, "http://"+api, started.Endpoint, journeystest.New(page))
	work1("SESSION='<session_token>'; PROOF='<the tp1_… proof from the page>'\ncurl -s http://127.0.0.1:8080/v1/journeys/siteverify -H 'Content-Type: application/json' \\\n  -d '{\"secret\":\"'$SECRET'\",\"session_token\":\"'$SESSION'\",\"response\":\"'$PROOF'\",\"subject_id\":\"user-42\",\"action\":\"pay\",\"operation_reference\":\"order-7\"}'",
		map[string]string{"<session_token>": started.SessionToken, "<the tp1_… proof from the page>": proof}, `"success":true`, `"status":"completed"`)

	// Administration with trustctl: it finds the admin token in ./data.
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	firstID := func(what, out string) string {
		t.Helper()
		id := uuid.FindString(out)
		if id == "" {
			t.Fatalf("%s printed no id:\n%s", what, out)
		}
		return id
	}
	ws := firstID("workspaces create", work1("go run ./cmd/trustctl workspaces create --name acme", nil, "acme"))
	fill := map[string]string{"<id>": ws}
	site := firstID("sites create", work1("go run ./cmd/trustctl sites create --workspace <id> --name shop --hostnames shop.example.com", fill, "shop.example.com"))
	fill["<site id>"] = site
	work1("go run ./cmd/trustctl sites list --workspace <id> --json", fill, `"shop"`)
	work1("go run ./cmd/trustctl agents create --workspace <id> --name bot --allowed-actions 'invoice.*' --allowed-scopes billing", fill, "bot")
	work1("go run ./cmd/trustctl approvals list --workspace <id>", fill)
	// No agent has asked for anything yet: approving an unknown approval
	// reaches the API and is refused by name.
	if out, err := runIn(work, must("go run ./cmd/trustctl approvals approve <approval id> --workspace <id> --by alice"),
		map[string]string{"<approval id>": "00000000-0000-4000-8000-000000000000", "<id>": ws}); err == nil || !strings.Contains(out, "agent-approval-not-found") {
		t.Fatalf("approvals approve: %v\n%s", err, out)
	}
	work1("go run ./cmd/trustctl trust-policies create --workspace <id> --name big-payments \\\n    --condition 'request.transaction_amount >= 500000' --reason-code high_value --outcome review", fill, "big-payments")
	work1("go run ./cmd/trustctl console-users create --workspace <id> --email ann@example.com --role approver", fill,
		"/console/link?t=", "15 minutes")
	work1("go run ./cmd/trustctl audit list --workspace <id>     # who changed what, when", fill, "POST")
	ep := firstID("webhooks create", work1("go run ./cmd/trustctl webhooks create --workspace <id> --url https://hooks.example.com/trustd", fill, "hooks.example.com"))
	fill["<endpoint id>"] = ep
	work1("go run ./cmd/trustctl webhooks test <endpoint id> --workspace <id>", fill)
	work1("go run ./cmd/trustctl webhooks deliveries <endpoint id> --workspace <id>", fill)

	// The Pwned Passwords downloader's output: one prefix file.
	if err := os.MkdirAll(filepath.Join(work, "pwnedpasswords"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "pwnedpasswords", "5BAA6.txt"), []byte("1E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work1("go run ./cmd/trustctl passwords import --in pwnedpasswords/ --mode sha1 --data-dir data", nil, "wrote")

	work1("go run ./cmd/trustctl messaging rotate-secret --workspace <id>", fill)
	prof := firstID("branding-profiles create", work1("go run ./cmd/trustctl branding-profiles create --workspace <id> --name Acme --colors '{\"primary\":\"#1a73e8\"}'", fill, "Acme"))
	fill["<profile id>"] = prof
	writeLogo(t, filepath.Join(work, "logo.png"))
	work1("go run ./cmd/trustctl branding-profiles logo <profile id> --workspace <id> --in logo.png", fill)
	work1("go run ./cmd/trustctl sites update <site id> --workspace <id> --branding-profile-id <profile id>", fill, prof)
	work1("go run ./cmd/trustctl signing-keys rotate", nil)
	if out, err := runIn(work, "go run ./cmd/trustctl signing-keys list", nil); err != nil || !strings.Contains(out, "signing") {
		t.Fatalf("signing-keys list: %v\n%s", err, out)
	}

	// The benchmark against the running node (10 s shortened to 2 s).
	bench := must("go run ./test/bench/cmd/trustbench --credentials data/dev-credentials.json \\\n  --scenario ratelimit --duration 10s --compare-baseline")
	bench = strings.Replace(bench, "--duration 10s", "--duration 2s", 1)
	if out, err := runIn(repo, strings.ReplaceAll(bench, "data/dev-credentials.json", credsPath), nil); err != nil || !strings.Contains(strings.ToLower(out), "baseline") {
		t.Fatalf("benchmark: %v\n%s", err, out)
	}

	// deploy/cluster.sh: three nodes beside this one, on ports shifted by
	// BASE_OFFSET (the script's own knob) to a free range.
	clusterEnv := []string{"CLUSTER_DIR=" + filepath.Join(work, "cluster-data"), "BASE_OFFSET=" + strconv.Itoa(freeOffset(t))}
	for _, c := range []struct{ cmd, want string }{
		{"deploy/cluster.sh start 3      # three nodes on 127.0.0.1 (API on :8181-8183), beside a quick-start node", "node-3"},
		{"deploy/cluster.sh status       # trustctl cluster status", "node-3"},
		{"deploy/cluster.sh stop         # SIGTERM each: drain, hand off, leave", "stopped node-1"},
	} {
		out, err := runIn(repo, must(c.cmd), nil, clusterEnv...)
		if err != nil || !strings.Contains(out, c.want) {
			if strings.Contains(c.cmd, "start") {
				_, _ = runIn(repo, "deploy/cluster.sh stop", nil, clusterEnv...)
			}
			t.Fatalf("%s: %v\n%s", c.cmd, err, out)
		}
	}

	// The by-hand cluster, as one script in the working folder (the
	// certificates, the key, n1 in the background, n2 joining it), on free
	// ports, with the trustd deploy/cluster.sh built above; done when n2
	// is ready and trustctl on n1 lists both.
	hand := must(`go run ./cmd/trustctl tls ca create --out-dir tls
for n in n1 n2; do go run ./cmd/trustctl tls cert create --node $n --out-dir tls; done
export TRUSTD_CLUSTER_KEY=$(head -c 32 /dev/urandom | base64)
go run ./cmd/trustd --node-id n1 --data-dir d1 --http-addr 127.0.0.1:8101 --ops-addr 127.0.0.1:9101 \
  --gossip-addr 127.0.0.1:7101 --peer-addr 127.0.0.1:8201 --raft-addr 127.0.0.1:8301 \
  --tls-ca tls/cluster-ca.pem --tls-cert tls/n1.pem --tls-key tls/n1-key.pem &
go run ./cmd/trustd --node-id n2 --data-dir d2 --http-addr 127.0.0.1:8102 --ops-addr 127.0.0.1:9102 \
  --gossip-addr 127.0.0.1:7102 --peer-addr 127.0.0.1:8202 --raft-addr 127.0.0.1:8302 \
  --tls-ca tls/cluster-ca.pem --tls-cert tls/n2.pem --tls-key tls/n2-key.pem --join 127.0.0.1:7101`)
	ports := map[string]string{"go run ./cmd/trustd ": filepath.Join(work, "cluster-data", "bin", "trustd") + " "}
	for _, p := range []string{"8101", "9101", "7101", "8201", "8301", "8102", "9102", "7102", "8202", "8302"} {
		ports["127.0.0.1:"+p] = freeAddr(t)
	}
	handCtx, stopHand := context.WithCancel(context.Background())
	handCmd := shell(handCtx, work, moved(hand, ports))
	handCmd.Cancel = func() error { return syscall.Kill(-handCmd.Process.Pid, syscall.SIGTERM) }
	handLog := &syncBuffer{}
	handCmd.Stdout, handCmd.Stderr = handLog, handLog
	if err := handCmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopHand()
			_ = handCmd.Wait()
		}
	}
	defer stop()
	waitFor(t, 3*time.Minute, "n2 of the by-hand cluster is ready", func() bool {
		out, _ := runIn(work, "curl -s http://"+ports["127.0.0.1:9102"]+"/readyz", nil)
		return strings.Contains(out, "ready")
	})
	if out, err := runIn(work, "go run ./cmd/trustctl --addr http://"+ports["127.0.0.1:8101"]+" --data-dir d1 cluster status", nil); err != nil ||
		!strings.Contains(out, "n1") || !strings.Contains(out, "n2") {
		t.Fatalf("the by-hand cluster: %v\n%s\n%s", err, out, handLog.String())
	}
	stop()

	// Every command of the README's code blocks ran above, or is here with
	// the reason it does not.
	notRun := map[string]string{
		"./test.sh                     # every test (installs what the tests need first)":                                                                "runs this test",
		"go run ./cmd/trustd --dev &                        # or any running node or cluster":                                                            "the node this test started",
		"go run ./test/bench/cmd/trustbench --suite --rounds 3 --duration 5s --tokens 40000":                                                             "starts its own servers and runs for minutes; test/bench/cmd/trustbench tests its options only",
		"go run ./test/bench/cmd/trustbench --cluster 3 --rounds 3 --duration 5s":                                                                        "as --suite",
		"identity/face/sidecar/setup.sh                                   # pinned npm packages (also run by test.sh)":                                   "test.sh runs it",
		"go run ./cmd/trustd --dev --face-engine-sidecar identity/face/sidecar    # the quick-start node, with a face engine (stop the plain one first)": "the face engine tests (TestJourneyFaceWithSidecarInBrowser, http's identity_face_real_test) need the sidecar installed",
		"FACE_SECRET=$(head -c 24 /dev/urandom | base64)":                                                                                                "as the face engine above",
		"FACE_SIDECAR_SECRET=$FACE_SECRET node identity/face/sidecar/server.mjs --port 7310 &":                                                           "as the face engine above",
		"TRUSTD_FACE_ENGINE_SECRET=$FACE_SECRET go run ./cmd/trustd --face-engine-url http://127.0.0.1:7310 \\":                                          "as the face engine above",
	}
	for _, line := range readmeCommands(readme) {
		if covered[line] || notRun[line] != "" {
			continue
		}
		// A continuation line of a command run above.
		if continuation(readme, line, func(l string) bool { return covered[l] || notRun[l] != "" }) {
			continue
		}
		t.Errorf("the README command %q is neither run by this test nor listed in notRun", line)
	}
}

// readmeCommands lists the command lines of the README's sh code blocks
// and its indented ones (comments and blank lines aside).
func readmeCommands(readme string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			out = append(out, strings.TrimSpace(l))
		case !in && strings.HasPrefix(l, "    go run "):
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// continuation reports whether line continues a covered command (the
// line before it ends with a backslash and is covered or a continuation).
func continuation(readme, line string, known func(string) bool) bool {
	lines := strings.Split(readme, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != line || i == 0 {
			continue
		}
		for j := i - 1; j >= 0 && strings.HasSuffix(strings.TrimSpace(lines[j]), "\\"); j-- {
			if known(strings.TrimSpace(lines[j])) {
				return true
			}
		}
	}
	return false
}

// completePasskeyPage does what the person's page does with a passkey:
// the page's calls with the capability from the endpoint's fragment, the
// WebAuthn ceremonies answered by a software authenticator; it returns the
// proof the page would show.
func completePasskeyPage(t *testing.T, api, endpoint string, a *journeystest.Authenticator) string {
	t.Helper()
	_, capability, ok := strings.Cut(endpoint, "#")
	if !ok {
		t.Fatalf("endpoint without capability: %s", endpoint)
	}
	call := func(path string, body any) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := nethttp.NewRequest("POST", api+"/v1/journeys/person/"+path, rd)
		req.Header.Set("X-Service-Journey-Token", capability)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("person page %s: %d %s", path, resp.StatusCode, b)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	c := call("passkey/begin", nil)
	for range 2 {
		opts, _ := c["options"].(map[string]any)
		var cred map[string]any
		var err error
		if c["ceremony"] == "registration" {
			cred, err = a.Create(opts)
		} else {
			cred, err = a.Get(opts, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		res := call("passkey/finish", map[string]any{"credential": cred})
		if next, ok := res["next"].(map[string]any); ok {
			c = next
			continue
		}
		proof, _ := res["response"].(string)
		if res["success"] != true || !strings.HasPrefix(proof, "tp1_") {
			t.Fatalf("the passkey did not complete the journey: %v", res)
		}
		return proof
	}
	t.Fatal("more than two ceremonies")
	return ""
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := nethttp.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// writeLogo writes a 64×64 PNG, the logo of the README's branding example.
func writeLogo(t *testing.T, path string) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			img.Set(x, y, color.NRGBA{R: uint8(4 * x), G: 0x73, B: 0xe8, A: 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// freeOffset is a BASE_OFFSET for deploy/cluster.sh whose fifteen ports of
// three nodes are all free now.
func freeOffset(t *testing.T) int {
	t.Helper()
	for range 50 {
		off := 20000 + rand.IntN(20000)
		free := true
		for i := 1; i <= 3 && free; i++ {
			for _, base := range []int{8180, 9180, 7980, 8280, 8380} {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i+off))
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return off
		}
	}
	t.Fatal("no free port range for deploy/cluster.sh")
	return 0
}
