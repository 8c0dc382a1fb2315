package actors

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// leasePair is an owner and its replica, two shard systems, with the
// cluster router's steps for a Replicated op done by hand: the op on the
// owner (after SetEpoch, as the router does for Epoched ops), its
// ReplicaOp across the wire encoding onto the replica, MergeReplica and
// Adopt back on the owner; or, when the replica is down, Revert on the
// owner and ErrUnavailable.
type leasePair struct {
	owner, replica *System
	oclk, rclk     *fakeClock
	epoch          uint64
	replicaDown    bool
}

const leasePart = 3 // every op of these tests runs on partition 3

var errReplicaDown = errors.New("replica did not confirm")

func newLeasePair(t *testing.T) *leasePair {
	t.Helper()
	start := int64(1_700_000_000) * 1e9
	lp := &leasePair{oclk: newFakeClock(start), rclk: newFakeClock(start)}
	lp.owner, lp.replica = mustNewSystem(t, lp.oclk.now), mustNewSystem(t, lp.rclk.now)
	return lp
}

// failOver is the owner's death: the replica becomes the owner (the
// rendezvous runner-up), a fresh node its replica; the epoch moves on.
func (lp *leasePair) failOver(t *testing.T, epoch uint64) {
	t.Helper()
	lp.owner, lp.oclk = lp.replica, lp.rclk
	lp.rclk = newFakeClock(lp.oclk.now())
	lp.replica = mustNewSystem(t, lp.rclk.now)
	lp.epoch = epoch
}

func (lp *leasePair) add(d time.Duration) { lp.oclk.add(d); lp.rclk.add(d) }

func (lp *leasePair) exp(d time.Duration) int64 { return lp.oclk.now() + int64(d) }

