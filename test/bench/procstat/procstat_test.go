package procstat

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want time.Duration
		err  bool
	}{
		{"a plain command", "42 (trustd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0", 3 * time.Second, false},
		{"a command with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0", 30 * time.Millisecond, false},
		{"a truncated line", "7 (x) R 1 2", 0, true},
		{"no command at all", "garbage", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.line))
			if tt.err {
				if !errors.Is(err, ErrBadStat) {
					t.Fatalf("want ErrBadStat, got %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v want %v", got, err, tt.want)
			}
		})
	}
}

func TestOwnProcessIsReadable(t *testing.T) {
	deadline := time.Now().Add(2 * time.Second)
	x := 0
	for time.Now().Before(deadline) && Self() < 20*time.Millisecond {
		x++ // burn a little CPU so both readings are non-zero
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if Self() <= 0 {
		t.Fatal("getrusage reported no CPU")
	}
	if _, err := CPU(1 << 30); err == nil {
		t.Fatal("want an error for a missing process")
	}
}
