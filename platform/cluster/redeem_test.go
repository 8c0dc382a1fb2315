package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

func redeem(r *Router, key, idem string, ref string) (*actors.Redeem, error) {
	op := &actors.Redeem{ID: key, Expires: time.Now().Add(time.Minute).UnixNano(), Key: idem, Outcome: actors.Outcome{Ref: ref}}
	return op, r.Ask(key, op)
}

func TestARedemptionReachesTheReplicaWithItsOutcome(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	if op, err := redeem(p.a, key, "idem", "first"); err != nil || !op.First {
		t.Fatalf("first redeem through a: first=%v err=%v", op.First, err)
	}
	// The replica (a) holds the record: asked directly, as the owner it
	// becomes when b dies, it answers the first outcome to a retry.
	op := &actors.Redeem{ID: key, Expires: time.Now().Add(time.Minute).UnixNano(), Key: "idem", Outcome: actors.Outcome{Ref: "retry"}}
	if err := p.a.AskLocal(Partition(key), op); err != nil || !op.Replayed || op.Outcome.Ref != "first" {
		t.Fatalf("replica: replayed=%v outcome %+v err=%v", op.Replayed, op.Outcome, err)
	}
	if op, err := redeem(p.b, key, "other", "second"); err != nil || op.First || op.Replayed {
		t.Fatalf("another use through b: first=%v replayed=%v err=%v", op.First, op.Replayed, err)
	}
}

func TestTheReplicasRedemptionWinsAndIsAdoptedByTheOwner(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	// a held the partition before (it is the replica now) and saw the
	// first use, under idempotency key k1.
	held := &actors.Redeem{ID: key, Expires: time.Now().Add(time.Minute).UnixNano(), Key: "k1", Outcome: actors.Outcome{Ref: "first"}}
	if err := p.a.AskLocal(Partition(key), held); err != nil || !held.First {
		t.Fatal(held.First, err)
	}
	if op, err := redeem(p.b, key, "k2", "second"); err != nil || op.First || op.Replayed {
		t.Fatalf("a second use on the new owner: first=%v replayed=%v err=%v, want a duplicate", op.First, op.Replayed, err)
	}
	// The owner adopted the replica's record: k2 stays a duplicate and k1
	// gets the first outcome, whichever node is asked.
	for name, r := range map[string]*Router{"a": p.a, "b": p.b} {
		if op, err := redeem(r, key, "k2", "again"); err != nil || op.First || op.Replayed {
			t.Fatalf("k2 through %s: first=%v replayed=%v err=%v", name, op.First, op.Replayed, err)
		}
		if op, err := redeem(r, key, "k1", "again"); err != nil || !op.Replayed || op.Outcome.Ref != "first" {
			t.Fatalf("k1 through %s: replayed=%v outcome %+v err=%v", name, op.Replayed, op.Outcome, err)
		}
	}
	own := &actors.Redeem{ID: key, Expires: time.Now().Add(time.Minute).UnixNano(), Key: "k1"}
	if err := p.b.AskLocal(Partition(key), own); err != nil || !own.Replayed || own.Outcome.Ref != "first" {
		t.Fatalf("the owner's own record: replayed=%v outcome %+v", own.Replayed, own.Outcome)
	}
}

func TestAnUnreachableReplicaFailsTheRedemptionAndLeavesNoUse(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("a")
	dead := p.a.Ring().Members
	dead[1].PeerAddr = "127.0.0.1:1"
	p.a.SetRing(NewRing(9, dead, "a"))
	if _, err := redeem(p.a, key, "k", "x"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	op := &actors.Redeem{ID: key, Expires: time.Now().Add(time.Minute).UnixNano()}
	if err := p.a.AskLocal(Partition(key), op); err != nil || !op.First {
		t.Fatalf("the owner kept an unconfirmed redemption: first=%v err=%v", op.First, err)
	}
}

// losing is a Forwarder that carries an ask and then loses its answer
// while lose says so: the peer applied the op, the sender saw a timeout.
type losing struct {
	Forwarder
	lose func(replica bool) bool
}

func (l *losing) Forward(m Member, epoch uint64, partition int, op actors.WireOp, replica bool, timeout time.Duration) error {
	if err := l.Forwarder.Forward(m, epoch, partition, op, replica, timeout); err != nil || !l.lose(replica) {
		return err
	}
	return errors.New("answer lost")
}

func TestARetryGetsTheFirstOutcomeWhenTheReplicasAnswerWasLost(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	lost := true
	p.b.fwd = &losing{Forwarder: p.b.fwd, lose: func(replica bool) bool { return replica && lost }}
	// The replica (a) applies the first use; its answer never reaches the
	// owner (b), which reverts its half and answers unavailable.
	if _, err := redeem(p.a, key, "k1", "first"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	lost = false
	if op, err := redeem(p.a, key, "k2", "other"); err != nil || op.First || op.Replayed {
		t.Fatalf("another caller: first=%v replayed=%v err=%v, want a duplicate", op.First, op.Replayed, err)
	}
	for name, r := range map[string]*Router{"a": p.a, "b": p.b} {
		if op, err := redeem(r, key, "k1", "retry"); err != nil || !op.Replayed || op.Outcome.Ref != "first" {
			t.Fatalf("the retry through %s: replayed=%v outcome %+v err=%v", name, op.Replayed, op.Outcome, err)
		}
	}
}

func TestARetryGetsTheFirstOutcomeWhenTheOwnersAnswerWasLost(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	lost := true
	p.a.fwd = &losing{Forwarder: p.a.fwd, lose: func(replica bool) bool { return !replica && lost }}
	// The owner (b) and its replica (a) both apply the first use; the
	// sender (a) never hears the owner's answer.
	if _, err := redeem(p.a, key, "k1", "first"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	lost = false
	if op, err := redeem(p.a, key, "k1", "retry"); err != nil || !op.Replayed || op.Outcome.Ref != "first" {
		t.Fatalf("the retry: replayed=%v outcome %+v err=%v", op.Replayed, op.Outcome, err)
	}
	if op, err := redeem(p.b, key, "k2", "other"); err != nil || op.First || op.Replayed {
		t.Fatalf("another caller: first=%v replayed=%v err=%v, want a duplicate", op.First, op.Replayed, err)
	}
}

func TestAReplicaThatNeverGotTheUseLeavesTheTokenUnburnt(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("b")
	ring := p.b.Ring()
	dead := append([]Member(nil), ring.Members...)
	for i := range dead {
		if dead[i].ID == "a" {
			dead[i].PeerAddr = "127.0.0.1:1"
		}
	}
	p.b.SetRing(NewRing(ring.Epoch+1, dead, "b"))
	if _, err := redeem(p.b, key, "k1", "first"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	p.b.SetRing(NewRing(ring.Epoch+2, ring.Members, "b"))
	if op, err := redeem(p.a, key, "k1", "retry"); err != nil || !op.First {
		t.Fatalf("the retry once the replica answers: first=%v err=%v", op.First, err)
	}
}
