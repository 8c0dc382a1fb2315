package actors

// Concurrency leases. One lease set per constraint key (workspace +
// constraint + keyed hash of the scope value) lives in the shard that owns
// the key, so counting holders and granting a slot is one message: no lock,
// no lost update, never more holders than capacity.
//
// Expiry is lazy and swept: every op first drops holders whose expiry has
// passed (so a crashed holder's slot comes back on time, without waiting for
// a sweep), and the shard sweep forgets expired holders and idle sets.
//
// In a cluster a lease set survives its owner: LeaseReserve, LeaseRenew
// and LeaseRelease are Replicated like single-use markers. The owner
// applies the op, then the partition's replica applies its half
// (lease.reserve.replica, lease.renew.replica, lease.release.replica), and
// only then does the caller get an answer. A grant needs room on both
// nodes; the fencing token the caller gets is the one both keep. If the
// replica cannot confirm, the owner reverts its half and the caller gets
// ErrUnavailable (fail closed): no holding that only one node remembers.
// The replica is the rendezvous runner-up, the node that becomes owner
// when the owner dies, so the successor already holds every holder and the
// last fence.
//
// Fencing tokens (see fenceBase) are an ownership epoch above a counter,
// never a wall clock: the next token of a set is max(last+1, base(epoch)),
// the replica keeps max(proposed, its last+1), and a set evicted while idle
// leaves its last token in its partition's floor, from which a new set of
// that partition starts. So a token is above every token the owner, its
// replica or a hand-off has seen for the key, even when the new owner's
// clock lags. The wall clock still decides expiry (holders' Expires are
// Unix ns from the node that served the acquire): a node whose clock runs
// d ahead drops holders d early, so after a fail-over to it a slot may be
// granted again up to d before its previous holder's lease token expires;
// a node running behind keeps slots d longer (fewer grants). The fencing
// token is what protects the resource in that window.

const leaseIdleEvict = int64(120e9) // 2 minutes, in ns

// The fencing token layout: fenceOrigin + epoch<<fenceEpochShift + counter.
//
//   - fenceOrigin (2^51) puts every token above the wall-clock tokens of
//     earlier releases (Unix µs, below 2^51 until 2041), so a resource that
//     remembers the highest token it saw keeps accepting across the upgrade.
//   - The epoch (the ring's ownership epoch, Epoched: the Raft index at which
//     the ring's member set last changed) is the high part: an owner of a
//     newer epoch starts above every token of an older one even when it
//     never saw them (state lost on owner and replica at once).
//   - The counter is the low 20 bits: 2^20 grants per key and epoch before
//     it carries into the epoch bits, which stays strictly increasing (every
//     token is also > last+1). A carry could only meet a later epoch's base
//     if one key took more grants between two ring changes than 2^20 times
//     the Raft entries written meanwhile (liveness alone writes two a second
//     per node): not reachable by one shard.
//
// Tokens stay below 2^53 (exact as a JSON number in a JavaScript client)
// while epoch < 3·2^31 (6.4e9: 34 years of a three-node cluster's liveness
// renewals); above, they are still correct uint64 values. Epochs from 2^43
// on share one base (no overflow); the counter alone keeps them increasing.
// Without an epoch (0: a single node, a test) tokens continue from the
// replicated counter: fenceOrigin, +1, +2, …
const (
	fenceOrigin     = uint64(1) << 51
	fenceEpochShift = 20
	fenceMaxEpoch   = uint64(1)<<(63-fenceEpochShift) - 1
)

// fenceBase is the lowest fence an owner deciding under epoch issues.
func fenceBase(epoch uint64) uint64 {
	return fenceOrigin + min(epoch, fenceMaxEpoch)<<fenceEpochShift
}

// FenceEpoch is the epoch part of a fencing token issued under this
// layout (0 for a token below fenceOrigin).
func FenceEpoch(fence uint64) uint64 {
	if fence < fenceOrigin {
		return 0
	}
	return (fence - fenceOrigin) >> fenceEpochShift
}

type leaseHolder struct {
	expires int64
	fence   uint64
}

type leaseSet struct {
	holders map[string]leaseHolder // lease id → holding
	fence   uint64                 // last fencing token issued or seen
	// nextExpiry is a lower bound of the earliest holder expiry: no holder
	// can have expired before it, so purge skips the scan until then.
	nextExpiry int64
	touched    int64
	partition  int32
}

