package actors

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

func mustAsk(t testing.TB, s *System, op Op) {
	t.Helper()
	if err := s.Ask(3, op, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestReserveAndRefundByMessages(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour)) // 01:00 UTC, 1970-01-01
	s := mustNewSystem(t, func() int64 { return now.Load() })
	cfg := ratelimit.BucketConfig{Capacity: 3, RefillAmount: 1, RefillInterval: int64(time.Second)}

	type step struct {
		name      string
		advance   time.Duration
		cost      int64
		quota     int64
		ok        bool
		refused   BucketRefusal
		remaining int64
		retry     int64
	}
	steps := []step{
		{"a new key starts full and takes", 0, 1, 0, true, RefusedNone, 2, 0},
		{"a second take leaves one token", 0, 1, 0, true, RefusedNone, 1, 0},
		{"a cost above the tokens left is refused with the exact wait", 0, 2, 0, false, RefusedBucket, 1, int64(time.Second)},
		{"half an interval later the wait has halved", 500 * time.Millisecond, 2, 0, false, RefusedBucket, 1, int64(500 * time.Millisecond)},
		{"a whole interval later one token was credited", 500 * time.Millisecond, 2, 0, true, RefusedNone, 0, 0},
		{"a cost above capacity can never fit", 0, 4, 0, false, RefusedBucket, 0, ratelimit.Never},
	}
	for _, st := range steps {
		now.Add(int64(st.advance))
		op := &Reserve{Key: "ws/p/a", Bucket: cfg, Cost: st.cost}
		mustAsk(t, s, op)
		if op.OK != st.ok || op.Refused != st.refused || op.Remaining != st.remaining || op.RetryAfterNs != st.retry {
			t.Errorf("%s: got ok=%v refused=%v remaining=%d retry=%d, want %v %v %d %d",
				st.name, op.OK, op.Refused, op.Remaining, op.RetryAfterNs, st.ok, st.refused, st.remaining, st.retry)
		}
	}

	t.Run("a refund gives the tokens back", func(t *testing.T) {
		mustAsk(t, s, &Refund{Key: "ws/p/a", Bucket: cfg, Cost: 2})
		op := &Reserve{Key: "ws/p/a", Bucket: cfg, Cost: 2}
		mustAsk(t, s, op)
		if !op.OK || op.Remaining != 0 {
			t.Fatalf("after refund: ok=%v remaining=%d", op.OK, op.Remaining)
		}
	})
	t.Run("a raised capacity in the op takes effect at once", func(t *testing.T) {
		now.Add(int64(time.Hour))
		big := cfg
		big.Capacity = 10
		op := &Reserve{Key: "ws/p/a", Bucket: big, Cost: 10}
		mustAsk(t, s, op)
		if !op.OK || op.Remaining != 0 {
			t.Fatalf("an hour later the bucket should hold the new capacity: ok=%v remaining=%d", op.OK, op.Remaining)
		}
	})
	t.Run("a lowered capacity clamps the tokens held", func(t *testing.T) {
		now.Add(int64(time.Hour))
		op := &Reserve{Key: "ws/p/a", Bucket: cfg, Cost: 1}
		mustAsk(t, s, op)
		if !op.OK || op.Remaining != 2 {
			t.Fatalf("ok=%v remaining=%d, want 2 of the new capacity 3", op.OK, op.Remaining)
		}
	})
}

