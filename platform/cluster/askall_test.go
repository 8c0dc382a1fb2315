package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// keysOn returns two keys owned by id whose partitions map to one shard
// (same) or to two.
func (p *pair) keysOn(id string, same bool) []string {
	r, sys := p.a.Ring(), p.a.Local()
	first := p.keyOwnedBy(id)
	out := []string{first}
	for k := 0; ; k++ {
		key := fmt.Sprintf("other-%d", k)
		if r.Members[r.Owner(Partition(key))].ID != id {
			continue
		}
		if (sys.ShardOf(Partition(key)) == sys.ShardOf(Partition(first))) == same {
			return append(out, key)
		}
	}
}

func TestAskTogetherRunsOnlyWhenOneLocalShardHoldsEveryKey(t *testing.T) {
	p := mustNewPair(t)
	cfg := ratelimit.BucketConfig{Capacity: 3, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	try := func(keys []string) (bool, *actors.ReserveAll) {
		t.Helper()
		op := &actors.ReserveAll{Binding: []bool{true, true}}
		for _, k := range keys {
			op.Ops = append(op.Ops, &actors.Reserve{Key: k, Bucket: cfg, Cost: 1})
		}
		op.Parts = make([]int, len(keys))
		ok, err := p.a.AskTogether(keys, op.Parts, op)
		if err != nil {
			t.Fatal(err)
		}
		return ok, op
	}
	if ok, _ := try([]string{p.keyOwnedBy("a"), p.keyOwnedBy("b")}); ok {
		t.Fatal("ran together although one key is owned by the other node")
	}
	if ok, _ := try(p.keysOn("a", false)); ok {
		t.Fatal("ran together although the keys are on two shards")
	}
	keys := p.keysOn("a", true)
	ok, op := try(keys)
	if !ok || !op.Ops[0].OK || !op.Ops[1].OK || op.Parts[0] != Partition(keys[0]) || op.Parts[1] != Partition(keys[1]) {
		t.Fatalf("one shard holds both keys: ok=%v %+v", ok, op)
	}
}

func TestAskAllAnswersLocalAndForwardedOps(t *testing.T) {
	p := mustNewPair(t)
	exp := time.Now().Add(time.Minute).UnixNano()
	keys := append(p.keysOn("a", false), p.keyOwnedBy("b"))
	var ops []actors.Op
	for _, k := range keys {
		ops = append(ops, &actors.Consume{ID: k, Expires: exp})
	}
	errs := make([]error, len(ops))
	p.a.AskAll(keys, ops, errs)
	for i, op := range ops {
		if errs[i] != nil || !op.(*actors.Consume).First {
			t.Fatalf("op %d: %v first=%v", i, errs[i], op.(*actors.Consume).First)
		}
	}
	// Consume is replicated: the replica (b for a's keys) remembers it too.
	again := &actors.Consume{ID: keys[0], Expires: exp}
	if err := p.b.AskLocal(Partition(keys[0]), again); err != nil || again.First {
		t.Fatalf("the replica did not see the consume: %v first=%v", err, again.First)
	}
}

// A frame's asks served together (those that need no replica, or are
// asked as the replica) are fenced one by one as Serve fences
// them: owned ones run (in order on one shard), a partition this node does
// not own answers misdirected unless asked as its replica.
func TestServeTogetherFencesEachAsk(t *testing.T) {
	p := mustNewPair(t)
	mine, theirs := p.keyOwnedBy("b"), p.keyOwnedBy("a")
	exp := time.Now().Add(time.Minute).UnixNano()
	one := ratelimit.BucketConfig{Capacity: 1, RefillAmount: 1, RefillInterval: int64(time.Hour)}
	first := &actors.Reserve{Key: mine, Bucket: one, Cost: 1}
	second := &actors.Reserve{Key: mine, Bucket: one, Cost: 1}
	asReplica := &actors.Consume{ID: "r", Expires: exp}
	misdirected := &actors.Seen{ID: "x"}
	replicated := &actors.Consume{ID: "z", Expires: exp} // needs its replica: served alone
	epoch := p.b.Ring().Epoch
	asks := []FramedAsk{
		{Epoch: epoch, Partition: Partition(mine), Op: first},
		{Epoch: epoch, Partition: Partition(theirs), Op: misdirected},
		{Epoch: epoch, Partition: Partition(mine), Op: second},
		{Epoch: epoch, Partition: Partition(theirs), Op: asReplica, Replica: true},
		{Epoch: epoch, Partition: Partition(mine), Op: replicated},
	}
	epochs, errs := make([]uint64, len(asks)), make([]error, len(asks))
	p.b.ServeTogether(asks, epochs, errs)
	var mis *MisdirectedError
	if errs[0] != nil || errs[2] != nil || errs[3] != nil || errs[4] != nil || !errors.As(errs[1], &mis) {
		t.Fatalf("errs = %v", errs)
	}
	if !first.OK || second.OK || !asReplica.First {
		t.Fatalf("first=%v second=%v replica=%v: ops on one shard must run in frame order", first.OK, second.OK, asReplica.First)
	}
	again := &actors.Consume{ID: "z", Expires: exp}
	if err := p.a.AskLocal(Partition(mine), again); !replicated.First || err != nil || again.First {
		t.Fatalf("a replicated op in a frame did not reach its replica: first=%v replica first=%v (%v)", replicated.First, again.First, err)
	}
	for i, e := range epochs {
		if e != epoch {
			t.Fatalf("ask %d answered epoch %d, want %d", i, e, epoch)
		}
	}
}
