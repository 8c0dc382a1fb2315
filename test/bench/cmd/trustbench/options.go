package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/provision"
	"github.com/trustd/trustd/test/bench/scenario"
)

// Scenario names.
const (
	scRateLimit      = "ratelimit"
	scRateLimitMulti = "ratelimit-multi"
	scSiteverify     = "siteverify"
	scMixed          = "mixed"
	scBaseline       = "baseline"
	scRedisLua       = "redis-lua"
)

var scenarios = []string{scRateLimit, scRateLimitMulti, scSiteverify, scMixed, scBaseline, scRedisLua}

// errUsage is a bad command line; the flag package has already said why.
var errUsage = errors.New("usage")

// options is the parsed command line.
type options struct {
	targets         []string
	adminToken      string
	credentials     string
	scenario        string
	duration        time.Duration
	warmup          time.Duration
	connections     int
	rate            float64
	keys            keys.Spec
	capacity        int64
	tokens          int
	mintWorkers     int
	mix             []scenario.Weight
	json            bool
	jsonFile        string
	plot            string
	compareBaseline bool
	baselineTarget  string
	serverPid       string
	suite           bool
	cluster         int
	clientRouting   bool
	nodeProcs       int
	trustdBin       string
	rounds          int
	openRate        float64
	serveBaseline   string
	timeout         time.Duration
	seed            uint64
	command         string
}

func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("trustbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "base URL of a node, or several comma-separated (requests are spread over them)")
	fs.StringVar(&o.adminToken, "admin-token", "", "admin API token (default $TRUSTD_ADMIN_TOKEN, or from --credentials)")
	fs.StringVar(&o.credentials, "credentials", "", "JSON file with admin_token and api_base (trustd --dev writes data/dev-credentials.json)")
	fs.StringVar(&o.scenario, "scenario", scRateLimit, "one of "+strings.Join(scenarios, ", "))
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured phase")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up before the measured phase, excluded from results")
	fs.IntVar(&o.connections, "connections", 64, "concurrent connections (one goroutine each)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: requests per second on a fixed schedule (0 = closed loop)")
	fs.IntVar(&o.keys.N, "keys", 10000, "number of distinct keys (subjects/devices); 1 = a single hot key")
	dist := fs.String("distribution", "uniform", "key distribution: uniform or zipf")
	fs.Float64Var(&o.keys.ZipfS, "zipf-s", keys.DefaultZipfS, "zipf exponent (> 1)")
	fs.Int64Var(&o.capacity, "capacity", 1_000_000_000, "bucket capacity (and refill per second) of the bench policies; small values show throttling")
	fs.IntVar(&o.tokens, "tokens", 50000, "siteverify tokens to mint before the run (each verified once)")
	fs.IntVar(&o.mintWorkers, "mint-workers", 2*runtime.NumCPU(), "parallel token minters")
	mix := fs.String("mix", "ratelimit=80,siteverify=20", "weights of the mixed scenario")
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON instead of a table")
	fs.StringVar(&o.jsonFile, "json-file", "", "also write the JSON summary to this file")
	fs.StringVar(&o.plot, "plot", "", "write a latency plot to this PNG file")
	fs.BoolVar(&o.compareBaseline, "compare-baseline", false, "first run the in-process baseline with the same settings and report the ratio")
	fs.StringVar(&o.baselineTarget, "baseline-target", "", "with --compare-baseline: drive this running baseline (go run ./test/bench/baseline) instead of an in-process one")
	fs.StringVar(&o.serverPid, "server-pid", "", "pid of the server, to report its CPU µs per request (several, comma-separated, are summed: the nodes of a cluster)")
	fs.BoolVar(&o.suite, "suite", false, "start a baseline process and a trustd node, and print the ratio to the baseline of ratelimit, ratelimit-multi and siteverify (each --rounds times) and the open-loop CPU ratio at --open-rate")
	fs.IntVar(&o.cluster, "cluster", 0, "start a 1-node and an N-node cluster (mutual TLS) and compare local and forwarded CPU per check (N ≥ 2); with --rate both run open loop at that rate")
	fs.BoolVar(&o.clientRouting, "client-routing", false, "send rate-limit checks through the reference client (traffic/client), which routes each to its bucket's owner; with --cluster, adds an N-node client-routed run to each round")
	fs.IntVar(&o.nodeProcs, "node-gomaxprocs", 0, "with --suite/--cluster: GOMAXPROCS of every trustd node (0: Go's default, every core); several nodes on one host otherwise each schedule on every core")
	fs.StringVar(&o.trustdBin, "trustd-bin", "", "with --suite/--cluster: the trustd binary (default: go build ./cmd/trustd into a temporary directory)")
	fs.IntVar(&o.rounds, "rounds", 3, "with --suite/--cluster: rounds of every comparison (the median ratio is reported)")
	fs.Float64Var(&o.openRate, "open-rate", 5000, "with --suite: the open-loop rate of the CPU comparison (0: skip it)")
	fs.StringVar(&o.serveBaseline, "serve-baseline", "", "internal: serve the baseline on this address until SIGTERM (--suite runs itself so)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request read/write timeout")
	fs.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "random seed of the key choosers")
	if err := fs.Parse(args); err != nil {
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trustbench: unexpected argument %q\n", fs.Arg(0))
		return nil, errUsage
	}
	o.keys.Distribution = keys.Distribution(*dist)
	if *target != "" {
		for t := range strings.SplitSeq(*target, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.targets = append(o.targets, t)
			}
		}
	}
	if o.adminToken == "" {
		o.adminToken = getenv("TRUSTD_ADMIN_TOKEN")
	}
	if o.credentials != "" {
		c, err := provision.ReadCredentials(o.credentials)
		if err != nil {
			return nil, err
		}
		if o.adminToken == "" {
			o.adminToken = c.AdminToken
		}
		if len(o.targets) == 0 && c.APIBase != "" {
			o.targets = []string{c.APIBase}
		}
	}
	for i, t := range o.targets {
		o.targets[i] = provision.NodeRoot(t)
	}
	var err error
	if o.mix, err = scenario.ParseMix(*mix, scRateLimit, scSiteverify); err != nil {
		return nil, err
	}
	o.command = commandLine(args)
	return o, o.validate()
}

