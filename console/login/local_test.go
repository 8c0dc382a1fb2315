package login

import (
	"testing"
	"time"
)

func TestLocalBurstIntervalAndCap(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := newLocal(2)
	steps := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", 0, true}, {"a", 0, false}, // burst of 2
		{"a", 10 * time.Second, true}, {"a", 10 * time.Second, false}, // one per interval
		{"b", 10 * time.Second, true},  // a second address has its own budget
		{"c", 10 * time.Second, false}, // the table is full: a new address is refused
		{"a", 11 * time.Second, false}, // known addresses keep their own state
		{"c", 60 * time.Second, true},  // once a and b are back to a full burst, they are swept
	}
	for i, s := range steps {
		ok, wait := l.take(s.key, 10*time.Second, 2, 1, t0.Add(s.at))
		if ok != s.want {
			t.Fatalf("step %d (%s at %v): allowed %v, want %v", i, s.key, s.at, ok, s.want)
		}
		if !ok && wait <= 0 {
			t.Fatalf("step %d: refused without a wait", i)
		}
	}
	if len(l.tat) > 2 {
		t.Fatalf("%d keys held, cap 2", len(l.tat))
	}
}
