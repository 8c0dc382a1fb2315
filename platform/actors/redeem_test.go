package actors

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// The redemption protocol driven by messages, as cluster.Router.own runs
// it (owner applies, the replica op crosses the wire, the owner merges the
// replica's answer and settles, or reverts when the replica did not
// answer), with the faults a real network adds at each step.

type fault int

const (
	noFault fault = iota
	// lostToReplica: the replica op never arrives; the owner reverts.
	lostToReplica
	// lostFromReplica: the replica applies it, its answer is lost; the
	// owner reverts.
	lostFromReplica
	// lostToCaller: owner and replica complete, the caller's answer is
	// lost (the sender's ask timed out, the node it asked was killed).
	lostToCaller
	// ownerLate: the owner's local ask timed out but the op ran later on
	// the owner alone: no replica op, no revert.
	ownerLate
)

const redeemPartition = 5

// redeemThrough runs op with owner and replica as the router does; ok is
// false when the caller saw no answer (503).
func redeemThrough(t *testing.T, owner, replica *System, op *Redeem, f fault) (ok bool) {
	t.Helper()
	ask := func(s *System, o Op) {
		t.Helper()
		if err := s.Ask(redeemPartition, o, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ask(owner, op)
	if f == ownerLate {
		return false
	}
	rop := op.ReplicaOp()
	if rop == nil {
		return true
	}
	if f == lostToReplica {
		if rev := op.Revert(); rev != nil {
			ask(owner, rev)
		}
		return false
	}
	in, err := rop.AppendOp(nil)
	if err != nil {
		t.Fatal(err)
	}
	onReplica := &Redeem{}
	if err := onReplica.UnmarshalOp(in); err != nil {
		t.Fatal(err)
	}
	ask(replica, onReplica)
	res, err := onReplica.AppendResult(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f == lostFromReplica {
		if rev := op.Revert(); rev != nil {
			ask(owner, rev)
		}
		return false
	}
	if err := rop.UnmarshalResult(res); err != nil {
		t.Fatal(err)
	}
	op.MergeReplica(rop)
	if fix := op.Adopt(); fix != nil {
		ask(owner, fix)
	}
	return f != lostToCaller
}

// redeemStep is one caller's attempt: through owner (with replica) of the
// nodes, with an idempotency key (a caller), and what it must answer:
// "first", "replayed sN" (the first outcome of step N), "duplicate" or
// "unavailable".
type redeemStep struct {
	owner, replica int
	key            string
	fault          fault
	expired        bool // the attempt comes past the token's lifetime
	want           string
}

func TestRedeemRetriesAcrossFaultsGetTheirFirstOutcome(t *testing.T) {
	tests := []struct {
		name  string
		steps []redeemStep
	}{
		{"owner applied, replica applied, answer lost: the retry gets the first outcome", []redeemStep{
			{0, 1, "k1", lostToCaller, false, "unavailable"},
			{0, 1, "k1", noFault, false, "replayed s0"},
			{0, 1, "k2", noFault, false, "duplicate"},
			{1, 2, "k1", noFault, false, "replayed s0"}, // the owner died: its successor answers alike
			{1, 2, "k2", noFault, false, "duplicate"},
		}},
		{"the replica applied, its answer was lost and the owner reverted: the retry meets its use on the replica", []redeemStep{
			{0, 1, "k1", lostFromReplica, false, "unavailable"},
			{0, 1, "k1", noFault, false, "replayed s0"},
			{0, 1, "k2", noFault, false, "duplicate"},
			{1, 2, "k1", noFault, false, "replayed s0"},
		}},
		{"another caller meets the use only the replica holds", []redeemStep{
			{0, 1, "k1", lostFromReplica, false, "unavailable"},
			{0, 1, "k2", noFault, false, "duplicate"},
			{0, 1, "k1", noFault, false, "replayed s0"},
		}},
		{"the replica never got it: the token is not burnt", []redeemStep{
			{0, 1, "k1", lostToReplica, false, "unavailable"},
			{0, 1, "k1", noFault, false, "first"},
			{0, 1, "k1", noFault, false, "replayed s1"},
			{0, 1, "k2", noFault, false, "duplicate"},
		}},
		{"a use the replica never got is not a duplicate for the next caller", []redeemStep{
			{0, 1, "k1", lostToReplica, false, "unavailable"},
			{0, 1, "k2", noFault, false, "first"},
			{0, 1, "k1", noFault, false, "duplicate"},
			{0, 1, "k2", noFault, false, "replayed s1"},
		}},
		{"the owner's late half does not refuse the caller whose use the replica holds", []redeemStep{
			{0, 1, "k2", lostFromReplica, false, "unavailable"}, // on the replica only
			{0, 1, "k1", ownerLate, false, "unavailable"},       // on the owner only
			{0, 1, "k2", noFault, false, "replayed s0"},
			{0, 1, "k1", noFault, false, "duplicate"},
			{1, 2, "k2", noFault, false, "replayed s0"},
		}},
		{"a caller refused by the owner's unconfirmed half: that use is on both nodes first", []redeemStep{
			{0, 1, "k1", ownerLate, false, "unavailable"},
			{0, 1, "k2", noFault, false, "duplicate"},
			{1, 2, "k1", noFault, false, "replayed s0"}, // the owner died: the replica holds k1's use
			{1, 2, "k2", noFault, false, "duplicate"},
		}},
		{"a confirmed first outcome is not overturned by a record left under another ring", []redeemStep{
			{0, 1, "k1", lostFromReplica, false, "unavailable"}, // node 1 holds k1, unanswered
			{0, 2, "k2", noFault, false, "first"},               // node 1 was out of the ring
			{0, 1, "k2", noFault, false, "replayed s1"},         // node 1 is back as the replica
			{0, 1, "k1", noFault, false, "duplicate"},
			{1, 2, "k2", noFault, false, "replayed s1"},
			{1, 2, "k1", noFault, false, "duplicate"},
		}},
		{"a retry past the token's lifetime gets the first outcome", []redeemStep{
			{0, 1, "k1", lostToCaller, false, "unavailable"},
			{0, 1, "k1", noFault, true, "replayed s0"},
			{0, 1, "k2", noFault, true, "duplicate"},
		}},
		{"a retry past the token's lifetime finds a use only the replica holds, and consumes nothing", []redeemStep{
			{0, 1, "k1", lostFromReplica, false, "unavailable"},
			{0, 1, "k1", noFault, true, "replayed s0"},
			{0, 1, "k3", noFault, true, "duplicate"},
		}},
		{"past its lifetime an unused token is not consumed", []redeemStep{
			{0, 1, "k1", noFault, true, "duplicate"},
			{0, 1, "k1", noFault, false, "first"},
		}},
		{"without a key a retry is a duplicate", []redeemStep{
			{0, 1, "", lostToCaller, false, "unavailable"},
			{0, 1, "", noFault, false, "duplicate"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(1_000_000)
			clock := func() int64 { return now.Load() }
			nodes := []*System{mustNewSystem(t, clock), mustNewSystem(t, clock), mustNewSystem(t, clock)}
			for i, s := range tc.steps {
				op := &Redeem{ID: "tok/1", Expires: now.Load() + int64(time.Minute), Key: s.key, Outcome: Outcome{Ref: fmt.Sprintf("s%d", i), At: int64(i)}}
				if s.expired {
					op.Expires, op.Outcome = 1, Outcome{}
				}
				ok := redeemThrough(t, nodes[s.owner], nodes[s.replica], op, s.fault)
				var got string
				switch {
				case !ok:
					got = "unavailable"
				case op.First:
					got = "first"
				case op.Replayed:
					got = "replayed " + op.Outcome.Ref
				default:
					got = "duplicate"
				}
				if got != s.want {
					t.Fatalf("step %d (key %q through node-%d): %s, want %s", i, s.key, s.owner, got, s.want)
				}
			}
		})
	}
}

func TestARevertDoesNotForgetAUseAReplayConfirmed(t *testing.T) {
	owner, replica := mustNewSystem(t, nil), mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	first := &Redeem{ID: "tok/1", Expires: exp, Key: "k1", Outcome: Outcome{Ref: "a1"}}
	if err := owner.Ask(redeemPartition, first, time.Second); err != nil || !first.First {
		t.Fatal(first.First, err)
	}
	// While the first attempt waits for its replica, the caller's retry
	// completes through both nodes; then the first attempt's replica ask
	// times out and the owner reverts it.
	retry := &Redeem{ID: "tok/1", Expires: exp, Key: "k1", Outcome: Outcome{Ref: "a2"}}
	if !redeemThrough(t, owner, replica, retry, noFault) || !retry.Replayed || retry.Outcome.Ref != "a1" {
		t.Fatalf("retry: replayed=%v outcome %+v", retry.Replayed, retry.Outcome)
	}
	if err := owner.Ask(redeemPartition, first.Revert(), time.Second); err != nil {
		t.Fatal(err)
	}
	other := &Redeem{ID: "tok/1", Expires: exp, Key: "k2"}
	if err := owner.Ask(redeemPartition, other, time.Second); err != nil || other.First || other.Replayed {
		t.Fatalf("another caller after the revert: first=%v replayed=%v", other.First, other.Replayed)
	}
	if other.ReplicaOp() != nil {
		t.Fatal("a duplicate of a confirmed use still asks the replica")
	}
}

func TestHandoffPrefersAConfirmedRedemption(t *testing.T) {
	from, to := mustNewSystem(t, nil), mustNewSystem(t, nil)
	exp := time.Now().Add(time.Minute).UnixNano()
	// to holds a tentative record (a use whose answer was lost); from
	// holds the confirmed one.
	if err := to.Ask(redeemPartition, &Redeem{ID: "tok/1", Expires: exp, Key: "k1", Outcome: Outcome{Ref: "lost"}}, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := from.Ask(redeemPartition, &settleRedemption{ID: "tok/1", R: redemption{expires: exp, key: "k2", outcome: Outcome{Ref: "answered"}, confirmed: true}}, time.Second); err != nil {
		t.Fatal(err)
	}
	handOff(t, from, to, func(p int) bool { return p == redeemPartition })
	op := &Redeem{ID: "tok/1", Expires: exp, Key: "k2"}
	if err := to.Ask(redeemPartition, op, time.Second); err != nil || !op.Replayed || op.Outcome.Ref != "answered" {
		t.Fatalf("after the hand-off: replayed=%v outcome %+v", op.Replayed, op.Outcome)
	}
}
