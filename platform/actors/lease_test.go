package actors

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a shard clock tests move by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64           { return c.ns.Load() }
func (c *fakeClock) add(d time.Duration)  { c.ns.Add(int64(d)) }
func newFakeClock(start int64) *fakeClock { c := &fakeClock{}; c.ns.Store(start); return c }

// mustAsk (bucket_test.go) runs ops on shard 3.

func TestLeaseLifecycle(t *testing.T) {
	clk := newFakeClock(int64(1_700_000_000) * 1e9)
	s := mustNewSystem(t, clk.now)
	const key = "lease/ws/c1/h"
	exp := func(d time.Duration) int64 { return clk.now() + int64(d) }

	a := &LeaseReserve{Key: key, LeaseID: "a", Capacity: 2, Expires: exp(10 * time.Second)}
	b := &LeaseReserve{Key: key, LeaseID: "b", Capacity: 2, Expires: exp(20 * time.Second)}
	c := &LeaseReserve{Key: key, LeaseID: "c", Capacity: 2, Expires: exp(10 * time.Second)}
	mustAsk(t, s, a)
	mustAsk(t, s, b)
	mustAsk(t, s, c)
	t.Run("slots are granted up to capacity", func(t *testing.T) {
		if !a.Granted || !b.Granted || c.Granted {
			t.Fatalf("granted a=%v b=%v c=%v, want true true false", a.Granted, b.Granted, c.Granted)
		}
	})
	t.Run("fencing tokens increase with every grant", func(t *testing.T) {
		if !(b.Fence > a.Fence && a.Fence > 0) {
			t.Fatalf("fences a=%d b=%d", a.Fence, b.Fence)
		}
	})
	t.Run("a refusal's retry-after is the earliest expiry", func(t *testing.T) {
		if c.RetryAfter != int64(10*time.Second) || c.InUse != 2 {
			t.Fatalf("retry after %v in use %d", time.Duration(c.RetryAfter), c.InUse)
		}
	})
	t.Run("reserving the same lease id again is a retry of the same grant", func(t *testing.T) {
		again := &LeaseReserve{Key: key, LeaseID: "a", Capacity: 2, Expires: exp(time.Hour)}
		mustAsk(t, s, again)
		if !again.Granted || !again.Existing || again.Fence != a.Fence || again.HeldUntil != a.Expires {
			t.Fatalf("retry = %+v, want the original grant %+v", again, a)
		}
	})
	t.Run("renewing with a wrong fence is refused", func(t *testing.T) {
		r := &LeaseRenew{Key: key, LeaseID: "a", Fence: a.Fence + 100, Expires: exp(30 * time.Second)}
		mustAsk(t, s, r)
		if r.Held {
			t.Fatal("renew with a foreign fence succeeded")
		}
	})
	t.Run("renewing extends past the original expiry", func(t *testing.T) {
		r := &LeaseRenew{Key: key, LeaseID: "a", Fence: a.Fence, Expires: exp(30 * time.Second)}
		mustAsk(t, s, r)
		if !r.Held {
			t.Fatal("renew of a live lease refused")
		}
	})
	t.Run("an expired holder frees its slot without a sweep", func(t *testing.T) {
		clk.add(25 * time.Second) // b expired at 20s, a renewed to 30s
		d := &LeaseReserve{Key: key, LeaseID: "d", Capacity: 2, Expires: exp(10 * time.Second)}
		mustAsk(t, s, d)
		if !d.Granted || d.Fence <= b.Fence {
			t.Fatalf("after expiry: %+v", d)
		}
	})
	t.Run("renewing an expired lease is refused", func(t *testing.T) {
		r := &LeaseRenew{Key: key, LeaseID: "b", Fence: b.Fence, Expires: exp(time.Minute)}
		mustAsk(t, s, r)
		if r.Held {
			t.Fatal("renewed an expired lease")
		}
	})
	t.Run("release frees the slot once and renew after release is refused", func(t *testing.T) {
		rel := &LeaseRelease{Key: key, LeaseID: "a", Fence: a.Fence}
		mustAsk(t, s, rel)
		rel2 := &LeaseRelease{Key: key, LeaseID: "a", Fence: a.Fence}
		mustAsk(t, s, rel2)
		r := &LeaseRenew{Key: key, LeaseID: "a", Fence: a.Fence, Expires: exp(time.Minute)}
		mustAsk(t, s, r)
		u := &LeaseUsage{Key: key}
		mustAsk(t, s, u)
		if !rel.Released || rel2.Released || r.Held || u.InUse != 1 {
			t.Fatalf("release %v, again %v, renew %v, in use %d", rel.Released, rel2.Released, r.Held, u.InUse)
		}
	})
}

func TestLeaseFencesStayMonotonicAcrossEviction(t *testing.T) {
	clk := newFakeClock(1e9)
	s := mustNewSystem(t, clk.now)
	var last uint64
	for i := 0; i < 3; i++ {
		r := &LeaseReserve{Key: "k", LeaseID: fmt.Sprint(i), Capacity: 1, Expires: clk.now() + 1e9}
		mustAsk(t, s, r)
		if !r.Granted || r.Fence <= last {
			t.Fatalf("round %d: %+v after fence %d", i, r, last)
		}
		last = r.Fence
		// Long enough for the set to expire and be evicted by the sweep.
		clk.add(time.Duration(leaseIdleEvict) + 2*time.Second)
		waitEvicted(t, s, "k")
	}
}

func waitEvicted(t *testing.T, s *System, key string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var present bool
		if err := s.Ask(3, opFunc(func(st *State) { _, present = Slot(st, KindLease, newLeaseTable).m[key] }), time.Second); err != nil {
			t.Fatal(err)
		}
		if !present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("idle lease set was not evicted")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLeaseCapacityHoldsUnderConcurrency(t *testing.T) {
	s := mustNewSystem(t, nil)
	const capacity, callers = 7, 64
	var granted atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := &LeaseReserve{Key: "k", LeaseID: fmt.Sprint("l", i), Capacity: capacity, Expires: time.Now().Add(time.Minute).UnixNano()}
			if err := s.Ask(3, op, time.Second); err != nil {
				t.Error(err)
				return
			}
			if op.Granted {
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got != capacity {
		t.Fatalf("granted %d leases, want exactly %d", got, capacity)
	}
}