type leaseTable struct {
	m map[string]*leaseSet
	// floor is, per partition, the highest fence of a set evicted while
	// idle: a set created again starts above it, so tokens never repeat.
	floor map[int32]uint64
}

func newLeaseTable() *leaseTable {
	return &leaseTable{m: make(map[string]*leaseSet), floor: make(map[int32]uint64)}
}

func (t *leaseTable) get(key string, st *State, create bool) *leaseSet {
	s := t.m[key]
	if s == nil {
		if !create || !st.Room(KindLease, len(t.m)) {
			return nil
		}
		p := int32(st.Partition)
		s = &leaseSet{holders: make(map[string]leaseHolder), partition: p, fence: t.floor[p]}
		t.m[key] = s
	}
	s.touched = st.Now
	s.purge(st.Now)
	return s
}

func (t *leaseTable) raiseFloor(p int32, fence uint64) {
	if fence > t.floor[p] {
		t.floor[p] = fence
	}
}

// purge drops expired holders once the earliest expiry has passed, and
// recomputes the earliest expiry.
func (s *leaseSet) purge(now int64) {
	if len(s.holders) == 0 || now < s.nextExpiry {
		return
	}
	next := int64(1<<63 - 1)
	for id, h := range s.holders {
		if h.expires <= now {
			delete(s.holders, id)
			continue
		}
		next = min(next, h.expires)
	}
	s.nextExpiry = next
}

// earliest is the exact earliest expiry of the live holders.
func (s *leaseSet) earliest() int64 {
	e := int64(1<<63 - 1)
	for _, h := range s.holders {
		e = min(e, h.expires)
	}
	return e
}

// hold records a holding and keeps nextExpiry a lower bound.
func (s *leaseSet) hold(id string, h leaseHolder) {
	if len(s.holders) == 0 || h.expires < s.nextExpiry {
		s.nextExpiry = h.expires
	}
	s.holders[id] = h
	s.fence = max(s.fence, h.fence)
}

// nextFence issues the owner's next token under epoch.
func (s *leaseSet) nextFence(epoch uint64) uint64 {
	s.fence = max(s.fence+1, fenceBase(epoch))
	return s.fence
}

// retryAfter is a refused grant's wait: until the earliest holder expires.
func (s *leaseSet) retryAfter(now int64) int64 {
	if len(s.holders) == 0 {
		return 0
	}
	return max(s.earliest()-now, 1)
}

// Sweep implements Sweeper.
func (t *leaseTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(s *leaseSet) bool {
		s.purge(now)
		if len(s.holders) == 0 && now-s.touched >= leaseIdleEvict {
			t.raiseFloor(s.partition, s.fence)
			return true
		}
		return false
	})
}

// LeaseReserve takes one slot of the constraint key Key for lease LeaseID
// until Expires, if fewer than Capacity live leases hold one. Reserving a
// lease ID that already holds a slot is a retry: it grants nothing new and
// reports the existing holding.
//
// It is Replicated: the partition's replica must have room too, and the
// fence answered is the one both nodes keep. It is Epoched: the owner's
// ring epoch is the high part of the fences it issues.
//
//actors:wire lease.reserve LeaseReserve LeaseReserveResult
type LeaseReserve struct {
	Key      string `wire:"op"`
	LeaseID  string `wire:"op"`
	Capacity int    `wire:"op"`
	Expires  int64  `wire:"op"`

	Granted bool `wire:"result"`
	// Existing reports that LeaseID already held its slot.
	Existing bool   `wire:"result"`
	Fence    uint64 `wire:"result"`
	// HeldUntil is the holding's expiry (Expires, or the existing one).
	HeldUntil int64 `wire:"result"`
	// InUse counts live holders after the op.
	InUse int `wire:"result"`
	// RetryAfter is, when refused, how long until the earliest holder
	// expires (a lower bound of the wait, as releases may come sooner).
	RetryAfter int64 `wire:"result"`

	epoch uint64    // the owner's ownership epoch (SetEpoch); not on the wire
	fix   *leaseFix // what the owner takes over from its replica (Adopt)
}

// SetEpoch implements Epoched.
func (o *LeaseReserve) SetEpoch(epoch uint64) { o.epoch = epoch }

