package login

import (
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// memBuckets is the cluster bucket op in memory: ratelimit.Bucket per
// key on a test clock; down makes every call fail (owner unreachable).
type memBuckets struct {
	now  *time.Time
	m    map[string]*ratelimit.Bucket
	down bool
}

func (b *memBuckets) Take(key string, cfg ratelimit.BucketConfig, cost int64) (bool, int64, time.Duration, error) {
	if b.down {
		return false, 0, 0, errors.New("owner unreachable")
	}
	bk := b.m[key]
	if bk == nil {
		nb := ratelimit.NewBucket(cfg, b.now.UnixNano())
		bk = &nb
		b.m[key] = bk
	}
	ok, rem, wait := bk.Take(cfg, b.now.UnixNano(), cost)
	return ok, rem, time.Duration(wait), nil
}

func newTestGuard() (*Guard, *memBuckets, *time.Time) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	b := &memBuckets{now: &now, m: map[string]*ratelimit.Bucket{}}
	return New(b, DefaultPolicy, func() time.Time { return now }), b, &now
}

func TestGuard(t *testing.T) {
	t.Run("failures from many addresses challenge the account, never limit it", func(t *testing.T) {
		g, _, _ := newTestGuard()
		for i := 0; i < 60; i++ {
			addr := "198.51.100." + string(rune('a'+i%26)) + string(rune('a'+i/26))
			v := g.Attempt(addr, "ann@x.io")
			want := Proceed
			if i >= 5 {
				want = Challenge
			}
			if v.Outcome != want {
				t.Fatalf("attempt %d: %v, want %v", i+1, v.Outcome, want)
			}
			g.Failed("ann@x.io")
		}
		if v := g.Attempt("203.0.113.9", "ann@x.io"); v.Outcome != Challenge {
			t.Fatalf("the owner from a fresh address: %v, want Challenge (never Limited)", v.Outcome)
		}
		if v := g.Attempt("203.0.113.9", "bo@x.io"); v.Outcome != Proceed {
			t.Fatalf("another account: %v", v.Outcome)
		}
	})
	t.Run("an account's failures age out, one a minute", func(t *testing.T) {
		g, _, now := newTestGuard()
		for i := 0; i < 5; i++ {
			g.Failed("ann@x.io")
		}
		if g.Attempt("a", "ann@x.io").Outcome != Challenge {
			t.Fatal("not challenged after 5 failures")
		}
		*now = now.Add(time.Minute)
		if g.Attempt("a", "ann@x.io").Outcome != Proceed {
			t.Fatal("still challenged a minute later")
		}
	})
	t.Run("reading the account's state spends nothing", func(t *testing.T) {
		g, _, _ := newTestGuard()
		for i := 0; i < 10; i++ {
			if v := g.Attempt("addr-"+string(rune('a'+i)), "ann@x.io"); v.Outcome != Proceed {
				t.Fatalf("attempt %d without failures: %v", i+1, v.Outcome)
			}
		}
	})
	t.Run("one address is limited after 20, with a wait", func(t *testing.T) {
		g, _, _ := newTestGuard()
		for i := 0; i < 20; i++ {
			if v := g.Attempt("192.0.2.1", ""); v.Outcome != Proceed {
				t.Fatalf("attempt %d: %v", i+1, v.Outcome)
			}
		}
		if v := g.Attempt("192.0.2.1", ""); v.Outcome != Limited || v.RetryAfter <= 0 || v.RetryAfter > 3*time.Second {
			t.Fatalf("the 21st: %+v", v)
		}
	})
	t.Run("Failed says when the next sign-in needs the widget", func(t *testing.T) {
		g, _, _ := newTestGuard()
		for i := 0; i < 4; i++ {
			if g.Failed("ann@x.io") {
				t.Fatalf("challenged after %d failures", i+1)
			}
		}
		if !g.Failed("ann@x.io") || g.Failed("") {
			t.Fatal("the 5th failure does not challenge, or an empty account does")
		}
	})
	t.Run("the node-local fallback decides the same when the owner is unreachable", func(t *testing.T) {
		g, b, _ := newTestGuard()
		b.down = true
		for i := 0; i < 5; i++ {
			if v := g.Attempt("addr-"+string(rune('a'+i)), "ann@x.io"); v.Outcome != Proceed {
				t.Fatalf("attempt %d: %v", i+1, v.Outcome)
			}
			g.Failed("ann@x.io")
		}
		if v := g.Attempt("addr-z", "ann@x.io"); v.Outcome != Challenge {
			t.Fatalf("after 5 failures, owner unreachable: %v", v.Outcome)
		}
		for i := 0; i < 19; i++ {
			g.Attempt("192.0.2.1", "")
		}
		if g.Attempt("192.0.2.1", "").Outcome != Proceed || g.Attempt("192.0.2.1", "").Outcome != Limited {
			t.Fatal("the fallback's address limit is not 20")
		}
	})
}
