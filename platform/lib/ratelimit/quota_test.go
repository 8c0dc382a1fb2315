package ratelimit

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQuotaTake(t *testing.T) {
	t0 := utc(2025, 3, 9, 10, 41, 0, 0)
	type step struct {
		at, cost           int64
		ok                 bool
		remaining, resetAt int64
	}
	tests := []struct {
		name  string
		limit int64
		w     Window
		steps []step
	}{
		{"the sixth request in the window is rejected", 5, Minute, []step{
			{t0, 1, true, 4, t0 + 60*sec},
			{t0 + sec, 1, true, 3, t0 + 60*sec},
			{t0 + 2*sec, 1, true, 2, t0 + 60*sec},
			{t0 + 3*sec, 1, true, 1, t0 + 60*sec},
			{t0 + 4*sec, 1, true, 0, t0 + 60*sec},
			{t0 + 5*sec, 1, false, 0, t0 + 60*sec},
		}},
		{"a new minute starts a fresh quota", 2, Minute, []step{
			{t0, 2, true, 0, t0 + 60*sec},
			{t0 + 59*sec, 1, false, 0, t0 + 60*sec},
			{t0 + 60*sec, 2, true, 0, t0 + 120*sec},
		}},
		{"a refused take consumes nothing", 5, Hour, []step{
			{t0, 4, true, 1, utc(2025, 3, 9, 11, 0, 0, 0)},
			{t0, 2, false, 1, utc(2025, 3, 9, 11, 0, 0, 0)},
			{t0, 1, true, 0, utc(2025, 3, 9, 11, 0, 0, 0)},
		}},
		{"a cost above the limit can never be granted", 5, Day, []step{
			{t0, 6, false, 5, Never},
		}},
		{"a clock going back to a spent window does not reopen it", 1, Minute, []step{
			{t0 + 60*sec, 1, true, 0, t0 + 120*sec},
			{t0, 1, false, 0, t0 + 120*sec},
		}},
		{"a month quota resets on the first of the next month", 3, Month, []step{
			{utc(2024, 2, 29, 23, 0, 0, 0), 3, true, 0, utc(2024, 3, 1, 0, 0, 0, 0)},
			{utc(2024, 2, 29, 23, 59, 59, 999999999), 1, false, 0, utc(2024, 3, 1, 0, 0, 0, 0)},
			{utc(2024, 3, 1, 0, 0, 0, 0), 1, true, 2, utc(2024, 4, 1, 0, 0, 0, 0)},
		}},
		{"a zero limit refuses every positive cost", 0, Minute, []step{
			{t0, 1, false, 0, Never},
			{t0, 0, true, 0, t0 + 60*sec},
		}},
		{"a negative cost counts as zero", 2, Minute, []step{
			{t0, -5, true, 2, t0 + 60*sec},
			{t0, 3, false, 2, Never},
		}},
		{"a huge cost does not overflow the count", 5, Minute, []step{
			{t0, 1, true, 4, t0 + 60*sec},
			{t0, math.MaxInt64, false, 4, Never},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Quota
			for i, s := range tt.steps {
				ok, rem, reset := q.Take(tt.limit, tt.w, s.at, s.cost)
				if ok != s.ok || rem != s.remaining || reset != s.resetAt {
					t.Fatalf("step %d: Take = (%v, %d, %d), want (%v, %d, %d)", i, ok, rem, reset, s.ok, s.remaining, s.resetAt)
				}
			}
		})
	}
}

func TestQuotaRefund(t *testing.T) {
	tests := []struct {
		name       string
		used, cost int64
		want       int64
	}{
		{"a refund gives units back", 4, 3, 1},
		{"a refund never takes used below zero", 2, 5, 0},
		{"a negative refund changes nothing", 2, -5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Quota{Used: tt.used}
			q.Refund(tt.cost)
			if q.Used != tt.want {
				t.Errorf("Used = %d, want %d", q.Used, tt.want)
			}
		})
	}
}

// TestQuotaMatchesModel compares against a map from window start to units
// used, the plainest possible reading of "a fixed quota per window".
func TestQuotaMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for run := 0; run < 500; run++ {
		w := Window(1 + r.IntN(4))
		limit := r.Int64N(20)
		used := map[int64]int64{}
		var newest int64 = math.MinInt64
		var q Quota
		now := utc(2024, 1, 1, 0, 0, 0, 0) + r.Int64N(int64(400*24)*3600*sec)
		span := WindowEnd(w, now) - WindowStart(w, now)
		for step := 0; step < 200; step++ {
			now += r.Int64N(span/2) - span/8
			cost := r.Int64N(limit+3) - 1
			if r.IntN(8) == 0 { // a refund undoes units of the window last counted
				q.Refund(cost)
				used[newest] = max(used[newest]-max(cost, 0), 0)
				continue
			}
			start := max(WindowStart(w, now), newest) // never count against an older window
			newest = start
			ok, rem, _ := q.Take(limit, w, now, cost)
			wok := max(cost, 0) <= limit-used[start]
			if wok {
				used[start] += max(cost, 0)
			}
			if ok != wok || rem != limit-used[start] {
				t.Fatalf("run %d step %d: Take(%d, %v, cost %d) = (%v, %d), model (%v, %d)", run, step, limit, w, cost, ok, rem, wok, limit-used[start])
			}
		}
	}
}
