package actors

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Many callers asking one shard at once share batches; every op still runs
// exactly once, inside the shard, and the bucket admits exactly its
// capacity.
func TestBatchedAsksStayExactWith64Callers(t *testing.T) {
	s := mustNewSystem(t, func() int64 { return 1_000 }) // no refill: time stands still
	cfg := ratelimit.BucketConfig{Capacity: 1000, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	var took, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				// the same key from every caller, and a key of its own on the
				// same shard, so batches mix keys
				for _, key := range []string{"hot", fmt.Sprintf("own-%d-%d", g, i)} {
					op := &Reserve{Key: key, Bucket: cfg, Cost: 1}
					if err := s.Ask(2, op, 5*time.Second); err != nil {
						t.Error(err)
						return
					}
					if key != "hot" {
						if !op.OK {
							t.Error("a fresh key refused its first token")
						}
						continue
					}
					if op.OK {
						took.Add(1)
					} else {
						refused.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if took.Load() != 1000 || refused.Load() != 64*40-1000 {
		t.Fatalf("hot bucket took %d and refused %d of %d, want exactly 1000 taken", took.Load(), refused.Load(), 64*40)
	}
}

// A caller's asks are applied in the order it made them, even when other
// callers' asks are batched with them.
func TestBatchedAsksKeepEachCallersOrder(t *testing.T) {
	s := mustNewSystem(t, nil)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seq []int
			for i := range 50 {
				op := opFunc(func(st *State) { seq = append(seq, i) })
				if err := s.Ask(g, op, 5*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
			for i, v := range seq {
				if v != i {
					t.Errorf("caller %d: op %d applied as %d", g, i, v)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A panicking op in a batch fails its own ask only; the other asks of the
// batch are answered and the shard keeps its markers.
func TestAPanicInABatchFailsOnlyItsAsk(t *testing.T) {
	s := mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g%2 == 0 {
				if err := s.Ask(1, panicOp{}, 5*time.Second); !errors.Is(err, ErrOpPanicked) {
					t.Errorf("panicking op answered %v", err)
				}
				return
			}
			op := &Consume{ID: fmt.Sprint("tok-", g), Expires: exp}
			if err := s.Ask(1, op, 5*time.Second); err != nil || !op.First {
				t.Errorf("consume beside a panic: %v first=%v", err, op.First)
			}
		}()
	}
	wg.Wait()
	if s.Panics() != 32 {
		t.Fatalf("panics = %d, want 32", s.Panics())
	}
	replay := &Consume{ID: "tok-1", Expires: exp}
	if err := s.Ask(1, replay, time.Second); err != nil || replay.First {
		t.Fatalf("after panics in batches a replay answered %v first=%v", err, replay.First)
	}
}

// A shard that never stops receiving asks still sweeps: a drain message
// applies a bounded number of batches and lets the sweep tick in.
func TestSweepRunsWhileAsksStream(t *testing.T) {
	var now atomic.Int64
	now.Store(1)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	if err := s.Ask(0, &Consume{ID: "x", Expires: 10}, time.Second); err != nil {
		t.Fatal(err)
	}
	now.Store(20)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = s.Ask(0, &Seen{ID: "y"}, time.Second)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
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
			t.Fatal("the expired marker was never swept while asks streamed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkLocalAskParallel is LocalAsk with 64 callers at once on every
// shard, as the HTTP front's connection goroutines ask under load.
func BenchmarkLocalAskParallel(b *testing.B) {
	s := mustNewSystem(b, nil)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := &Seen{ID: "bench"}
		p := int(next.Add(1))
		for pb.Next() {
			if err := s.Ask(p, op, time.Second); err != nil {
				b.Error(err)
				return
			}
			p++
		}
	})
}