func TestReserveQuotaIsAllOrNothing(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(90 * time.Second)) // 00:01:30
	s := mustNewSystem(t, func() int64 { return now.Load() })
	cfg := ratelimit.BucketConfig{Capacity: 100, RefillAmount: 100, RefillInterval: int64(time.Millisecond)}
	take := func(cost int64) *Reserve {
		op := &Reserve{Key: "q", Bucket: cfg, QuotaLimit: 5, QuotaWindow: ratelimit.Minute, Cost: cost}
		mustAsk(t, s, op)
		return op
	}
	if op := take(4); !op.OK || op.QuotaRemaining != 1 {
		t.Fatalf("first take: ok=%v quota remaining=%d", op.OK, op.QuotaRemaining)
	}
	op := take(2)
	if op.OK || op.Refused != RefusedQuota {
		t.Fatalf("a take beyond the quota: ok=%v refused=%v", op.OK, op.Refused)
	}
	if op.Remaining != 96 {
		t.Errorf("a quota refusal must give the bucket tokens back: remaining %d, want 96", op.Remaining)
	}
	if want := int64(30 * time.Second); op.RetryAfterNs != want {
		t.Errorf("retry = %d, want the end of the minute window %d", op.RetryAfterNs, want)
	}
	if op.QuotaResetNs != int64(120*time.Second) {
		t.Errorf("quota reset = %d", op.QuotaResetNs)
	}
	t.Run("a refund in the same window credits the quota", func(t *testing.T) {
		first := take(1)
		mustAsk(t, s, &Refund{Key: "q", Bucket: cfg, Cost: 1, QuotaStart: first.QuotaStart, QuotaLimit: 5})
		if op := take(1); !op.OK || op.QuotaRemaining != 0 {
			t.Fatalf("ok=%v quota remaining=%d", op.OK, op.QuotaRemaining)
		}
	})
	t.Run("a refund after the window rolled credits nothing", func(t *testing.T) {
		stale := int64(60 * time.Second)
		now.Store(int64(125 * time.Second))
		fresh := take(5)
		if !fresh.OK {
			t.Fatal("a new window starts with the whole quota")
		}
		mustAsk(t, s, &Refund{Key: "q", Bucket: cfg, Cost: 5, QuotaStart: stale, QuotaLimit: 5})
		if op := take(1); op.OK {
			t.Fatal("a refund naming an old window minted quota in the new one")
		}
	})
}

func TestSweepKeepsBucketsUntilTheyRefill(t *testing.T) {
	st := &State{Now: 0}
	cfg := ratelimit.BucketConfig{Capacity: 2, RefillAmount: 1, RefillInterval: 10}
	(&Reserve{Key: "drained", Bucket: cfg, Cost: 2}).Apply(st)
	(&Reserve{Key: "quota", Bucket: cfg, Cost: 1, QuotaLimit: 9, QuotaWindow: ratelimit.Minute}).Apply(st)
	tab := Slot(st, KindBucket, newBucketTable)
	tab.Sweep(19, 0)
	if tab.Len() != 2 {
		t.Fatalf("before the drained bucket refilled %d keys held, want 2", tab.Len())
	}
	tab.Sweep(20, 0)
	if _, ok := tab.m["drained"]; ok {
		t.Error("a full bucket without quota should be dropped")
	}
	if _, ok := tab.m["quota"]; !ok {
		t.Error("a bucket whose quota window still holds consumption must be kept")
	}
	tab.Sweep(int64(time.Minute), 0)
	if tab.Len() != 0 {
		t.Errorf("after the quota window ended %d keys held, want 0", tab.Len())
	}
}

// TestMemoryPerBucket reports the heap held per live bucket; run with -v
// to see the figure. It fails only if the figure is absurd.
func TestMemoryPerBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 200k buckets")
	}
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("TRUSTD_BUCKET_KEYS")); err == nil && v > 0 {
		n = v // e.g. TRUSTD_BUCKET_KEYS=10000000 go test -run TestMemoryPerBucket -v ./platform/actors/
	}
	cfg := ratelimit.BucketConfig{Capacity: 10, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keys := make([]string, n)
	for i := range keys {
		// The shape of a real key (http/ratelimit.go bucketKey): "l", a
		// 16-character policy tag, 22 characters of scope hash.
		keys[i] = fmt.Sprintf("l%016d%022d", 7, i)
	}
	st := &State{Now: 1}
	start := time.Now()
	for _, k := range keys {
		(&Reserve{Key: k, Bucket: cfg, Cost: 1}).Apply(st)
	}
	elapsed := time.Since(start)
	keyBytes := len(keys[0])
	keys = nil // the table holds the keys now; only its share is measured
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	t.Logf("%d held buckets: %.0f bytes per bucket including its %d-byte key; %.0f ns per first Reserve (%.1f M/s)",
		n, per, keyBytes, float64(elapsed.Nanoseconds())/float64(n), float64(n)/elapsed.Seconds()/1e6)
	if per > 1024 {
		t.Errorf("%.0f bytes per bucket is far more than expected", per)
	}
	runtime.KeepAlive(st)
}