func (o *options) validate() error {
	if _, err := parsePids(o.serverPid); err != nil {
		return err
	}
	if o.serveBaseline != "" {
		return nil
	}
	switch {
	case o.duration <= 0 || o.warmup < 0:
		return errors.New("--duration must be positive and --warmup not negative")
	case o.connections < 1:
		return errors.New("--connections must be at least 1")
	}
	if o.suite || o.cluster != 0 {
		switch {
		case o.suite && o.cluster != 0:
			return errors.New("--suite and --cluster are separate runs")
		case o.suite && o.clientRouting:
			return errors.New("--client-routing goes with --cluster or a ratelimit run, not --suite")
		case o.cluster == 1 || o.cluster < 0 || o.cluster > 9:
			return errors.New("--cluster takes 2 to 9 nodes")
		case len(o.targets) > 0 || o.compareBaseline:
			return errors.New("--suite and --cluster start their own servers: no --target or --compare-baseline")
		case o.rounds < 1:
			return errors.New("--rounds must be at least 1")
		case o.nodeProcs < 0:
			return errors.New("--node-gomaxprocs must not be negative")
		case o.openRate < 0:
			return errors.New("--open-rate must not be negative")
		case o.json || o.jsonFile != "" || o.plot != "":
			return errors.New("--suite and --cluster print their own table: --json, --json-file and --plot go with a scenario run")
		}
		return o.keys.Validate()
	}
	switch {
	case o.clientRouting && o.scenario != scRateLimit && o.scenario != scRateLimitMulti:
		return errors.New("--client-routing goes with the ratelimit and ratelimit-multi scenarios")
	case !slices.Contains(scenarios, o.scenario):
		return fmt.Errorf("unknown scenario %q (one of %s)", o.scenario, strings.Join(scenarios, ", "))
	case o.rate < 0:
		return errors.New("--rate must not be negative")
	case o.capacity < 1:
		return errors.New("--capacity must be at least 1")
	case o.tokens < 1 && (o.scenario == scSiteverify || o.scenario == scMixed):
		return errors.New("--tokens must be at least 1")
	case o.baselineTarget != "" && !o.compareBaseline:
		return errors.New("--baseline-target goes with --compare-baseline")
	case o.compareBaseline && o.scenario == scBaseline:
		return errors.New("--compare-baseline compares another scenario with the baseline")
	case o.needsTrustd() && len(o.targets) == 0:
		return fmt.Errorf("scenario %s needs --target (or --credentials with api_base)", o.scenario)
	case o.needsTrustd() && o.adminToken == "":
		return provision.ErrNoToken
	}
	return o.keys.Validate()
}

// serverPids is --server-pid parsed (validate checked it).
func (o *options) serverPids() []int {
	pids, _ := parsePids(o.serverPid)
	return pids
}

func parsePids(s string) ([]int, error) {
	var pids []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--server-pid: %q is not a pid", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// nodeEnv is what --node-gomaxprocs adds to the nodes' environment.
func (o *options) nodeEnv() []string {
	if o.nodeProcs <= 0 {
		return nil
	}
	return []string{"GOMAXPROCS=" + strconv.Itoa(o.nodeProcs)}
}

func (o *options) needsTrustd() bool {
	return o.scenario != scBaseline && o.scenario != scRedisLua
}

// commandLine reconstructs the invocation for the report, hiding the token.
func commandLine(args []string) string {
	out := []string{"go run ./test/bench/cmd/trustbench"}
	hide := false
	for _, a := range args {
		switch {
		case hide:
			a, hide = "***", false
		case a == "--admin-token" || a == "-admin-token":
			hide = true
		case strings.HasPrefix(a, "--admin-token=") || strings.HasPrefix(a, "-admin-token="):
			a = a[:strings.IndexByte(a, '=')+1] + "***"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}
