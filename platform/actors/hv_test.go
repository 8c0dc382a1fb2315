package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRedeem(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	tests := []struct {
		name      string
		now       int64
		id, key   string
		first     bool
		replayed  bool
		wantCodes uint32
	}{
		{"the first use is first and stores its outcome", 1_000, "t", "k1", true, false, 7},
		{"a retry with the same key gets the first outcome", 1_100, "t", "k1", false, true, 7},
		{"a retry with another key is a duplicate", 1_200, "t", "k2", false, false, 0},
		{"a retry without a key is a duplicate", 1_300, "t", "", false, false, 0},
		{"an id first used without a key", 1_300, "u", "", true, false, 9},
		{"is a duplicate on an empty key again", 1_400, "u", "", false, false, 0},
		{"after expiry the id is forgotten", 5_000, "t", "k9", true, false, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now.Store(tc.now)
			op := &Redeem{ID: tc.id, Expires: tc.now + 2_000, Key: tc.key, Outcome: Outcome{Codes: tc.wantCodes, Ref: "ref"}}
			if tc.replayed || (!tc.first && !tc.replayed) {
				op.Outcome = Outcome{Codes: 99}
			}
			if err := s.Ask(3, op, time.Second); err != nil {
				t.Fatal(err)
			}
			if op.First != tc.first || op.Replayed != tc.replayed {
				t.Fatalf("first=%v replayed=%v, want %v %v", op.First, op.Replayed, tc.first, tc.replayed)
			}
			if tc.replayed && (op.Outcome.Codes != tc.wantCodes || op.Outcome.Ref != "ref") {
				t.Fatalf("replayed outcome %+v, want codes %d", op.Outcome, tc.wantCodes)
			}
		})
	}
}

func TestRedeemIsSingleUseUnderConcurrency(t *testing.T) {
	s := mustNewSystem(t, nil)
	var first, replayed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := &Redeem{ID: "tok", Expires: time.Now().Add(time.Minute).UnixNano(), Key: "same"}
			if err := s.Ask(1, op, time.Second); err != nil {
				t.Error(err)
				return
			}
			if op.First {
				first.Add(1)
			}
			if op.Replayed {
				replayed.Add(1)
			}
		}()
	}
	wg.Wait()
	if first.Load() != 1 || replayed.Load() != 199 {
		t.Fatalf("first=%d replayed=%d, want 1 and 199", first.Load(), replayed.Load())
	}
}

func TestVelocity(t *testing.T) {
	var now atomic.Int64
	s := mustNewSystem(t, func() int64 { return now.Load() })
	hit := func(at int64) *Hit {
		t.Helper()
		now.Store(at)
		op := &Hit{Key: "ip", Window: 60e9}
		if err := s.Ask(0, op, time.Second); err != nil {
			t.Fatal(err)
		}
		return op
	}
	const sec = int64(1e9)
	for i := int64(0); i < 30; i++ {
		hit(i * sec)
	}
	if h := hit(30 * sec); h.Rate != 31 || h.Baseline != 0 {
		t.Fatalf("within the first window: rate %v baseline %v, want 31 and 0", h.Rate, h.Baseline)
	}
	// Half-way through the next window, half of the previous one counts.
	if h := hit(90 * sec); h.Rate != 1+31*0.5 || h.Baseline != 31 {
		t.Fatalf("half-way into the second window: rate %v baseline %v", h.Rate, h.Baseline)
	}
	// After a long quiet spell the rate is back to this hit alone and the
	// baseline has decayed.
	h := hit(3600 * sec)
	if h.Rate != 1 || h.Baseline >= 31 || h.Baseline <= 0 {
		t.Fatalf("after an hour: rate %v baseline %v", h.Rate, h.Baseline)
	}
}

