package report

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/test/bench/load"
)

type cycle struct {
	outcomes []load.Outcome
	i        int
}

func (c *cycle) Do() load.Outcome {
	o := c.outcomes[c.i%len(c.outcomes)]
	c.i++
	time.Sleep(50 * time.Microsecond) // a little latency to measure
	return o
}

func mustResult(t *testing.T, rate float64, outcomes ...load.Outcome) *load.Result {
	t.Helper()
	cfg := load.Config{Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Connections: 2, Rate: rate, Ops: []string{"ratelimit", "siteverify"}}
	r, err := load.Run(context.Background(), cfg, func(int) (load.Worker, error) { return &cycle{outcomes: outcomes}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSummaryNamesErrorsAndDecisions(t *testing.T) {
	r := mustResult(t, 0,
		load.Outcome{Decision: load.Allow},
		load.Outcome{Decision: load.Throttle},
		load.Outcome{Kind: load.Status, Status: 429},
		load.Outcome{Kind: load.Status},
		load.Outcome{Kind: load.Decode},
		load.Outcome{Kind: load.Transport},
		load.Outcome{Op: 1, Decision: load.VerifySuccess},
	)
	cpu := 2 * time.Second
	s := Summarize(r, Meta{Scenario: "mixed", ServerCPU: &cpu, ClientCPU: time.Second})
	for _, k := range []string{"transport", "decode", "http-429", "reply-error"} {
		if s.Errors[k] == 0 {
			t.Errorf("error kind %q not reported: %v", k, s.Errors)
		}
	}
	for _, k := range []string{"allow", "throttle", "verify-success"} {
		if s.Decisions[k] == 0 {
			t.Errorf("decision %q not reported: %v", k, s.Decisions)
		}
	}
	if len(s.Ops) != 2 || s.ServerCPUUs == nil || *s.ServerCPUUs <= 0 {
		t.Fatalf("ops %v server cpu %v", s.Ops, s.ServerCPUUs)
	}
	if !strings.Contains(strings.Join(s.Notes, ";"), "failed") {
		t.Fatalf("a run with many failures carries no warning: %v", s.Notes)
	}
}

func TestTableJSONAndRatio(t *testing.T) {
	base := Summarize(mustResult(t, 0, load.Outcome{Decision: load.Allow}), Meta{Scenario: "baseline"})
	s := Summarize(mustResult(t, 2000, load.Outcome{Decision: load.Allow}), Meta{Scenario: "ratelimit", Targets: []string{"http://127.0.0.1:1"}})
	s.CompareTo(base)
	if s.Ratio == nil || s.Ratio.Throughput <= 0 {
		t.Fatalf("no ratio: %+v", s.Ratio)
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ratelimit / baseline = ", "open loop at 2000 req/s", "send lag ms", "p99.9", "decisions", "allow"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Requests != s.Requests || back.Baseline == nil || back.Ratio.Throughput != s.Ratio.Throughput || back.Latency.P99 != s.Latency.P99 {
		t.Fatalf("JSON lost data: %+v", back)
	}
}

func TestPlotIsAPNG(t *testing.T) {
	base := Summarize(mustResult(t, 0, load.Outcome{Decision: load.Allow}), Meta{Scenario: "baseline"})
	s := Summarize(mustResult(t, 0, load.Outcome{Decision: load.Allow}), Meta{Scenario: "ratelimit"})
	s.CompareTo(base)
	var buf bytes.Buffer
	if err := WritePlot(&buf, s); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dy() < 3*300 {
		t.Fatalf("want three panels, image is %v", img.Bounds())
	}
}
