package report

import (
	"fmt"
	"io"
	"math"

	"github.com/trustd/trustd/test/bench/plot"
)

// maxNines caps the percentile axis at 99.999%.
const maxNines = 5

// WritePlot draws s (and its baseline) as a PNG: latency by percentile on a
// "nines" axis (x = -log10(1-q), so 90%, 99%, 99.9% are evenly spaced),
// latency over time, and throughput over time.
func WritePlot(w io.Writer, s *Summary) error {
	runs := []*Summary{s}
	if s.Baseline != nil {
		runs = append(runs, s.Baseline)
	}
	pct := plot.Panel{Title: "latency by percentile (" + s.Mode + " loop, warm-up excluded)", XLabel: "percentile", YLabel: "latency (ms)"}
	over := plot.Panel{Title: "latency over time (warm-up included)", XLabel: "time since start (s)", YLabel: "latency (ms)"}
	tput := plot.Panel{Title: "throughput over time (answers received)", XLabel: "time since start (s)", YLabel: "requests/s"}
	top := 0.0
	for i, r := range runs {
		col := plot.Palette[(2*i)%len(plot.Palette)]
		alt := plot.Palette[(2*i+1)%len(plot.Palette)]
		xs, ys := percentileCurve(r)
		pct.Series = append(pct.Series, plot.Series{Name: r.Scenario, Color: col, X: xs, Y: ys})
		if len(xs) > 0 {
			top = max(top, xs[len(xs)-1])
		}
		step := float64(max(r.TimelineMs, 1)) / 1000
		var t, mean, mx, tr, rps []float64
		for i, v := range r.Timeline {
			x := (float64(i) + 0.5) * step
			if v.Completed > 0 {
				tr = append(tr, x)
				rps = append(rps, float64(v.Completed)/step)
			}
			if v.Count == 0 {
				continue
			}
			t = append(t, x)
			mean = append(mean, v.MeanUs()/1000)
			mx = append(mx, float64(v.MaxUs)/1000)
		}
		over.Series = append(over.Series,
			plot.Series{Name: r.Scenario + " mean", Color: col, X: t, Y: mean},
			plot.Series{Name: r.Scenario + " max", Color: alt, X: t, Y: mx})
		tput.Series = append(tput.Series, plot.Series{Name: r.Scenario, Color: col, X: tr, Y: rps})
	}
	if s.WarmupS > 0 {
		m := []plot.Tick{{V: s.WarmupS, Label: "warm-up ends"}}
		over.Markers, tput.Markers = m, m
	}
	labels := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}
	for n := 0; n <= int(math.Ceil(top)) && n < len(labels); n++ {
		pct.XTicks = append(pct.XTicks, plot.Tick{V: float64(n), Label: labels[n]})
	}
	if len(pct.XTicks) < 2 {
		pct.XTicks = []plot.Tick{{V: 0, Label: "0%"}, {V: 1, Label: "90%"}}
	}
	if err := plot.Render(w, 1000, pct, over, tput); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// percentileCurve samples the latency histogram at evenly spaced "nines",
// up to what the sample count supports.
func percentileCurve(s *Summary) (xs, ys []float64) {
	if s.result == nil || s.result.Latency.TotalCount() == 0 {
		return nil, nil
	}
	h := s.result.Latency
	limit := min(math.Log10(float64(h.TotalCount())), maxNines)
	for x := 0.0; x <= limit+1e-9; x += 0.05 {
		q := 100 * (1 - math.Pow(10, -x))
		xs = append(xs, x)
		ys = append(ys, float64(h.ValueAtPercentile(q))/1000)
	}
	xs = append(xs, limit)
	ys = append(ys, float64(h.Max())/1000)
	return xs, ys
}
