package actors

import (
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

func TestReserveAllIsAllOrNone(t *testing.T) {
	cfg := func(c int64) ratelimit.BucketConfig {
		return ratelimit.BucketConfig{Capacity: c, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	}
	s := mustNewSystem(t, func() int64 { return 1_000 })
	all := func(binding ...bool) *ReserveAll {
		t.Helper()
		op := &ReserveAll{Parts: []int{1, 5}, Binding: binding, Ops: []*Reserve{
			{Key: "wide", Bucket: cfg(10), QuotaLimit: 10, QuotaWindow: ratelimit.Hour, Cost: 1},
			{Key: "narrow", Bucket: cfg(1), Cost: 1},
		}}
		if err := s.Ask(1, op, time.Second); err != nil {
			t.Fatal(err)
		}
		return op
	}
	if op := all(true, true); op.Undone || !op.Ops[0].OK || !op.Ops[1].OK {
		t.Fatalf("first: both must take: %+v %+v", op.Ops[0], op.Ops[1])
	}
	op := all(true, true)
	if !op.Undone || !op.Ops[0].OK || op.Ops[1].OK {
		t.Fatalf("second: the narrow bucket refuses and the wide one is given back: undone=%v", op.Undone)
	}
	if op.Ops[0].Remaining != 8 || op.Ops[0].QuotaRemaining != 8 {
		t.Fatalf("the op reports what it saw before the refund: %+v", op.Ops[0])
	}
	// A refusal that does not bind (observe mode) undoes nothing.
	op = all(true, false)
	if op.Undone || !op.Ops[0].OK || op.Ops[1].OK {
		t.Fatalf("observe-mode refusal: undone=%v", op.Undone)
	}
	// The refund of the second op restored bucket and quota: 10 - 1 (first)
	// - 1 (third) taken.
	if op.Ops[0].Remaining != 8 || op.Ops[0].QuotaRemaining != 8 {
		t.Fatalf("the wide bucket was not refunded by the undone op: %+v", op.Ops[0])
	}
}

func TestReserveAllOnAFullTableHoldsNothing(t *testing.T) {
	s := NewSystem(Config{Shards: 1, MaxKeysPerTable: 1}, func() int64 { return 1_000 })
	t.Cleanup(s.Stop)
	cfg := ratelimit.BucketConfig{Capacity: 5, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	op := &ReserveAll{Parts: []int{0, 0}, Binding: []bool{true, true}, Ops: []*Reserve{
		{Key: "a", Bucket: cfg, Cost: 1}, {Key: "b", Bucket: cfg, Cost: 1},
	}}
	if err := s.Ask(0, op, time.Second); !errors.Is(err, ErrTableFull) {
		t.Fatalf("err = %v, want ErrTableFull", err)
	}
	one := &Reserve{Key: "a", Bucket: cfg, Cost: 1}
	if err := s.Ask(0, one, time.Second); err != nil || one.Remaining != 4 {
		t.Fatalf("the failed op kept a's token: remaining %d (%v)", one.Remaining, err)
	}
}

func TestAskAllAnswersEveryOp(t *testing.T) {
	s := mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	ops := []Op{&Consume{ID: "a", Expires: exp}, panicOp{}, &Consume{ID: "a", Expires: exp}, &Consume{ID: "b", Expires: exp}}
	errs := make([]error, len(ops))
	s.AskAll([]int{3, 3, 3, 6}, ops, errs, time.Second)
	if errs[0] != nil || errs[2] != nil || errs[3] != nil || !errors.Is(errs[1], ErrOpPanicked) {
		t.Fatalf("errs = %v", errs)
	}
	if !ops[0].(*Consume).First || ops[2].(*Consume).First || !ops[3].(*Consume).First {
		t.Fatal("ops on one shard did not run in the order given")
	}
	s.Stop()
	s.AskAll([]int{1}, ops[:1], errs, time.Second)
	if !errors.Is(errs[0], ErrStopped) {
		t.Fatalf("after stop: %v", errs[0])
	}
}
