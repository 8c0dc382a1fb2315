package actors

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func mustNewSystem(t testing.TB, clock Clock) *System {
	t.Helper()
	s := NewSystem(Config{Shards: 4, SweepEvery: 10 * time.Millisecond}, clock)
	t.Cleanup(s.Stop)
	return s
}

func TestConsumeIsSingleUseUnderConcurrency(t *testing.T) {
	s := mustNewSystem(t, nil)
	var first atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := &Consume{ID: "tok-1", Expires: time.Now().Add(time.Minute).UnixNano()}
			if err := s.Ask(7, op, time.Second); err != nil {
				t.Error(err)
				return
			}
			if op.First {
				first.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := first.Load(); got != 1 {
		t.Fatalf("first uses = %d, want exactly 1", got)
	}
}

func TestMarkerTable(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	ask := func(op Op) {
		t.Helper()
		if err := s.Ask(1, op, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		now   int64
		id    string
		first bool
	}{
		{"a new id is consumed on first use", 1_000, "a", true},
		{"the same id is refused before it expires", 1_500, "a", false},
		{"another id is independent", 1_500, "b", true},
		{"an id may be used again once its marker expired", 3_000, "a", true},
	}
	for _, tc := range tests {
		now.Store(tc.now)
		op := &Consume{ID: tc.id, Expires: tc.now + 1_000}
		ask(op)
		if op.First != tc.first {
			t.Errorf("%s: First = %v, want %v", tc.name, op.First, tc.first)
		}
	}
	seen := &Seen{ID: "a"}
	ask(seen)
	if !seen.Used {
		t.Error("Seen reports an unexpired marker as unused")
	}
}

func TestSweepForgetsExpiredMarkers(t *testing.T) {
	var now atomic.Int64
	now.Store(1)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	if err := s.Ask(0, &Consume{ID: "x", Expires: 10}, time.Second); err != nil {
		t.Fatal(err)
	}
	now.Store(20)
	deadline := time.Now().Add(2 * time.Second)
	for {
		var size int
		op := opFunc(func(st *State) { size = len(Slot(st, KindMarker, newMarkerTable).m) })
		if err := s.Ask(0, op, time.Second); err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired marker still held after sweep")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type opFunc func(st *State)

func (f opFunc) Apply(st *State) { f(st) }

func TestAskAfterStop(t *testing.T) {
	s := NewSystem(Config{Shards: 1}, nil)
	s.Stop()
	if err := s.Ask(0, &Seen{ID: "x"}, time.Second); err != ErrStopped {
		t.Fatalf("err = %v, want ErrStopped", err)
	}
}

func BenchmarkLocalAsk(b *testing.B) {
	s := mustNewSystem(b, nil)
	op := &Seen{ID: "bench"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Ask(i, op, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBoundedSweepVisitsAtMostItsBudgetAndEventuallyEverything(t *testing.T) {
	tab := newMarkerTable()
	for i := 0; i < 1000; i++ {
		tab.m[string(rune('a'+i%26))+string(rune(i))] = marker{expires: 10}
	}
	tab.Sweep(20, 100)
	if n := len(tab.m); n < 900 || n == 1000 {
		t.Fatalf("after one sweep with budget 100, %d of 1000 expired entries remain", n)
	}
	for i := 0; i < 20 && len(tab.m) > 0; i++ {
		tab.Sweep(20, 100)
	}
	if n := len(tab.m); n != 0 {
		t.Fatalf("%d expired entries survived repeated bounded sweeps", n)
	}
	tab.m["live"] = marker{expires: 100}
	tab.Sweep(20, 0)
	if len(tab.m) != 1 {
		t.Fatal("an unbounded sweep must keep entries that have not expired")
	}
}

// panicOp is a bug in an op: it panics inside the shard.
type panicOp struct{}

func (panicOp) Apply(*State) { panic("a bug in an op") }

func TestAPanickingOpFailsClosedAndTheShardKeepsItsState(t *testing.T) {
	s := mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	first := &Consume{ID: "tok-1", Expires: exp}
	if err := s.Ask(3, first, time.Second); err != nil || !first.First {
		t.Fatalf("first consume: %v first=%v", err, first.First)
	}
	if err := s.Ask(3, panicOp{}, time.Second); !errors.Is(err, ErrOpPanicked) {
		t.Fatalf("a panicking op answered %v, want ErrOpPanicked", err)
	}
	if s.Panics() != 1 {
		t.Fatalf("panics counted = %d, want 1", s.Panics())
	}
	replay := &Consume{ID: "tok-1", Expires: exp}
	if err := s.Ask(3, replay, time.Second); err != nil {
		t.Fatalf("the shard did not answer after the panic: %v", err)
	}
	if replay.First {
		t.Fatal("the shard lost its markers after a panic: a replay was accepted")
	}
}