// Apply implements Op.
func (o *LeaseReserve) Apply(st *State) {
	o.fix = nil
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, true)
	if s == nil {
		// The table is full: refused, like a set at capacity.
		o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = false, false, 0, 0, 0, 0
		return
	}
	if h, ok := s.holders[o.LeaseID]; ok {
		o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = true, true, h.fence, h.expires, len(s.holders), 0
		return
	}
	if len(s.holders) >= o.Capacity || o.Expires <= st.Now {
		o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = false, false, 0, 0, len(s.holders), s.retryAfter(st.Now)
		return
	}
	h := leaseHolder{expires: o.Expires, fence: s.nextFence(o.epoch)}
	s.hold(o.LeaseID, h)
	o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = true, false, h.fence, h.expires, len(s.holders), 0
}

// ReplicaOp implements Replicated: a grant, new or found held, is
// confirmed by the replica (which may hold it under another fence, or be
// at capacity with holders the owner does not know); a refusal is final.
func (o *LeaseReserve) ReplicaOp() WireOp {
	if !o.Granted {
		return nil
	}
	return &LeaseReserveReplica{Key: o.Key, LeaseID: o.LeaseID, Capacity: o.Capacity, Expires: o.HeldUntil,
		Fence: o.Fence, Existing: o.Existing}
}

// MergeReplica implements Replicated: a refusal by the replica refuses
// the grant (a new grant is dropped on the owner; a holding the owner
// found held stays there until it expires or is released, which counts
// it against capacity a little longer, never less); otherwise the
// replica's holding (fence, expiry) is the answer, and the owner adopts
// it when it differs from its own.
func (o *LeaseReserve) MergeReplica(replica WireOp) {
	r, ok := replica.(*LeaseReserveReplica)
	if !ok {
		return
	}
	if !r.Granted {
		if !o.Existing {
			o.fix = &leaseFix{Key: o.Key, ID: o.LeaseID, Was: o.Fence, Drop: true, Counter: r.Fence}
		}
		o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse, o.RetryAfter = false, false, 0, 0, r.InUse, r.RetryAfter
		return
	}
	if r.Fence != o.Fence || r.HeldUntil != o.HeldUntil {
		o.fix = &leaseFix{Key: o.Key, ID: o.LeaseID, Was: o.Fence, Fence: r.Fence, Expires: r.HeldUntil, Counter: r.Fence}
		o.Fence, o.HeldUntil = r.Fence, r.HeldUntil
	}
	o.Existing = o.Existing || r.Held
	o.InUse = max(o.InUse, r.InUse)
}

// Adopt implements Adopter.
func (o *LeaseReserve) Adopt() Op {
	if o.fix == nil {
		return nil
	}
	return o.fix
}

// Revert implements Replicated: a new grant the replica did not confirm
// is dropped on the owner (its fence stays used); a holding found held
// was granted before and stays.
func (o *LeaseReserve) Revert() Op {
	if !o.Granted || o.Existing {
		return nil
	}
	return &leaseFix{Key: o.Key, ID: o.LeaseID, Was: o.Fence, Drop: true}
}

// LeaseReserveReplica is a LeaseReserve's half on the partition's
// replica. A grant of a lease ID this node does not hold needs room here
// too, whether the owner granted it now or found it already held (a
// holding the owner has and this replica lacks can be one whose first
// attempt this replica refused: answering it "acquired" would exceed the
// capacity). A new grant's fence is max(the owner's proposal, this set's
// last fence + 1), so it is above every fence either node has seen; a
// holding found held keeps its fence. When this node already holds
// LeaseID, the holding with the higher fence is kept and answered (Held):
// the request was a retry of that grant.
//
//actors:wire lease.reserve.replica LeaseReplicaReserve LeaseReserveResult
type LeaseReserveReplica struct {
	Key      string `wire:"op"`
	LeaseID  string `wire:"op"`
	Capacity int    `wire:"op"`
	Expires  int64  `wire:"op"`
	// Fence is the owner's proposal in, the fence kept out (when refused,
	// this set's last fence, which the owner's set is raised to).
	Fence    uint64 `wire:"op,result"`
	Existing bool   `wire:"op"`

	Granted bool `wire:"result"`
	// Held reports that this node held LeaseID already.
	Held       bool  `wire:"result" wirename:"Existing"`
	HeldUntil  int64 `wire:"result"`
	InUse      int   `wire:"result"`
	RetryAfter int64 `wire:"result"`
}

