package ratelimit

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func utc(y int, m time.Month, d, hh, mm, ss, ns int) int64 {
	return time.Date(y, m, d, hh, mm, ss, ns, time.UTC).UnixNano()
}

func TestWindowBounds(t *testing.T) {
	tests := []struct {
		name       string
		w          Window
		now        int64
		start, end int64
	}{
		{"a minute window starts on the minute", Minute, utc(2025, 3, 9, 10, 41, 59, 999), utc(2025, 3, 9, 10, 41, 0, 0), utc(2025, 3, 9, 10, 42, 0, 0)},
		{"an hour window starts on the hour", Hour, utc(2025, 3, 9, 10, 41, 5, 0), utc(2025, 3, 9, 10, 0, 0, 0), utc(2025, 3, 9, 11, 0, 0, 0)},
		{"a day window starts at UTC midnight", Day, utc(2025, 3, 9, 23, 59, 59, 0), utc(2025, 3, 9, 0, 0, 0, 0), utc(2025, 3, 10, 0, 0, 0, 0)},
		{"the first instant of a window belongs to it", Day, utc(2025, 3, 9, 0, 0, 0, 0), utc(2025, 3, 9, 0, 0, 0, 0), utc(2025, 3, 10, 0, 0, 0, 0)},
		{"February of a leap year has 29 days", Month, utc(2024, 2, 15, 8, 0, 0, 0), utc(2024, 2, 1, 0, 0, 0, 0), utc(2024, 3, 1, 0, 0, 0, 0)},
		{"February of a common year has 28 days", Month, utc(2023, 2, 28, 23, 59, 59, 999999999), utc(2023, 2, 1, 0, 0, 0, 0), utc(2023, 3, 1, 0, 0, 0, 0)},
		{"2000 is a leap year because it divides by 400", Month, utc(2000, 2, 29, 12, 0, 0, 0), utc(2000, 2, 1, 0, 0, 0, 0), utc(2000, 3, 1, 0, 0, 0, 0)},
		{"2100 is a common year because it divides by 100", Month, utc(2100, 2, 28, 12, 0, 0, 0), utc(2100, 2, 1, 0, 0, 0, 0), utc(2100, 3, 1, 0, 0, 0, 0)},
		{"a 30-day month ends on the 30th", Month, utc(2025, 4, 30, 23, 0, 0, 0), utc(2025, 4, 1, 0, 0, 0, 0), utc(2025, 5, 1, 0, 0, 0, 0)},
		{"December rolls into January of the next year", Month, utc(2025, 12, 31, 23, 59, 59, 0), utc(2025, 12, 1, 0, 0, 0, 0), utc(2026, 1, 1, 0, 0, 0, 0)},
		{"an instant before 1970 floors to the earlier minute", Minute, -1, -60 * sec, 0},
		{"a month before 1970 is found too", Month, utc(1969, 12, 31, 0, 0, 0, 0), utc(1969, 12, 1, 0, 0, 0, 0), 0},
		{"a month start before the int64 range saturates", Month, math.MinInt64, math.MinInt64, utc(1677, 10, 1, 0, 0, 0, 0)},
		{"a month end after the int64 range saturates", Month, math.MaxInt64, utc(2262, 4, 1, 0, 0, 0, 0), math.MaxInt64},
		{"a minute start before the int64 range saturates", Minute, math.MinInt64, math.MinInt64, math.MinInt64 - math.MinInt64%(60*sec)},
		{"a minute end after the int64 range saturates", Minute, math.MaxInt64, math.MaxInt64 - math.MaxInt64%(60*sec), math.MaxInt64},
		{"an invalid window spans all time", Window(0), 42, math.MinInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WindowStart(tt.w, tt.now); got != tt.start {
				t.Errorf("WindowStart = %v, want %v", time.Unix(0, got).UTC(), time.Unix(0, tt.start).UTC())
			}
			if got := WindowEnd(tt.w, tt.now); got != tt.end {
				t.Errorf("WindowEnd = %v, want %v", time.Unix(0, got).UTC(), time.Unix(0, tt.end).UTC())
			}
		})
	}
}

// TestWindowMatchesTimePackage uses the time package as the reference model
// over the whole int64 range.
func TestWindowMatchesTimePackage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC()
	ref := func(w Window, tm time.Time) (time.Time, time.Time) {
		switch w {
		case Minute, Hour, Day:
			d := map[Window]time.Duration{Minute: time.Minute, Hour: time.Hour, Day: 24 * time.Hour}[w]
			s := tm.Truncate(d) // zero time is a UTC midnight, so this aligns
			return s, s.Add(d)
		}
		s := time.Date(tm.Year(), tm.Month(), 1, 0, 0, 0, 0, time.UTC)
		return s, s.AddDate(0, 1, 0)
	}
	check := func(what string, w Window, now, got int64, want time.Time) {
		t.Helper()
		switch {
		case want.Before(lo):
			if got != math.MinInt64 {
				t.Fatalf("%s(%v, %d) = %d, want saturation at MinInt64", what, w, now, got)
			}
		case want.After(hi):
			if got != math.MaxInt64 {
				t.Fatalf("%s(%v, %d) = %d, want saturation at MaxInt64", what, w, now, got)
			}
		case !time.Unix(0, got).UTC().Equal(want):
			t.Fatalf("%s(%v, %v) = %v, want %v", what, w, time.Unix(0, now).UTC(), time.Unix(0, got).UTC(), want)
		}
	}
	for i := 0; i < 200_000; i++ {
		now := int64(r.Uint64())
		if i%2 == 0 { // half the draws near today, where quotas really live
			now = utc(2020, 1, 1, 0, 0, 0, 0) + r.Int64N(int64(20*365*24*time.Hour))
		}
		w := Window(1 + r.IntN(4))
		s, e := ref(w, time.Unix(0, now).UTC())
		check("WindowStart", w, now, WindowStart(w, now), s)
		check("WindowEnd", w, now, WindowEnd(w, now), e)
	}
}

func TestParseWindow(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Window
		err  error
	}{
		{"minute parses", "minute", Minute, nil},
		{"hour parses", "hour", Hour, nil},
		{"day parses", "day", Day, nil},
		{"month parses", "month", Month, nil},
		{"a capitalised name is refused", "Month", 0, ErrWindow},
		{"week is not a quota window", "week", 0, ErrWindow},
		{"an empty name is refused", "", 0, ErrWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWindow(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("ParseWindow(%q) = (%v, %v), want (%v, %v)", tt.in, got, err, tt.want, tt.err)
			}
			if err == nil && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
	if got := Window(9).String(); got != "invalid" {
		t.Errorf("Window(9).String() = %q, want invalid", got)
	}
}
