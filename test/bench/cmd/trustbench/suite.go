package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trustd/trustd/test/bench/procstat"
	"github.com/trustd/trustd/test/bench/report"
)

// --suite and --cluster: one command that starts its own servers, runs
// every comparison the speed issue (16) sets a target for, and prints the
// ratios. Each comparison is a pair of runs taken back to back (baseline,
// then trustd; or one node, then the cluster), repeated --rounds times
// with the pairs interleaved, and the median ratio is what counts: on a
// shared machine the load moves within minutes, and a ratio of two runs
// seconds apart cancels part of that.

// waitRing waits until every node of tc reports n ready members owning
// partitions (GET /admin/v1/cluster).
func waitRing(ctx context.Context, tc *testCluster, n int) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	for i, api := range tc.apis {
		err := waitFor(ctx, tc.nodes[i], fmt.Sprintf("seeing %d ready members", n), func() bool {
			req, _ := http.NewRequestWithContext(ctx, "GET", api+"/admin/v1/cluster", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var st struct {
				Nodes []struct {
					State      string `json:"state"`
					Partitions int    `json:"partitions"`
				} `json:"nodes"`
			}
			if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
				return false
			}
			ready := 0
			for _, nd := range st.Nodes {
				if nd.State == "ready" && nd.Partitions > 0 {
					ready++
				}
			}
			return ready == n
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sub is o for one run of the suite: scenario, targets and server pids set,
// nothing started by the run itself.
func (o *options) sub(scenario string, targets []string, pids []int, token string, rate float64) *options {
	c := *o
	c.suite, c.cluster, c.compareBaseline, c.baselineTarget, c.clientRouting = false, 0, false, "", false
	c.scenario, c.targets, c.adminToken, c.rate = scenario, targets, token, rate
	c.serverPid = ""
	for i, p := range pids {
		if i > 0 {
			c.serverPid += ","
		}
		c.serverPid += fmt.Sprint(p)
	}
	return &c
}

// runLogged runs one scenario and prints its summary line to log.
func runLogged(ctx context.Context, o *options, log io.Writer) (*report.Summary, []time.Duration, error) {
	p, err := prepare(ctx, o, o.scenario, log)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.scenario, err)
	}
	s, err := drive(ctx, o, p, log)
	err = errors.Join(err, p.cleanup())
	if s == nil {
		return nil, nil, fmt.Errorf("%s: %w", o.scenario, err)
	}
	cpu := "–"
	if s.ServerCPUUs != nil {
		cpu = fmt.Sprintf("%.1f", *s.ServerCPUUs)
	}
	fmt.Fprintf(log, "  → %s: %.0f req/s, p50 %.2f ms, p99 %.2f ms, server CPU %s µs/req, errors %v, decisions %v\n",
		s.Scenario, s.Throughput, float64(s.Latency.P50)/1000, float64(s.Latency.P99)/1000, cpu, s.Errors, s.Decisions)
	if n := failures(s); n*100 > s.Requests {
		err = errors.Join(err, fmt.Errorf("%s: %d of %d requests failed", s.Scenario, n, s.Requests))
	}
	return s, p.serverCPU, err
}

func failures(s *report.Summary) int64 {
	var n int64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinf(xs []float64, format string) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf(format, x))
	}
	return strings.Join(parts, " / ")
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// suiteRow is one comparison of the suite.
type suiteRow struct {
	name, target string
	base, tested []float64 // per round: req/s, or µs of server CPU per request
	ratios       []float64
	atLeast      bool // target: ratio ≥ goal (else ≤)
	goal         float64
}

func (r *suiteRow) met() string {
	if len(r.ratios) == 0 {
		return "not measured"
	}
	m := median(r.ratios)
	if (r.atLeast && m >= r.goal) || (!r.atLeast && m <= r.goal) {
		return "met"
	}
	return "not met"
}

// siteverifyWarmup is the suite's siteverify warm-up, and minMeasured the
// fewest requests a round must measure to count.
const (
	siteverifyWarmup = 200 * time.Millisecond
	minMeasured      = 2000
)

// workDir makes a run's temporary folder and builds trustd into it (or
// takes --trustd-bin); the caller removes dir when err is nil.
func workDir(ctx context.Context, o *options, run string, log io.Writer) (dir, bin string, err error) {
	dir, err = os.MkdirTemp("", "trustbench-"+run+"-")
	if err != nil {
		return "", "", err
	}
	if bin, err = trustdBinary(ctx, o, dir, log); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, bin, nil
}