// ask runs op as the cluster router's own() does.
func (lp *leasePair) ask(t *testing.T, op Op) error {
	t.Helper()
	if e, ok := op.(Epoched); ok {
		e.SetEpoch(lp.epoch)
	}
	mustAskOn(t, lp.owner, op)
	rep, ok := op.(Replicated)
	if !ok {
		return nil
	}
	rop := rep.ReplicaOp()
	if rop == nil {
		return nil
	}
	if lp.replicaDown {
		if rev := rep.Revert(); rev != nil {
			mustAskOn(t, lp.owner, rev)
		}
		return errReplicaDown
	}
	// Across the wire and back, as a forwarded replica ask travels.
	in, err := rop.AppendOp(nil)
	if err != nil {
		t.Fatal(err)
	}
	there, err := NewWireOp(rop.OpKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := there.UnmarshalOp(in); err != nil {
		t.Fatal(err)
	}
	mustAskOn(t, lp.replica, there)
	res, err := there.AppendResult(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rop.UnmarshalResult(res); err != nil {
		t.Fatal(err)
	}
	rep.MergeReplica(rop)
	if a, ok := op.(Adopter); ok {
		if fix := a.Adopt(); fix != nil {
			mustAskOn(t, lp.owner, fix)
		}
	}
	return nil
}

func mustAskOn(t *testing.T, s *System, op Op) {
	t.Helper()
	if err := s.Ask(leasePart, op, time.Second); err != nil {
		t.Fatal(err)
	}
}

func (lp *leasePair) reserve(t *testing.T, key, id string, capacity int, ttl time.Duration) *LeaseReserve {
	t.Helper()
	op := &LeaseReserve{Key: key, LeaseID: id, Capacity: capacity, Expires: lp.exp(ttl)}
	if err := lp.ask(t, op); err != nil {
		t.Fatalf("reserve %s: %v", id, err)
	}
	return op
}

// holdersOf reads a set's holders (id → fence) and last fence on s.
func holdersOf(t *testing.T, s *System, key string) (map[string]uint64, uint64) {
	t.Helper()
	out := map[string]uint64{}
	var last uint64
	mustAskOn(t, s, opFunc(func(st *State) {
		if set := Slot(st, KindLease, newLeaseTable).get(key, st, false); set != nil {
			for id, h := range set.holders {
				out[id] = h.fence
			}
			last = set.fence
		}
	}))
	return out, last
}

func TestLeaseStateSurvivesItsOwnerByMessages(t *testing.T) {
	const key = "lease/ws/c1/h"
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, lp *leasePair)
	}{
		{"a grant is held on the owner and on the replica under one fence", func(t *testing.T, lp *leasePair) {
			a := lp.reserve(t, key, "a", 2, time.Minute)
			b := lp.reserve(t, key, "b", 2, time.Minute)
			c := lp.reserve(t, key, "c", 2, time.Minute)
			if !a.Granted || !b.Granted || c.Granted || b.Fence <= a.Fence {
				t.Fatalf("a=%+v b=%+v c=%+v", a, b, c)
			}
			for name, s := range map[string]*System{"owner": lp.owner, "replica": lp.replica} {
				hs, last := holdersOf(t, s, key)
				if len(hs) != 2 || hs["a"] != a.Fence || hs["b"] != b.Fence || last != b.Fence {
					t.Errorf("%s holds %v (last fence %d), want a=%d b=%d", name, hs, last, a.Fence, b.Fence)
				}
			}
		}},
		{"owner lost: the replica answers usage, refuses above capacity and keeps the holders", func(t *testing.T, lp *leasePair) {
			var last uint64
			for i := range 5 {
				r := lp.reserve(t, key, fmt.Sprint("h", i), 5, time.Minute)
				if !r.Granted {
					t.Fatalf("grant %d refused: %+v", i, r)
				}
				last = r.Fence
			}
			lp.failOver(t, 0) // no epoch: the router of this build sets none
			u := &LeaseUsage{Key: key}
			if err := lp.ask(t, u); err != nil || u.InUse != 5 || u.Fence != last {
				t.Fatalf("usage on the new owner: %+v %v, want 5 in use, fence %d", u, err, last)
			}
			if r := lp.reserve(t, key, "late", 5, time.Minute); r.Granted || r.InUse != 5 || r.RetryAfter <= 0 {
				t.Fatalf("grant above capacity on the new owner: %+v", r)
			}
			rn := &LeaseRenew{Key: key, LeaseID: "h0", Fence: last - 4, Expires: lp.exp(2 * time.Minute)}
			if err := lp.ask(t, rn); err != nil || !rn.Held {
				t.Fatalf("renew of a holder granted by the dead owner: %+v %v", rn, err)
			}
			rel := &LeaseRelease{Key: key, LeaseID: "h1", Fence: last - 3}
			if err := lp.ask(t, rel); err != nil || !rel.Released {
				t.Fatalf("release of a holder granted by the dead owner: %+v %v", rel, err)
			}
			r := lp.reserve(t, key, "after", 5, time.Minute)
			if !r.Granted || r.Fence <= last {
				t.Fatalf("grant after a release: %+v, want a fence above %d", r, last)
			}
			// The new replica got every holding it was told about.
			if hs, _ := holdersOf(t, lp.replica, key); hs["h0"] != last-4 || hs["after"] != r.Fence {
				t.Fatalf("new replica holds %v", hs)
			}
		}},
		{"fences increase strictly across epochs and never follow a lagging clock", func(t *testing.T, lp *leasePair) {
			lp.epoch = 7
			a := lp.reserve(t, key, "a", 10, time.Hour)
			if a.Fence != fenceBase(7) || FenceEpoch(a.Fence) != 7 {
				t.Fatalf("first fence under epoch 7: %d (epoch %d), want %d", a.Fence, FenceEpoch(a.Fence), fenceBase(7))
			}
			b := lp.reserve(t, key, "b", 10, time.Hour)
			lp.failOver(t, 9)
			lp.oclk.add(-30 * time.Minute) // the new owner's clock lags
			c := lp.reserve(t, key, "c", 10, time.Hour)
			lp.failOver(t, 0) // an owner given no epoch continues the counter
			d := lp.reserve(t, key, "d", 10, time.Hour)
			lp.failOver(t, 8) // an older epoch than seen still goes up
			e := lp.reserve(t, key, "e", 10, time.Hour)
			fs := []uint64{a.Fence, b.Fence, c.Fence, d.Fence, e.Fence}
			for i := 1; i < len(fs); i++ {
				if fs[i] <= fs[i-1] {
					t.Fatalf("fences %v go backwards at %d", fs, i)
				}
			}
			if c.Fence != fenceBase(9) || d.Fence != c.Fence+1 || e.Fence != d.Fence+1 || b.Fence != a.Fence+1 {
				t.Fatalf("fences %v, want base(7), +1, base(9), +1, +1", fs)
			}
			if fenceBase(1<<60) < fenceBase(fenceMaxEpoch-1) || fenceBase(0) <= uint64(time.Now().UnixMicro()) ||
				fenceBase(3<<31-1)+1<<fenceEpochShift-1 >= 1<<53 {
				t.Fatal("the fence base overflows, falls below the wall-clock fences of earlier releases, or leaves 2^53 too soon")
			}
		}},
		{"a grant the replica cannot confirm is reverted and answers unavailable", func(t *testing.T, lp *leasePair) {
			lp.replicaDown = true
			op := &LeaseReserve{Key: key, LeaseID: "a", Capacity: 1, Expires: lp.exp(time.Minute)}
			if err := lp.ask(t, op); !errors.Is(err, errReplicaDown) {
				t.Fatalf("err = %v", err)
			}
			if hs, _ := holdersOf(t, lp.owner, key); len(hs) != 0 {
				t.Fatalf("owner kept an unconfirmed grant: %v", hs)
			}
			lp.replicaDown = false
			again := lp.reserve(t, key, "b", 1, time.Minute)
			if !again.Granted || again.Fence <= op.Fence {
				t.Fatalf("grant after the revert: %+v, want a fence above %d", again, op.Fence)
			}
		}},
		{"a replica at capacity refuses what the owner would grant; the owner drops it and learns the fence", func(t *testing.T, lp *leasePair) {
			// The replica holds grants the owner never saw (the owner
			// restarted empty and took its partitions back).
			for i := range 3 {
				r := &LeaseReserveReplica{Key: key, LeaseID: fmt.Sprint("old", i), Capacity: 3, Expires: lp.exp(time.Minute), Fence: fenceBase(4) + uint64(i)}
				mustAskOn(t, lp.replica, r)
			}
			r := lp.reserve(t, key, "new", 3, time.Minute)
			if r.Granted || r.InUse != 3 || r.RetryAfter != int64(time.Minute) {
				t.Fatalf("grant above the replica's capacity: %+v", r)
			}
			hs, last := holdersOf(t, lp.owner, key)
			if len(hs) != 0 || last != fenceBase(4)+2 {
				t.Fatalf("owner holds %v, last fence %d; want none and %d", hs, last, fenceBase(4)+2)
			}
		}},
		{"the replica's higher fence wins and the owner adopts it", func(t *testing.T, lp *leasePair) {
			mustAskOn(t, lp.replica, &LeaseReserveReplica{Key: key, LeaseID: "x", Capacity: 5, Expires: lp.exp(time.Second), Fence: fenceBase(12)})
			lp.add(2 * time.Second) // x expired, its fence stays the set's last
			r := lp.reserve(t, key, "a", 5, time.Minute)
			if !r.Granted || r.Fence != fenceBase(12)+1 {
				t.Fatalf("grant: %+v, want fence %d", r, fenceBase(12)+1)
			}
			for name, s := range map[string]*System{"owner": lp.owner, "replica": lp.replica} {
				if hs, last := holdersOf(t, s, key); hs["a"] != r.Fence || last != r.Fence {
					t.Errorf("%s holds %v, last %d", name, hs, last)
				}
			}
			rn := &LeaseRenew{Key: key, LeaseID: "a", Fence: r.Fence, Expires: lp.exp(time.Hour)}
			if err := lp.ask(t, rn); err != nil || !rn.Held {
				t.Fatalf("renew with the adopted fence: %+v %v", rn, err)
			}
		}},
		{"an idempotent retry finds the holding only the replica knew", func(t *testing.T, lp *leasePair) {
			held := &LeaseReserveReplica{Key: key, LeaseID: "a", Capacity: 1, Expires: lp.exp(time.Minute), Fence: fenceBase(3)}
			mustAskOn(t, lp.replica, held)
			r := lp.reserve(t, key, "a", 1, time.Hour)
			if !r.Granted || !r.Existing || r.Fence != held.Fence || r.HeldUntil != held.Expires {
				t.Fatalf("retry: %+v, want the replica's holding %+v", r, held)
			}
			if hs, _ := holdersOf(t, lp.owner, key); len(hs) != 1 || hs["a"] != held.Fence {
				t.Fatalf("owner holds %v", hs)
			}
		}},
		{"renew and release on the replica are idempotent and merge unknown holders", func(t *testing.T, lp *leasePair) {
			f := fenceBase(2) + 40
			for range 2 {
				rn := &LeaseRenewReplica{Key: key, LeaseID: "u", Fence: f, Expires: lp.exp(time.Minute)}
				mustAskOn(t, lp.replica, rn)
				if !rn.Held {
					t.Fatal("a renewal of an unknown holder was not merged")
				}
			}
			if hs, last := holdersOf(t, lp.replica, key); hs["u"] != f || last != f {
				t.Fatalf("replica holds %v, last %d", hs, last)
			}
			stale := &LeaseRenewReplica{Key: key, LeaseID: "u", Fence: f - 1, Expires: lp.exp(time.Hour)}
			mustAskOn(t, lp.replica, stale)
			if stale.Held {
				t.Fatal("a renewal under an older fence took over a newer grant")
			}
			var released []bool
			for _, id := range []string{"u", "u", "never"} {
				rel := &LeaseReleaseReplica{Key: key, LeaseID: id, Fence: f}
				mustAskOn(t, lp.replica, rel)
				released = append(released, rel.Released)
			}
			if !released[0] || released[1] || released[2] {
				t.Fatalf("releases %v, want true false false", released)
			}
			if hs, last := holdersOf(t, lp.replica, key); len(hs) != 0 || last != f {
				t.Fatalf("after release the replica holds %v, last %d", hs, last)
			}
		}},
		{"a renewal the replica cannot confirm goes back to its previous expiry", func(t *testing.T, lp *leasePair) {
			a := lp.reserve(t, key, "a", 1, time.Minute)
			lp.replicaDown = true
			rn := &LeaseRenew{Key: key, LeaseID: "a", Fence: a.Fence, Expires: lp.exp(time.Hour)}
			if err := lp.ask(t, rn); !errors.Is(err, errReplicaDown) {
				t.Fatalf("err = %v", err)
			}
			lp.replicaDown = false
			lp.add(61 * time.Second)
			for name, s := range map[string]*System{"owner": lp.owner, "replica": lp.replica} {
				if hs, _ := holdersOf(t, s, key); len(hs) != 0 {
					t.Errorf("%s still holds %v after the original expiry", name, hs)
				}
			}
		}},
		{"a release the replica cannot confirm keeps the slot until a retry", func(t *testing.T, lp *leasePair) {
			a := lp.reserve(t, key, "a", 1, time.Minute)
			lp.replicaDown = true
			rel := &LeaseRelease{Key: key, LeaseID: "a", Fence: a.Fence}
			if err := lp.ask(t, rel); !errors.Is(err, errReplicaDown) {
				t.Fatalf("err = %v", err)
			}
			if hs, _ := holdersOf(t, lp.owner, key); hs["a"] != a.Fence {
				t.Fatalf("owner holds %v after an unconfirmed release", hs)
			}
			lp.replicaDown = false
			rel = &LeaseRelease{Key: key, LeaseID: "a", Fence: a.Fence}
			if err := lp.ask(t, rel); err != nil || !rel.Released {
				t.Fatalf("retried release: %+v %v", rel, err)
			}
			for name, s := range map[string]*System{"owner": lp.owner, "replica": lp.replica} {
				if hs, _ := holdersOf(t, s, key); len(hs) != 0 {
					t.Errorf("%s holds %v after the release", name, hs)
				}
			}
		}},
		{"a release only the replica can do still frees the slot", func(t *testing.T, lp *leasePair) {
			mustAskOn(t, lp.replica, &LeaseReserveReplica{Key: key, LeaseID: "a", Capacity: 1, Expires: lp.exp(time.Minute), Fence: fenceBase(1)})
			rel := &LeaseRelease{Key: key, LeaseID: "a", Fence: fenceBase(1)}
			if err := lp.ask(t, rel); err != nil || !rel.Released {
				t.Fatalf("release: %+v %v", rel, err)
			}
			if hs, _ := holdersOf(t, lp.replica, key); len(hs) != 0 {
				t.Fatalf("replica holds %v", hs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newLeasePair(t)) })
	}
}

// handOffReplicated moves partition leasePart's lease state from one system to
// another as the cluster copies replicated state to a new replica.
func handOffReplicated(t *testing.T, from, to *System) {
	t.Helper()
	ex := &Export{In: func(p int) bool { return p == leasePart }, ReplicatedOnly: true}
	mustAskOn(t, from, ex)
	if len(ex.Chunks) == 0 {
		t.Fatal("nothing exported: lease sets are replicated state and must be")
	}
	for _, ch := range ex.Chunks {
		im := &Import{Chunk: ch}
		if err := to.Ask(ch.Partition, im, time.Second); err != nil || im.Err != nil {
			t.Fatal(err, im.Err)
		}
	}
}

// Two attempts of one idempotent acquire race on an owner that lacks
// holders its replica has (they diverged through a timeout): the first is
// refused by the full replica and dropped; the second found the first's
// holding on the owner (Existing) and must not be confirmed above the
// replica's capacity either.
func TestARetryFoundHeldIsNotConfirmedAboveTheReplicasCapacity(t *testing.T) {
	const key = "lease/ws/c1/h"
	lp := newLeasePair(t)
	for _, id := range []string{"x", "y"} {
		mustAskOn(t, lp.replica, &LeaseReserveReplica{Key: key, LeaseID: id, Capacity: 2, Expires: lp.exp(time.Minute), Fence: fenceBase(0) + 5})
	}
	first := &LeaseReserve{Key: key, LeaseID: "l", Capacity: 2, Expires: lp.exp(time.Minute)}
	second := &LeaseReserve{Key: key, LeaseID: "l", Capacity: 2, Expires: lp.exp(time.Minute)}
	mustAskOn(t, lp.owner, first)
	mustAskOn(t, lp.owner, second)
	if !first.Granted || first.Existing || !second.Existing {
		t.Fatalf("on the owner: first %+v second %+v", first, second)
	}
	confirm := func(op *LeaseReserve) {
		rop := op.ReplicaOp()
		mustAskOn(t, lp.replica, rop)
		op.MergeReplica(rop)
		if fix := op.Adopt(); fix != nil {
			mustAskOn(t, lp.owner, fix)
		}
	}
	confirm(first)
	confirm(second)
	if first.Granted || second.Granted {
		t.Fatalf("granted above the replica's capacity: first %+v second %+v", first, second)
	}
	if hs, _ := holdersOf(t, lp.replica, key); len(hs) != 2 {
		t.Fatalf("replica holds %v, want only x and y", hs)
	}
}

// A paused owner that resumes with its old ring still grants through its
// replica, which is by then the new owner: both grant against that one
// node's holders, so together they never exceed capacity (issue 23: a
// SIGSTOP of the owner gave twice the capacity).
func TestAPausedOwnerAndItsSuccessorShareOneCapacity(t *testing.T) {
	const key = "lease/ws/c1/h"
	old := newLeasePair(t) // A owns, B replicates
	var grants []uint64
	for i := range 3 {
		if r := old.reserve(t, key, fmt.Sprint("a", i), 5, time.Minute); r.Granted {
			grants = append(grants, r.Fence)
		}
	}
	// A pauses; B becomes owner with C as replica.
	succ := &leasePair{owner: old.replica, oclk: old.rclk, rclk: newFakeClock(old.rclk.now())}
	succ.replica = mustNewSystem(t, succ.rclk.now)
	for i := range 4 {
		if r := succ.reserve(t, key, fmt.Sprint("b", i), 5, time.Minute); r.Granted {
			grants = append(grants, r.Fence)
		}
	}
	// A resumes and grants on its stale ring, B as its replica.
	for i := range 3 {
		if r := old.reserve(t, key, fmt.Sprint("a-late", i), 5, time.Minute); r.Granted {
			grants = append(grants, r.Fence)
		}
	}
	if len(grants) != 5 {
		t.Fatalf("%d grants (fences %v), want exactly the capacity 5", len(grants), grants)
	}
	for i := 1; i < len(grants); i++ {
		if grants[i] <= grants[i-1] {
			t.Fatalf("fences %v go backwards", grants)
		}
	}
}

func TestLeaseHandOffMergesHoldersAndKeepsTheLargerFence(t *testing.T) {
	lp := newLeasePair(t)
	const key = "lease/ws/c1/h"
	lp.epoch = 5
	a := lp.reserve(t, key, "a", 4, time.Minute)
	b := lp.reserve(t, key, "b", 4, time.Minute)
	// A third node granted c (and saw a newer grant of b) without a.
	other := mustNewSystem(t, lp.oclk.now)
	mustAskOn(t, other, &LeaseReserveReplica{Key: key, LeaseID: "c", Capacity: 4, Expires: lp.exp(time.Minute), Fence: fenceBase(6)})
	mustAskOn(t, other, &LeaseReserveReplica{Key: key, LeaseID: "b", Capacity: 4, Expires: lp.exp(time.Hour), Fence: fenceBase(6) + 1})
	handOffReplicated(t, other, lp.owner)
	hs, last := holdersOf(t, lp.owner, key)
	if len(hs) != 3 || hs["a"] != a.Fence || hs["b"] != fenceBase(6)+1 || hs["c"] != fenceBase(6) || last != fenceBase(6)+1 {
		t.Fatalf("merged set %v, last %d (a=%d b=%d)", hs, last, a.Fence, b.Fence)
	}
	if r := lp.reserve(t, key, "d", 4, time.Minute); !r.Granted || r.Fence <= fenceBase(6)+1 {
		t.Fatalf("grant after the merge: %+v", r)
	}
	if r := lp.reserve(t, key, "e", 4, time.Minute); r.Granted {
		t.Fatalf("grant above capacity after the merge: %+v", r)
	}
}

func TestAnEvictedSetsFenceTravelsWithTheHandOff(t *testing.T) {
	lp := newLeasePair(t)
	const key = "lease/ws/c1/h"
	a := lp.reserve(t, key, "a", 1, time.Second)
	lp.add(time.Duration(leaseIdleEvict) + 2*time.Second)
	waitEvicted(t, lp.owner, key)
	to := mustNewSystem(t, lp.oclk.now)
	handOffReplicated(t, lp.owner, to)
	lp.replica, lp.rclk = to, lp.oclk
	lp.failOver(t, 0)
	if r := lp.reserve(t, key, "b", 1, time.Minute); !r.Granted || r.Fence <= a.Fence {
		t.Fatalf("grant on the receiver of an evicted set's floor: %+v, want a fence above %d", r, a.Fence)
	}
}
