package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/test/bench/baseline/server"
	"github.com/trustd/trustd/test/bench/internal/faketrustd"
	"github.com/trustd/trustd/test/bench/redislua"
	"github.com/trustd/trustd/test/bench/report"
)

var short = []string{"--duration", "300ms", "--warmup", "100ms", "--connections", "4", "--keys", "50", "--timeout", "5s"}

func noEnv(string) string { return "" }

// mustRun runs trustbench with --json and returns the summary.
func mustRun(t *testing.T, ctx context.Context, args ...string) *report.Summary {
	t.Helper()
	var out, log bytes.Buffer
	args = append(append(append([]string(nil), short...), "--json"), args...)
	if code := run(ctx, args, noEnv, &out, &log); code != 0 {
		t.Fatalf("exit %d\n%s", code, log.String())
	}
	var s report.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("output is not a JSON summary: %v\n%s", err, out.String())
	}
	return &s
}

func TestScenariosAgainstAFakeTrustd(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		decision string
		other    string
	}{
		{"ratelimit allows with a huge bucket", []string{"--scenario", "ratelimit"}, "allow", ""},
		{"ratelimit on one hot key with a small bucket throttles", []string{"--scenario", "ratelimit", "--keys", "1", "--capacity", "5"}, "throttle", ""},
		{"ratelimit-multi over two nodes with zipf keys allows", []string{"--scenario", "ratelimit-multi", "--distribution", "zipf"}, "allow", ""},
		{"siteverify verifies minted tokens", []string{"--scenario", "siteverify", "--tokens", "200", "--warmup", "0s"}, "verify-success", ""},
		{"mixed does both", []string{"--scenario", "mixed", "--tokens", "200", "--warmup", "0s", "--mix", "ratelimit=50,siteverify=50"}, "allow", "verify-success"},
		{"ratelimit through the routing client (no ring to learn) allows", []string{"--scenario", "ratelimit", "--client-routing"}, "allow", ""},
		{"an open loop ratelimit run follows the rate", []string{"--scenario", "ratelimit", "--rate", "200"}, "allow", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := faketrustd.Start(t, "adm")
			args := append([]string{"--target", fake.URL + "," + fake.URL, "--admin-token", "adm"}, tt.args...)
			s := mustRun(t, context.Background(), args...)
			if s.Requests == 0 || s.Decisions[tt.decision] == 0 {
				t.Fatalf("no %s decisions in %d requests: %v errors %v", tt.decision, s.Requests, s.Decisions, s.Errors)
			}
			if tt.other != "" && s.Decisions[tt.other] == 0 {
				t.Fatalf("no %s decisions: %v", tt.other, s.Decisions)
			}
			if len(s.Errors) != 0 {
				t.Fatalf("errors %v", s.Errors)
			}
			if left := fake.Workspaces(); len(left) != 0 || len(fake.Deleted()) != 1 {
				t.Fatalf("workspace not cleaned up: left %v", left)
			}
		})
	}
}

func TestSiteverifyStopsWhenTokensRunOut(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	s := mustRun(t, context.Background(), "--target", fake.URL, "--admin-token", "adm", "--scenario", "siteverify",
		"--tokens", "5", "--duration", "5s", "--warmup", "0s")
	if !s.Exhausted || s.Decisions["verify-success"] != 5 || s.ElapsedS >= 5 {
		t.Fatalf("exhausted=%v successes=%d elapsed=%.2f, want an early stop after 5", s.Exhausted, s.Decisions["verify-success"], s.ElapsedS)
	}
	if !strings.Contains(strings.Join(s.Notes, ";"), "ran out") {
		t.Fatalf("the early stop is not said: %v", s.Notes)
	}
}

func TestInterruptDeletesTheWorkspace(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once provisioning is done, mid-run, as Ctrl-C would.
		deadline := time.Now().Add(10 * time.Second)
		for len(fake.Workspaces()) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	var out, log bytes.Buffer
	args := append(append([]string(nil), short...), "--target", fake.URL, "--admin-token", "adm", "--duration", "30s")
	start := time.Now()
	run(ctx, args, noEnv, &out, &log)
	if time.Since(start) > 15*time.Second {
		t.Fatal("the run did not stop on interrupt")
	}
	if len(fake.Workspaces()) != 0 || len(fake.Deleted()) != 1 {
		t.Fatalf("workspace left after interrupt: %v\n%s", fake.Workspaces(), log.String())
	}
}

func TestBaselineInProcessWithPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "lat.png")
	s := mustRun(t, context.Background(), "--scenario", "baseline", "--plot", png)
	if s.Decisions["allow"] == 0 || s.Throughput <= 0 {
		t.Fatalf("baseline run: %+v", s)
	}
	mustBePNG(t, png)
}

func TestCompareBaselinePrintsTheRatio(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	var out, log bytes.Buffer
	args := append(append([]string(nil), short...), "--target", fake.URL, "--admin-token", "adm", "--compare-baseline")
	if code := run(context.Background(), args, noEnv, &out, &log); code != 0 {
		t.Fatalf("exit %d\n%s", code, log.String())
	}
	if !strings.Contains(out.String(), "ratelimit / baseline = ") {
		t.Fatalf("no ratio line:\n%s", out.String())
	}
}

func TestRedisLua(t *testing.T) {
	if _, err := redislua.Binary(); errors.Is(err, redislua.ErrNoServer) {
		t.Skip("redis-server not installed")
	}
	s := mustRun(t, context.Background(), "--scenario", "redis-lua", "--capacity", "3", "--keys", "1", "--warmup", "0s")
	if s.Decisions["allow"] != 3 || s.Decisions["throttle"] == 0 || s.ServerCPUUs == nil {
		t.Fatalf("redis-lua run: decisions %v server cpu %v errors %v", s.Decisions, s.ServerCPUUs, s.Errors)
	}
}

func mustBePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestOptions(t *testing.T) {
	creds := filepath.Join(t.TempDir(), "dev-credentials.json")
	if err := os.WriteFile(creds, []byte(`{"admin_token":"from-file","api_base":"http://127.0.0.1:9"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "TRUSTD_ADMIN_TOKEN" {
			return "from-env"
		}
		return ""
	}
	tests := []struct {
		name    string
		args    []string
		getenv  func(string) string
		ok      bool
		token   string
		targets int
	}{
		{"a flag token wins over the environment", []string{"--target", "http://a:1,http://b:2", "--admin-token", "flag"}, env, true, "flag", 2},
		{"the environment gives the token", []string{"--target", "http://a:1"}, env, true, "from-env", 1},
		{"a credentials file gives token and target", []string{"--credentials", creds}, noEnv, true, "from-file", 1},
		{"ratelimit without a target is refused", []string{"--admin-token", "x"}, noEnv, false, "", 0},
		{"ratelimit without a token is refused", []string{"--target", "http://a:1"}, noEnv, false, "", 0},
		{"redis-lua needs neither", []string{"--scenario", "redis-lua"}, noEnv, true, "", 0},
		{"an unknown scenario is refused", []string{"--scenario", "nope"}, noEnv, false, "", 0},
		{"zipf with a bad exponent is refused", []string{"--scenario", "baseline", "--distribution", "zipf", "--zipf-s", "0.5"}, noEnv, false, "", 0},
		{"comparing the baseline with itself is refused", []string{"--scenario", "baseline", "--compare-baseline"}, noEnv, false, "", 0},
		{"the suite starts its own servers: no target or token needed", []string{"--suite"}, noEnv, true, "", 0},
		{"cluster mode needs neither", []string{"--cluster", "3", "--rate", "2000"}, noEnv, true, "", 0},
		{"the suite against a target is refused", []string{"--suite", "--target", "http://a:1"}, noEnv, false, "", 0},
		{"suite and cluster together are refused", []string{"--suite", "--cluster", "3"}, noEnv, false, "", 0},
		{"cluster mode with client routing", []string{"--cluster", "3", "--client-routing"}, noEnv, true, "", 0},
		{"client routing of a ratelimit run", []string{"--target", "http://a:1", "--admin-token", "x", "--client-routing"}, noEnv, true, "x", 1},
		{"client routing of siteverify is refused", []string{"--target", "http://a:1", "--admin-token", "x", "--scenario", "siteverify", "--client-routing"}, noEnv, false, "", 0},
		{"client routing in the suite is refused", []string{"--suite", "--client-routing"}, noEnv, false, "", 0},
		{"a cluster of one is refused", []string{"--cluster", "1"}, noEnv, false, "", 0},
		{"zero rounds are refused", []string{"--suite", "--rounds", "0"}, noEnv, false, "", 0},
		{"a JSON file of the suite is refused (it prints a table only)", []string{"--suite", "--json-file", "x.json"}, noEnv, false, "", 0},
		{"a plot of a cluster run is refused", []string{"--cluster", "3", "--plot", "x.png"}, noEnv, false, "", 0},
		{"several server pids are accepted", []string{"--scenario", "baseline", "--server-pid", "12,34"}, noEnv, true, "", 0},
		{"a server pid that is not a number is refused", []string{"--scenario", "baseline", "--server-pid", "12,x"}, noEnv, false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(tt.args, tt.getenv, &bytes.Buffer{})
			if (err == nil) != tt.ok {
				t.Fatalf("err %v", err)
			}
			if tt.ok && (o.adminToken != tt.token || len(o.targets) != tt.targets) {
				t.Fatalf("token %q targets %v", o.adminToken, o.targets)
			}
		})
	}
}

func TestMedianAndSubOptions(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median of 3 = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("median of 4 = %v", m)
	}
	o := &options{suite: true, cluster: 0, compareBaseline: true, rate: 9}
	sub := o.sub(scRateLimitMulti, []string{"http://n:1"}, []int{7, 8}, "tok", 0)
	if sub.suite || sub.compareBaseline || sub.scenario != scRateLimitMulti || sub.rate != 0 || sub.adminToken != "tok" {
		t.Fatalf("sub options %+v", sub)
	}
	if pids := sub.serverPids(); len(pids) != 2 || pids[0] != 7 || pids[1] != 8 {
		t.Fatalf("pids %v", pids)
	}
	if o.suite != true || o.rate != 9 {
		t.Fatal("sub changed the suite's own options")
	}
}

func TestCommandLineHidesTheToken(t *testing.T) {
	got := commandLine([]string{"--admin-token", "s3cret", "--admin-token=s3cret", "--scenario", "ratelimit"})
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "--scenario ratelimit") {
		t.Fatalf("command line %q", got)
	}
}

func TestExternalBaselineReportsServerCPU(t *testing.T) {
	url, stop, err := server.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s := mustRun(t, context.Background(), "--scenario", "baseline", "--target", url, "--server-pid", strconv.Itoa(os.Getpid()))
	if s.ServerCPUUs == nil || s.Decisions["allow"] == 0 {
		t.Fatalf("server cpu %v decisions %v", s.ServerCPUUs, s.Decisions)
	}
	fake := faketrustd.Start(t, "adm")
	c := mustRun(t, context.Background(), "--target", fake.URL, "--admin-token", "adm", "--compare-baseline", "--baseline-target", url)
	if c.Baseline == nil || len(c.Baseline.Targets) != 1 || c.Baseline.Targets[0] != url || c.Ratio == nil {
		t.Fatalf("baseline not driven at %s: %+v", url, c.Baseline)
	}
}