func TestPeekHitReadsTheCounterWithoutCounting(t *testing.T) {
	var now atomic.Int64
	s := mustNewSystem(t, func() int64 { return now.Load() })
	const sec = int64(1e9)
	ask := func(op Op) {
		t.Helper()
		if err := s.Ask(0, op, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	peek := func(at int64) *PeekHit {
		t.Helper()
		now.Store(at)
		op := &PeekHit{Key: "agf/a", Window: 60e9}
		ask(op)
		return op
	}
	held := func() int {
		t.Helper()
		n := 0
		ask(opFunc(func(st *State) { n = len(Slot(st, KindChallengeRate, newChallengeRateTable).m) }))
		return n
	}
	t.Run("an unknown key reads zero and is not created", func(t *testing.T) {
		for range 5 {
			if p := peek(0); p.Rate != 0 || p.Baseline != 0 {
				t.Fatalf("rate %v baseline %v, want 0 and 0", p.Rate, p.Baseline)
			}
		}
		if n := held(); n != 0 {
			t.Fatalf("%d entries after peeks only, want 0", n)
		}
	})
	// Three hits, then any number of peeks: each peek reads three and what
	// a hit at the same moment would report, less its own event.
	for i := int64(0); i < 3; i++ {
		now.Store(i * sec)
		ask(&Hit{Key: "agf/a", Window: 60e9})
	}
	t.Run("peeks read the hits and count nothing", func(t *testing.T) {
		for range 10 {
			if p := peek(10 * sec); p.Rate != 3 || p.Baseline != 0 {
				t.Fatalf("rate %v baseline %v, want 3 and 0", p.Rate, p.Baseline)
			}
		}
	})
	t.Run("a peek rolls the window as a hit would, without moving it", func(t *testing.T) {
		p := peek(90 * sec)
		if p.Rate != 3*0.5 || p.Baseline != 3 {
			t.Fatalf("half-way into the second window: rate %v baseline %v, want 1.5 and 3", p.Rate, p.Baseline)
		}
		now.Store(90 * sec)
		h := &Hit{Key: "agf/a", Window: 60e9}
		ask(h)
		if h.Rate != p.Rate+1 || h.Baseline != p.Baseline {
			t.Fatalf("the hit after the peek: rate %v baseline %v, want %v and %v", h.Rate, h.Baseline, p.Rate+1, p.Baseline)
		}
	})
}

func TestAssessmentExpires(t *testing.T) {
	var now atomic.Int64
	now.Store(100)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	store := &Redeem{ID: "tok/a1", Expires: 200, Record: &Verification{ID: "a1", SiteID: "s", Score: 900, Expires: 200}}
	if err := s.Ask(2, store, time.Second); err != nil {
		t.Fatal(err)
	}
	get := &GetVerification{ID: "a1"}
	if err := s.Ask(2, get, time.Second); err != nil || !get.Found || get.A.Score != 900 {
		t.Fatalf("stored assessment not found: %v %+v", err, get)
	}
	now.Store(200)
	get = &GetVerification{ID: "a1"}
	if err := s.Ask(2, get, time.Second); err != nil || get.Found {
		t.Fatalf("expired assessment still found: %+v", get)
	}
}

func TestVerificationIDsNameTheirPartition(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range []int{0, 1, 255, 256, 1023} {
		for i := 0; i < 50; i++ {
			id := NewVerificationID(p)
			if seen[id] {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
			got, ok := VerificationPartition(id, 1024)
			if !ok || got != p || id[14] != '4' {
				t.Fatalf("id %s: partition %d ok %v, want %d (and a version-4 UUID)", id, got, ok, p)
			}
		}
	}
	for _, bad := range []string{"", "not-a-uuid", "00000000-0000-4000-8000-00000000zzzz", "00000000-0000-4000-8000-000000000fff"} {
		if _, ok := VerificationPartition(bad, 1024); ok {
			t.Errorf("%q must not name a partition", bad)
		}
	}
}

func TestRedeemStoresItsRecordOnlyOnFirstUse(t *testing.T) {
	st := &State{Now: 1}
	rec := &Verification{ID: "a1", SiteID: "s", Expires: 100}
	first := &Redeem{ID: "tok", Expires: 50, Record: rec}
	first.Apply(st)
	get := &GetVerification{ID: "a1"}
	get.Apply(st)
	if !first.First || !get.Found || get.A.SiteID != "s" {
		t.Fatalf("first use: First=%v, record found=%v", first.First, get.Found)
	}
	again := &Redeem{ID: "tok", Expires: 50, Record: &Verification{ID: "a2", Expires: 100}}
	again.Apply(st)
	get2 := &GetVerification{ID: "a2"}
	get2.Apply(st)
	if again.First || get2.Found {
		t.Fatal("a duplicate use must not store its record")
	}
}
