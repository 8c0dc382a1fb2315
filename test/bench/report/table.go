package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func ms(us int64) string { return fmt.Sprintf("%.3f", float64(us)/1000) }

func (p Percentiles) row() string {
	return fmt.Sprintf("p50 %s\tp90 %s\tp99 %s\tp99.9 %s\tmax %s\tmean %.3f",
		ms(p.P50), ms(p.P90), ms(p.P99), ms(p.P999), ms(p.Max), p.Mean/1000)
}

// WriteTable prints s (and its baseline, if any) for a person.
func WriteTable(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if s.Baseline != nil {
		writeOne(tw, s.Baseline)
		fmt.Fprintln(tw)
	}
	writeOne(tw, s)
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Ratio != nil {
		fmt.Fprintf(w, "\n%s / baseline = %.2f  (throughput; latency p50 ×%.2f, p99 ×%.2f)\n", s.Scenario, s.Ratio.Throughput, s.Ratio.P50, s.Ratio.P99)
	}
	return nil
}

func writeOne(tw io.Writer, s *Summary) {
	loop := fmt.Sprintf("closed loop, %d connections", s.Connections)
	if s.Mode == "open" {
		loop = fmt.Sprintf("open loop at %g req/s, %d connections", s.Rate, s.Connections)
	}
	fmt.Fprintf(tw, "scenario\t%s (%s, %gs measured after %gs warm-up)\n", s.Scenario, loop, s.DurationS, s.WarmupS)
	fmt.Fprintf(tw, "machine\t%d × %s, %s\n", s.Machine.NProc, s.Machine.CPUModel, s.Machine.GoVersion)
	if len(s.Targets) > 0 {
		fmt.Fprintf(tw, "targets\t%s\n", strings.Join(s.Targets, ", "))
	}
	if s.Keys > 0 {
		fmt.Fprintf(tw, "keys\t%d, %s\n", s.Keys, s.Distribution)
	}
	fmt.Fprintf(tw, "requests\t%d in %.2fs\n", s.Requests, s.ElapsedS)
	fmt.Fprintf(tw, "throughput\t%.0f req/s\n", s.Throughput)
	fmt.Fprintf(tw, "latency ms\t%s\n", s.Latency.row())
	for _, op := range s.Ops {
		fmt.Fprintf(tw, "  %s ms\t%s\t(%d requests)\n", op.Name, op.Latency.row(), op.Requests)
	}
	if s.SendLag != nil {
		fmt.Fprintf(tw, "send lag ms\t%s\n", s.SendLag.row())
		fmt.Fprintf(tw, "unsent\t%d (backlog left at the end)\n", s.Unsent)
	}
	fmt.Fprintf(tw, "errors\t%s\n", counts(s.Errors))
	fmt.Fprintf(tw, "decisions\t%s\n", counts(s.Decisions))
	cpu := fmt.Sprintf("client %.1f µs/req", s.ClientCPUUs)
	if s.ServerCPUUs != nil {
		cpu = fmt.Sprintf("server %.1f µs/req, ", *s.ServerCPUUs) + cpu
	}
	fmt.Fprintf(tw, "cpu\t%s\n", cpu)
	for _, n := range s.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
}

// WriteJSON prints s as indented JSON.
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