// Apply implements Op.
func (o *LeaseReserveReplica) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, true)
	o.Held, o.HeldUntil, o.RetryAfter = false, 0, 0
	if s == nil {
		o.Granted, o.Fence, o.InUse = false, 0, 0
		return
	}
	if h, ok := s.holders[o.LeaseID]; ok {
		o.Held = true
		s.fence = max(s.fence, o.Fence)
		if o.Fence > h.fence {
			h = leaseHolder{expires: o.Expires, fence: o.Fence}
			s.hold(o.LeaseID, h)
		}
		o.Granted, o.Fence, o.HeldUntil, o.InUse = true, h.fence, h.expires, len(s.holders)
		return
	}
	if len(s.holders) >= o.Capacity || o.Expires <= st.Now {
		s.fence = max(s.fence, o.Fence)
		o.Granted, o.Fence, o.InUse, o.RetryAfter = false, s.fence, len(s.holders), s.retryAfter(st.Now)
		return
	}
	h := leaseHolder{expires: o.Expires, fence: o.Fence}
	if !o.Existing {
		h.fence = max(o.Fence, s.fence+1)
	}
	s.hold(o.LeaseID, h)
	o.Granted, o.Fence, o.HeldUntil, o.InUse = true, h.fence, h.expires, len(s.holders)
}

// leaseFix is the owner's own correction of one holding after its replica
// answered: Drop removes the holding the owner granted under fence Was
// (a grant the replica refused or did not confirm); otherwise the holding
// becomes (Fence, Expires), the replica's. Counter raises the set's last
// fence. It is deliberately not a WireOp: no other node may make this one
// drop a holding.
type leaseFix struct {
	Key, ID string
	Was     uint64
	Drop    bool
	Fence   uint64
	Expires int64
	Counter uint64
}

// Apply implements Op.
func (o *leaseFix) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, !o.Drop || o.Counter > 0)
	if s == nil {
		return
	}
	s.fence = max(s.fence, o.Counter)
	h, ok := s.holders[o.ID]
	if o.Drop {
		if ok && h.fence == o.Was {
			delete(s.holders, o.ID)
		}
		return
	}
	if (!ok || h.fence <= o.Fence) && o.Expires > st.Now {
		s.hold(o.ID, leaseHolder{expires: o.Expires, fence: o.Fence})
	}
}

// LeaseRenew moves the expiry of a live holding to Expires. Held is false
// when the lease no longer holds the slot (expired, released, or the slot
// now belongs to another grant under the same id with another fence).
//
// It is Replicated: a renewal the owner made is applied on the replica
// too (which takes the holding over if it did not know it).
//
//actors:wire lease.renew LeaseRef Flag
type LeaseRenew struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`
	Expires int64  `wire:"op"`

	Held bool `wire:"result" wirename:"Yes"`

	prev int64 // the expiry before this renewal, for Revert
	drop bool  // the replica holds a newer grant of LeaseID
}

// Apply implements Op.
func (o *LeaseRenew) Apply(st *State) {
	o.prev, o.drop, o.Held = 0, false, false
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		return
	}
	h, ok := s.holders[o.LeaseID]
	if !ok || h.fence != o.Fence {
		return
	}
	o.prev = h.expires
	h.expires = o.Expires
	s.hold(o.LeaseID, h)
	o.Held = true
}

// ReplicaOp implements Replicated: only a renewal that held needs the
// replica; a lost lease is final.
func (o *LeaseRenew) ReplicaOp() WireOp {
	if !o.Held {
		return nil
	}
	return &LeaseRenewReplica{Key: o.Key, LeaseID: o.LeaseID, Fence: o.Fence, Expires: o.Expires}
}

// MergeReplica implements Replicated: when the replica holds a newer
// grant of the id, the lease is lost and the owner drops its stale one.
func (o *LeaseRenew) MergeReplica(replica WireOp) {
	if r, ok := replica.(*LeaseRenewReplica); ok && !r.Held {
		o.Held, o.drop = false, true
	}
}

// Adopt implements Adopter.
func (o *LeaseRenew) Adopt() Op {
	if !o.drop {
		return nil
	}
	return &leaseFix{Key: o.Key, ID: o.LeaseID, Was: o.Fence, Drop: true}
}

// Revert implements Replicated: the owner's holding goes back to its
// previous expiry, unless something changed it since.
func (o *LeaseRenew) Revert() Op {
	if !o.Held {
		return nil
	}
	return &leaseUnrenew{Key: o.Key, ID: o.LeaseID, Fence: o.Fence, From: o.Expires, To: o.prev}
}

// leaseUnrenew undoes a renewal the replica did not confirm. Not a WireOp.
type leaseUnrenew struct {
	Key, ID  string
	Fence    uint64
	From, To int64
}

// Apply implements Op.
func (o *leaseUnrenew) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		return
	}
	if h, ok := s.holders[o.ID]; ok && h.fence == o.Fence && h.expires == o.From {
		h.expires = o.To
		s.hold(o.ID, h)
	}
}

// LeaseRenewReplica is a LeaseRenew's half on the replica. It is
// idempotent and merges: a holding this node does not know (or knows
// under an older fence) is taken over with the renewed expiry, whatever
// the capacity. Held is false only when this node holds a newer grant of
// the id.
//
//actors:wire lease.renew.replica LeaseRef Flag
type LeaseRenewReplica struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`
	Expires int64  `wire:"op"`

	Held bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *LeaseRenewReplica) Apply(st *State) {
	o.Held = false
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, true)
	if s == nil {
		return
	}
	if h, ok := s.holders[o.LeaseID]; ok && h.fence > o.Fence {
		s.fence = max(s.fence, o.Fence)
		return
	}
	s.hold(o.LeaseID, leaseHolder{expires: o.Expires, fence: o.Fence})
	o.Held = true
}

