// Package report turns a load.Result into what a person reads: a summary
// with throughput, latency percentiles, errors by kind and decision counts,
// printed as a table or JSON, plus a latency plot. It formats; it never
// measures and never changes a result.
package report

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/trustd/trustd/test/bench/load"
)

// Percentiles are latencies in microseconds.
type Percentiles struct {
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	P999 int64   `json:"p99_9"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// PercentilesOf reads the report percentiles from h.
func PercentilesOf(h *hdr.Histogram) Percentiles {
	return Percentiles{
		P50: h.ValueAtPercentile(50), P90: h.ValueAtPercentile(90), P99: h.ValueAtPercentile(99),
		P999: h.ValueAtPercentile(99.9), Max: h.Max(), Mean: h.Mean(),
	}
}

// Machine says where a run happened.
type Machine struct {
	NProc     int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
}

// ThisMachine describes the machine this process runs on.
func ThisMachine() Machine {
	return Machine{NProc: runtime.NumCPU(), CPUModel: cpuModel(), GoVersion: runtime.Version()}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// OpSummary is one operation of a mix.
type OpSummary struct {
	Name     string      `json:"name"`
	Requests int64       `json:"requests"`
	Latency  Percentiles `json:"latency_us"`
}

// Summary is everything reported about one run.
type Summary struct {
	Scenario     string           `json:"scenario"`
	Date         time.Time        `json:"date"`
	Machine      Machine          `json:"machine"`
	Command      string           `json:"command"`
	Targets      []string         `json:"targets"`
	Mode         string           `json:"mode"`
	Connections  int              `json:"connections"`
	Rate         float64          `json:"rate,omitempty"`
	DurationS    float64          `json:"duration_s"`
	WarmupS      float64          `json:"warmup_s"`
	ElapsedS     float64          `json:"elapsed_s"`
	Keys         int              `json:"keys,omitempty"`
	Distribution string           `json:"distribution,omitempty"`
	Requests     int64            `json:"requests"`
	Throughput   float64          `json:"throughput_rps"`
	Latency      Percentiles      `json:"latency_us"`
	Ops          []OpSummary      `json:"ops,omitempty"`
	SendLag      *Percentiles     `json:"send_lag_us,omitempty"`
	Unsent       int64            `json:"unsent,omitempty"`
	Errors       ErrorCounts      `json:"errors"`
	Decisions    map[string]int64 `json:"decisions"`
	ServerCPUUs  *float64         `json:"server_cpu_us_per_request,omitempty"`
	ClientCPUUs  float64          `json:"client_cpu_us_per_request"`
	Exhausted    bool             `json:"exhausted,omitempty"`
	Interrupted  bool             `json:"interrupted,omitempty"`
	Notes        []string         `json:"notes,omitempty"`
	Baseline     *Summary         `json:"baseline,omitempty"`
	Ratio        *Ratio           `json:"ratio_to_baseline,omitempty"`
	Timeline     []load.Step      `json:"timeline"`
	TimelineMs   int64            `json:"timeline_step_ms"`

	result *load.Result
}

// ErrorCounts are failures by kind: "transport", "decode", "http-<code>",
// "reply-error" (a Redis error reply).
type ErrorCounts map[string]int64

// Ratio compares a run with the baseline measured in the same invocation.
type Ratio struct {
	// Throughput is scenario throughput / baseline throughput.
	Throughput float64 `json:"throughput"`
	// P50 and P99 are scenario latency / baseline latency.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Meta is what the caller knows about a run that the Result does not.
type Meta struct {
	Scenario     string
	Command      string
	Targets      []string
	Keys         int
	Distribution string
	// ServerCPU is the server's CPU time over the measured phase, if known.
	ServerCPU *time.Duration
	// ClientCPU is this process's CPU time over the same phase.
	ClientCPU time.Duration
	Notes     []string
}

// Summarize builds the summary of r.
func Summarize(r *load.Result, m Meta) *Summary {
	cfg := r.Config
	s := &Summary{
		Scenario: m.Scenario, Date: time.Now().UTC().Truncate(time.Second), Machine: ThisMachine(),
		Command: m.Command, Targets: m.Targets, Mode: "closed", Connections: cfg.Connections,
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), ElapsedS: r.Elapsed.Seconds(),
		Keys: m.Keys, Distribution: m.Distribution, Requests: r.Requests, Throughput: r.Throughput(),
		Latency: PercentilesOf(r.Latency), Unsent: r.Unsent, Errors: ErrorCounts{}, Decisions: map[string]int64{},
		Exhausted: r.Exhausted, Interrupted: r.Interrupted, Notes: m.Notes, Timeline: r.Timeline, TimelineMs: r.TimelineStep.Milliseconds(), result: r,
	}
	if cfg.Rate > 0 {
		s.Mode, s.Rate = "open", cfg.Rate
		lag := PercentilesOf(r.SendLag)
		s.SendLag = &lag
	}
	if len(r.Ops) > 1 {
		for _, op := range r.Ops {
			s.Ops = append(s.Ops, OpSummary{Name: op.Name, Requests: op.Latency.TotalCount(), Latency: PercentilesOf(op.Latency)})
		}
	}
	if r.Transport > 0 {
		s.Errors["transport"] = r.Transport
	}
	if r.Decode > 0 {
		s.Errors["decode"] = r.Decode
	}
	for code, n := range r.Status {
		if code == 0 {
			s.Errors["reply-error"] += n
		} else {
			s.Errors["http-"+strconv.Itoa(code)] += n
		}
	}
	for d, n := range r.Decisions {
		s.Decisions[d.String()] = n
	}
	if r.Requests > 0 {
		if m.ServerCPU != nil {
			us := float64(*m.ServerCPU/time.Nanosecond) / 1e3 / float64(r.Requests)
			s.ServerCPUUs = &us
		}
		s.ClientCPUUs = float64(m.ClientCPU/time.Nanosecond) / 1e3 / float64(r.Requests)
	}
	if r.Exhausted {
		s.Notes = append(s.Notes, "stopped early: the workers ran out of work "+
			(r.ExhaustedAt-cfg.Warmup).Round(time.Millisecond).String()+" into the measured phase")
	}
	if r.Interrupted {
		s.Notes = append(s.Notes, "interrupted before the end; figures cover the time run")
	}
	if r.Requests > 0 && r.Errors()*100 > r.Requests {
		s.Notes = append(s.Notes, "more than 1% of requests failed: the figures do not describe a healthy server")
	}
	return s
}

// CompareTo records base as this run's baseline and computes the ratios.
func (s *Summary) CompareTo(base *Summary) {
	s.Baseline = base
	if base.Throughput <= 0 {
		return
	}
	ratio := func(a, b int64) float64 {
		if b <= 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	s.Ratio = &Ratio{
		Throughput: s.Throughput / base.Throughput,
		P50:        ratio(s.Latency.P50, base.Latency.P50),
		P99:        ratio(s.Latency.P99, base.Latency.P99),
	}
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var b bytes.Buffer
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(k + " " + strconv.FormatInt(m[k], 10))
	}
	return b.String()
}
