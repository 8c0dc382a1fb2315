package resilience

import "testing"

func TestBulkhead(t *testing.T) {
	tests := []struct {
		name     string
		inFlight int
		limit    int
		acquire  bool
		after    int
	}{
		{"an empty bulkhead admits a call", 0, 2, true, 1},
		{"the call that reaches the limit is admitted", 1, 2, true, 2},
		{"a call over the limit is refused", 2, 2, false, 2},
		{"a lowered limit refuses until calls drain", 5, 2, false, 5},
		{"a zero limit admits nothing", 0, 0, false, 0},
		{"a negative count from a bad snapshot reads as empty", -3, 1, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bulkhead{InFlight: tt.inFlight}
			if got := b.TryAcquire(tt.limit); got != tt.acquire || b.InFlight != tt.after {
				t.Errorf("TryAcquire(%d) = %v with %d in flight, want %v with %d", tt.limit, got, b.InFlight, tt.acquire, tt.after)
			}
		})
	}
}

func TestBulkheadReleaseNeverGoesBelowZero(t *testing.T) {
	var b Bulkhead
	b.TryAcquire(1)
	b.Release()
	b.Release() // a retried release
	if b.InFlight != 0 {
		t.Fatalf("InFlight = %d after extra release, want 0", b.InFlight)
	}
	if !b.TryAcquire(1) || b.TryAcquire(1) {
		t.Fatal("an extra release granted capacity that was never taken")
	}
}