// runSuite is --suite.
func runSuite(ctx context.Context, o *options, stdout, log io.Writer) (code int) {
	start := time.Now().UTC()
	load0 := loadAverage()
	fail := func(err error) int { fmt.Fprintln(log, "trustbench:", err); return 1 }
	dir, bin, err := workDir(ctx, o, "suite", log)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	base, baseURL, err := startBaseline(ctx, dir)
	if err != nil {
		return fail(err)
	}
	defer base.stop()
	fmt.Fprintf(log, "baseline: own process, pid %d on %s\n", base.pid(), baseURL)
	node, err := startCluster(ctx, bin, filepath.Join(dir, "node"), "suite", 1, false, o.nodeEnv(), log)
	if err != nil {
		return fail(err)
	}
	defer node.stop()

	rows := []*suiteRow{
		{name: scRateLimit, target: "≥ 0.85× baseline req/s", atLeast: true, goal: 0.85},
		{name: scRateLimitMulti, target: "≥ 0.75×", atLeast: true, goal: 0.75},
		{name: scSiteverify, target: "≥ 0.75×", atLeast: true, goal: 0.75},
	}
	open := &suiteRow{name: fmt.Sprintf("open loop %g/s: server CPU µs/check", o.openRate), target: "≤ 1.3× baseline", goal: 1.3}
	for round := 1; round <= o.rounds; round++ {
		for _, row := range rows {
			fmt.Fprintf(log, "round %d/%d: %s (load average %s)\n", round, o.rounds, row.name, loadAverage())
			bs, _, err := runLogged(ctx, o.sub(scBaseline, []string{baseURL}, []int{base.pid()}, "", 0), log)
			if err != nil {
				return fail(err)
			}
			sub := o.sub(row.name, node.apis, node.pids(), node.token, 0)
			if row.name == scSiteverify {
				// Each token verifies once and minting is slow (a proof of
				// work verified per token): a long warm-up would spend the
				// tokens before the measured phase, which then ends when
				// they run out.
				sub.warmup = min(sub.warmup, siteverifyWarmup)
			}
			ts, _, err := runLogged(ctx, sub, log)
			if err != nil {
				return fail(err)
			}
			if ts.Exhausted && ts.Requests < minMeasured {
				fmt.Fprintf(log, "  %s: only %d requests measured before the tokens ran out (want %d): round left out; raise --tokens\n",
					row.name, ts.Requests, minMeasured)
				continue
			}
			row.base, row.tested = append(row.base, bs.Throughput), append(row.tested, ts.Throughput)
			row.ratios = append(row.ratios, ts.Throughput/bs.Throughput)
		}
		if o.openRate > 0 {
			fmt.Fprintf(log, "round %d/%d: open loop at %g/s (load average %s)\n", round, o.rounds, o.openRate, loadAverage())
			bs, _, err := runLogged(ctx, o.sub(scBaseline, []string{baseURL}, []int{base.pid()}, "", o.openRate), log)
			if err != nil {
				return fail(err)
			}
			ts, _, err := runLogged(ctx, o.sub(scRateLimit, node.apis, node.pids(), node.token, o.openRate), log)
			if err != nil {
				return fail(err)
			}
			if bs.ServerCPUUs == nil || ts.ServerCPUUs == nil || *bs.ServerCPUUs <= 0 {
				return fail(errors.New("open loop: server CPU not measured"))
			}
			open.base, open.tested = append(open.base, *bs.ServerCPUUs), append(open.tested, *ts.ServerCPUUs)
			open.ratios = append(open.ratios, *ts.ServerCPUUs / *bs.ServerCPUUs)
		}
	}
	if o.openRate > 0 {
		rows = append(rows, open)
	}
	fmt.Fprintf(stdout, "trustbench --suite: %s, %d round(s) of %s (+%s warm-up), %d connections, %d keys %s; load average %s at start, %s at end\n",
		start.Format(time.RFC3339), o.rounds, o.duration, o.warmup, o.connections, o.keys.N, o.keys.Distribution, load0, loadAverage())
	fmt.Fprintf(stdout, "command: %s\n", o.command)
	fmt.Fprintln(stdout, "baseline and trustd each run in their own process; ratios are per round (trustd / baseline), median last.")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "comparison\tbaseline\ttrustd\tratio per round\tmedian\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\n", r.name, joinf(r.base, "%.0f"), joinf(r.tested, "%.0f"),
			joinf(r.ratios, "%.2f"), median(r.ratios), r.target, r.met())
	}
	_ = tw.Flush()
	return 0
}

