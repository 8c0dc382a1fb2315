package resilience

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func mustNewRetryBudget(t *testing.T, cfg RetryBudgetConfig) RetryBudget {
	t.Helper()
	r, err := NewRetryBudget(cfg)
	if err != nil {
		t.Fatalf("NewRetryBudget(%+v): %v", cfg, err)
	}
	return r
}

func TestRetryBudget(t *testing.T) {
	ttl := 10 * sec
	type op struct {
		at       int64
		deposits int // first attempts made at at
		retries  int // retries attempted at at, after the deposits
		granted  int // how many of them must be granted
	}
	tests := []struct {
		name string
		cfg  RetryBudgetConfig
		ops  []op
	}{
		{"with no reserve, five first attempts buy one retry at ratio 0.2",
			RetryBudgetConfig{TTLNs: ttl, Ratio: 0.2}, []op{{0, 4, 1, 0}, {0, 1, 2, 1}}},
		{"a ratio of 0.1 is exact: ten first attempts buy exactly one retry",
			RetryBudgetConfig{TTLNs: ttl, Ratio: 0.1}, []op{{0, 9, 1, 0}, {0, 1, 1, 1}, {0, 30, 4, 3}}},
		{"the reserve grants MinPerSecond times the TTL with no traffic",
			RetryBudgetConfig{TTLNs: ttl, MinPerSecond: 10}, []op{{0, 0, 101, 100}}},
		{"the defaults grant the reserve plus a fifth of first attempts",
			RetryBudgetConfig{}.Defaults(), []op{{0, 50, 200, 110}}},
		{"deposits expire after the TTL",
			RetryBudgetConfig{TTLNs: ttl, Ratio: 1}, []op{{0, 2, 0, 0}, {ttl - 1, 0, 1, 1}, {ttl, 0, 1, 0}}},
		{"withdrawals expire too, so the reserve works as a rate",
			RetryBudgetConfig{TTLNs: sec, MinPerSecond: 1}, []op{{0, 0, 2, 1}, {sec / 2, 0, 1, 0}, {sec, 0, 1, 1}}},
		{"a clock that went backwards neither expires nor revives credit",
			RetryBudgetConfig{TTLNs: ttl, Ratio: 1}, []op{{5 * sec, 1, 0, 0}, {0, 0, 2, 1}, {14*sec + sec/2, 0, 1, 0}}},
		{"a ratio above one grants several retries per first attempt",
			RetryBudgetConfig{TTLNs: ttl, Ratio: 3}, []op{{0, 1, 4, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustNewRetryBudget(t, tt.cfg)
			base := int64(1_700_000_000) * sec
			for i, o := range tt.ops {
				for range o.deposits {
					r.Deposit(base + o.at)
				}
				granted := 0
				for range o.retries {
					if r.TryWithdraw(base + o.at) {
						granted++
					}
				}
				if granted != o.granted {
					t.Fatalf("op %d at %dns: %d of %d retries granted, want %d", i, o.at, granted, o.retries, o.granted)
				}
			}
		})
	}
}

func TestRetryBudgetZeroValueRefuses(t *testing.T) {
	var r RetryBudget
	r.Deposit(0)
	if r.TryWithdraw(0) || r.Available(0) != 0 {
		t.Fatal("the zero RetryBudget granted a retry")
	}
}

func TestRetryBudgetAvailableDoesNotChangeIt(t *testing.T) {
	r := mustNewRetryBudget(t, RetryBudgetConfig{TTLNs: 10 * sec, MinPerSecond: 1, Ratio: 0.5})
	r.Deposit(0)
	r.Deposit(0)
	before := r
	if got := r.Available(3 * sec); got != 11 {
		t.Fatalf("Available = %d, want 11 (10 reserve + 2×0.5)", got)
	}
	if r != before {
		t.Fatal("Available changed the budget")
	}
}

func TestRetryBudgetConfig(t *testing.T) {
	def := RetryBudgetConfig{}.Defaults()
	if want := (RetryBudgetConfig{TTLNs: 10 * sec, MinPerSecond: 10, Ratio: 0.2}); def != want {
		t.Fatalf("Defaults() = %+v, want %+v", def, want)
	}
	tests := []struct {
		name string
		cfg  RetryBudgetConfig
		want error
	}{
		{"the defaults are valid", def, nil},
		{"zero ratio and zero reserve are valid when set explicitly", RetryBudgetConfig{TTLNs: sec}, nil},
		{"a TTL under a second is refused", RetryBudgetConfig{TTLNs: sec - 1, Ratio: 0.2}, ErrRetryTTL},
		{"a TTL over an hour is refused", RetryBudgetConfig{TTLNs: MaxRetryTTL + 1, Ratio: 0.2}, ErrRetryTTL},
		{"a negative minimum per second is refused", RetryBudgetConfig{TTLNs: sec, MinPerSecond: -1}, ErrMinPerSecond},
		{"a negative ratio is refused", RetryBudgetConfig{TTLNs: sec, Ratio: -0.1}, ErrRetryRatio},
		{"a NaN ratio is refused", RetryBudgetConfig{TTLNs: sec, Ratio: math.NaN()}, ErrRetryRatio},
		{"an infinite ratio is refused", RetryBudgetConfig{TTLNs: sec, Ratio: math.Inf(1)}, ErrRetryRatio},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRetryBudget(tt.cfg)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("NewRetryBudget() error = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestRetryBudgetMatchesModel compares with a list of every deposit and
// withdrawal, summed over the slots still inside the TTL.
func TestRetryBudgetMatchesModel(t *testing.T) {
	type event struct{ slot, amount int64 }
	rng := rand.New(rand.NewPCG(13, 14))
	ratios := []float64{0, 0.05, 0.1, 0.2, 0.3333, 1, 2.5}
	for run := 0; run < 500; run++ {
		cfg := RetryBudgetConfig{
			TTLNs:        sec * (1 + rng.Int64N(20)),
			MinPerSecond: rng.Int64N(4),
			Ratio:        ratios[rng.IntN(len(ratios))],
		}
		r := mustNewRetryBudget(t, cfg)
		width := cfg.TTLNs / budgetSlots
		deposit := int64(math.Round(cfg.Ratio * retryUnit))
		reserve := cfg.MinPerSecond * cfg.TTLNs / 1000
		var events []event
		newest := int64(math.MinInt64)
		now := int64(1_700_000_000)*sec + rng.Int64N(sec)
		for step := 0; step < 500; step++ {
			now += rng.Int64N(width*3) - width/2
			slot := max(now/width, newest) // a clock going back writes to the newest slot
			newest = slot
			balance := reserve
			for _, e := range events {
				if e.slot > slot-budgetSlots {
					balance += e.amount
				}
			}
			if rng.IntN(3) > 0 {
				r.Deposit(now)
				events = append(events, event{slot, deposit})
				continue
			}
			want := balance >= retryUnit
			if want {
				events = append(events, event{slot, -retryUnit})
			}
			if got := r.TryWithdraw(now); got != want {
				t.Fatalf("run %d step %d cfg %+v: TryWithdraw = %v, model %v (balance %d)", run, step, cfg, got, want, balance)
			}
		}
	}
}