// LeaseRelease frees the slot a lease holds. Released reports whether it
// still held one; releasing twice is harmless.
//
// It is Replicated, always (even when the owner did not hold it, the
// replica may): the replica frees the slot too.
//
//actors:wire lease.release LeaseRef Flag
type LeaseRelease struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`

	Released bool `wire:"result" wirename:"Yes"`

	was int64 // the released holding's expiry, for Revert
}

// Apply implements Op.
func (o *LeaseRelease) Apply(st *State) {
	o.Released, o.was = false, 0
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		return
	}
	h, ok := s.holders[o.LeaseID]
	if !ok || h.fence != o.Fence {
		return
	}
	delete(s.holders, o.LeaseID)
	o.Released, o.was = true, h.expires
}

// ReplicaOp implements Replicated.
func (o *LeaseRelease) ReplicaOp() WireOp {
	return &LeaseReleaseReplica{Key: o.Key, LeaseID: o.LeaseID, Fence: o.Fence}
}

// MergeReplica implements Replicated: released if either node held it.
func (o *LeaseRelease) MergeReplica(replica WireOp) {
	if r, ok := replica.(*LeaseReleaseReplica); ok && r.Released {
		o.Released = true
	}
}

// Revert implements Replicated: the owner holds the slot again (the
// caller was told unavailable and may retry the release).
func (o *LeaseRelease) Revert() Op {
	if !o.Released {
		return nil
	}
	return &leaseFix{Key: o.Key, ID: o.LeaseID, Fence: o.Fence, Expires: o.was}
}

// LeaseReleaseReplica is a LeaseRelease's half on the replica: it frees
// the holding of LeaseID up to Fence (an older grant under the same id
// is the same lease), and is harmless for a holding it does not know.
//
//actors:wire lease.release.replica LeaseRef Flag
type LeaseReleaseReplica struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`

	Released bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *LeaseReleaseReplica) Apply(st *State) {
	o.Released = false
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		return
	}
	s.fence = max(s.fence, o.Fence)
	if h, ok := s.holders[o.LeaseID]; ok && h.fence <= o.Fence {
		delete(s.holders, o.LeaseID)
		o.Released = true
	}
}

// LeaseUsage reports how many live leases hold slots of Key, and the
// last fence issued or seen for it.
//
//actors:wire lease.usage LeaseRef LeaseUsageResult
type LeaseUsage struct {
	Key string `wire:"op"`

	InUse int    `wire:"result"`
	Fence uint64 `wire:"result"`
}

// Apply implements Op.
func (o *LeaseUsage) Apply(st *State) {
	if s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false); s != nil {
		o.InUse, o.Fence = len(s.holders), s.fence
	} else {
		o.InUse, o.Fence = 0, 0
	}
}