// runCluster is --cluster N: a 1-node cluster and an N-node cluster (mutual
// TLS, cluster key), all load entering node 1 of each; per check, the CPU
// of every node of the cluster against the one node's.
func runCluster(ctx context.Context, o *options, stdout, log io.Writer) int {
	start := time.Now().UTC()
	load0 := loadAverage()
	fail := func(err error) int { fmt.Fprintln(log, "trustbench:", err); return 1 }
	dir, bin, err := workDir(ctx, o, "cluster", log)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	one, err := startCluster(ctx, bin, filepath.Join(dir, "one"), "one", 1, true, o.nodeEnv(), log)
	if err != nil {
		return fail(err)
	}
	defer one.stop()
	many, err := startCluster(ctx, bin, filepath.Join(dir, "many"), "many", o.cluster, true, o.nodeEnv(), log)
	if err != nil {
		return fail(err)
	}
	defer many.stop()

	n := float64(o.cluster)
	fwd := (n - 1) / n // share of keys node 1 does not own (expected)
	var local, total, forwarded, ratioFwd, cps1, cpsN, cpsRatio, perFrame []float64
	var routed, ratioRouted, routedAsks []float64
	perNode := make([][]float64, o.cluster)
	perNodeRouted := make([][]float64, o.cluster)
	for round := 1; round <= o.rounds; round++ {
		fmt.Fprintf(log, "round %d/%d: one node (load average %s)\n", round, o.rounds, loadAverage())
		s1, _, err := runLogged(ctx, o.sub(scRateLimit, one.apis[:1], one.pids(), one.token, o.rate), log)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(log, "round %d/%d: %d nodes, every request entering node 1 (load average %s)\n", round, o.rounds, o.cluster, loadAverage())
		// A build without the peer frame counters (older than issue 16's
		// session 3) is measured all the same, without asks per frame.
		f0, a0, ferr := many.peerFrames(ctx, 0)
		if ferr != nil {
			fmt.Fprintf(log, "  asks per frame not measured: %v\n", ferr)
		}
		sN, each, err := runLogged(ctx, o.sub(scRateLimit, many.apis[:1], many.pids(), many.token, o.rate), log)
		if err != nil {
			return fail(err)
		}
		f1, a1, err := many.peerFrames(ctx, 0)
		if ferr == nil && err != nil {
			return fail(err)
		}
		if ferr == nil && f1 > f0 {
			perFrame = append(perFrame, (a1-a0)/(f1-f0))
		}
		if s1.ServerCPUUs == nil || sN.ServerCPUUs == nil || len(each) != o.cluster {
			return fail(errors.New("server CPU not measured"))
		}
		l, t := *s1.ServerCPUUs, *sN.ServerCPUUs
		f := (t - (1-fwd)*l) / fwd
		local, total, forwarded = append(local, l), append(total, t), append(forwarded, f)
		ratioFwd = append(ratioFwd, f/l)
		cps1, cpsN = append(cps1, 1e6/l), append(cpsN, 1e6/t)
		cpsRatio = append(cpsRatio, l/t)
		for i, d := range each {
			perNode[i] = append(perNode[i], float64(d.Microseconds())/float64(sN.Requests))
		}
		if !o.clientRouting {
			continue
		}
		fmt.Fprintf(log, "round %d/%d: %d nodes, client-routed: the reference client knows node 1 and learns the ring (load average %s)\n",
			round, o.rounds, o.cluster, loadAverage())
		a0, aerr := many.askTotal(ctx)
		sub := o.sub(scRateLimit, many.apis[:1], many.pids(), many.token, o.rate)
		sub.clientRouting = true
		sR, eachR, err := runLogged(ctx, sub, log)
		if err != nil {
			return fail(err)
		}
		if a1, err := many.askTotal(ctx); aerr == nil && err == nil && sR.Requests > 0 {
			routedAsks = append(routedAsks, (a1-a0)/float64(sR.Requests))
		}
		if sR.ServerCPUUs == nil || len(eachR) != o.cluster {
			return fail(errors.New("client-routed: server CPU not measured"))
		}
		r := *sR.ServerCPUUs
		routed, ratioRouted = append(routed, r), append(ratioRouted, r/l)
		for i, d := range eachR {
			perNodeRouted[i] = append(perNodeRouted[i], float64(d.Microseconds())/float64(sR.Requests))
		}
	}
	// What the nodes burn with no check at all (gossip, liveness renewals,
	// Raft heartbeats, the Go runtime): a fixed cost that N processes pay
	// N times, spread over the checks of a run. Measured after the rounds, with
	// nothing sent.
	idle1, idleN := idleCPU(ctx, one, idleWindow), idleCPU(ctx, many, idleWindow)
	fmt.Fprintf(stdout, "trustbench --cluster %d: %s, %d round(s) of %s (+%s warm-up) rate-limit checks, %d connections, %d keys; every node on this host, mutual TLS between nodes; load average %s at start, %s at end\n",
		o.cluster, start.Format(time.RFC3339), o.rounds, o.duration, o.warmup, o.connections, o.keys.N, load0, loadAverage())
	fmt.Fprintf(stdout, "command: %s\n", o.command)
	if o.nodeProcs > 0 {
		fmt.Fprintf(stdout, "every node runs with GOMAXPROCS=%d.\n", o.nodeProcs)
	}
	if o.rate > 0 {
		fmt.Fprintf(stdout, "open loop at %g checks/s in both setups (CPU per check compared at one rate).\n", o.rate)
	} else {
		fmt.Fprintln(stdout, "closed loop: each setup at its own saturation (per-request costs differ with throughput; --rate compares at one rate).")
	}
	fmt.Fprintf(stdout, "all load enters node 1, which owns about 1/%d of the keys; forwarded CPU per check = (cluster CPU − %.2f × local) / %.2f.\n", o.cluster, 1-fwd, fwd)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tper round\tmedian\ttarget\t")
	row := func(name string, xs []float64, format, target string) {
		if len(xs) == 0 {
			fmt.Fprintf(tw, "%s\tnot measured\t\t%s\t\n", name, target)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t"+format+"\t%s\t\n", name, joinf(xs, format), median(xs), target)
	}
	row("local check, one node: server CPU µs", local, "%.1f", "")
	row(fmt.Sprintf("%d nodes: CPU µs per check, all nodes", o.cluster), total, "%.1f", "")
	for i := range perNode {
		row(fmt.Sprintf("  node %d", i+1), perNode[i], "%.1f", "")
	}
	row("forwarded check: CPU µs (both nodes)", forwarded, "%.1f", "")
	row("asks per frame node 1 sent (warm-up included)", perFrame, "%.1f", "")
	fr := median(ratioFwd)
	row("forwarded / local", ratioFwd, "%.2f", "≤ 1.50: "+metIf(fr <= 1.5))
	row("checks per CPU-second, one node", cps1, "%.0f", "")
	row(fmt.Sprintf("checks per CPU-second, %d nodes", o.cluster), cpsN, "%.0f", "")
	cr := median(cpsRatio)
	row(fmt.Sprintf("%d nodes / one node", o.cluster), cpsRatio, "%.2f", "≥ 0.90: "+metIf(cr >= 0.9))
	row("idle CPU, one node: µs per second", []float64{idle1}, "%.0f", "")
	row(fmt.Sprintf("idle CPU, %d nodes: µs per second", o.cluster), []float64{idleN}, "%.0f", "")
	if o.clientRouting {
		row(fmt.Sprintf("%d nodes client-routed: CPU µs per check, all nodes", o.cluster), routed, "%.1f", "")
		for i := range perNodeRouted {
			row(fmt.Sprintf("  node %d", i+1), perNodeRouted[i], "%.1f", "")
		}
		row("forwarded asks per check, client-routed (warm-up included)", routedAsks, "%.3f", "")
		rr := median(ratioRouted)
		row("client-routed / one node", ratioRouted, "%.2f", "≤ 1.10: "+metIf(rr <= 1.1))
	}
	_ = tw.Flush()
	return 0
}

// idleWindow is how long idleCPU watches the nodes.
const idleWindow = 3 * time.Second

// idleCPU is the CPU tc's nodes use together per second of wall time
// while no request is sent, in µs; -1 when it cannot be read.
func idleCPU(ctx context.Context, tc *testCluster, window time.Duration) float64 {
	cpu := func() (time.Duration, bool) {
		var sum time.Duration
		for _, p := range tc.pids() {
			d, err := procstat.CPU(p)
			if err != nil {
				return 0, false
			}
			sum += d
		}
		return sum, true
	}
	c0, ok0 := cpu()
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return -1
	case <-time.After(window):
	}
	c1, ok1 := cpu()
	if !ok0 || !ok1 {
		return -1
	}
	return float64((c1 - c0).Microseconds()) / time.Since(t0).Seconds()
}

func metIf(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
