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
// Fencing tokens increase per key and never repeat, even across eviction of
// an idle set or a new owner after a crash: the next token is the larger of
// last+1 and the clock in microseconds. An evicted set has been idle for
// leaseIdleEvict, far longer than any burst of grants could run ahead of the
// clock, so a rebuilt set starts above every token its predecessor issued.

const leaseIdleEvict = int64(120e9) // 2 minutes, in ns

type leaseHolder struct {
	expires int64
	fence   uint64
}

type leaseSet struct {
	holders map[string]leaseHolder // lease id → holding
	fence   uint64                 // last fencing token issued
	// nextExpiry is a lower bound of the earliest holder expiry: no holder
	// can have expired before it, so purge skips the scan until then.
	nextExpiry int64
	touched    int64
	partition  int32
}

type leaseTable struct {
	m map[string]*leaseSet
}

func newLeaseTable() *leaseTable { return &leaseTable{m: make(map[string]*leaseSet)} }

func (t *leaseTable) get(key string, st *State, create bool) *leaseSet {
	s := t.m[key]
	if s == nil {
		if !create || !st.Room(KindLease, len(t.m)) {
			return nil
		}
		s = &leaseSet{holders: make(map[string]leaseHolder), partition: int32(st.Partition)}
		t.m[key] = s
	}
	s.touched = st.Now
	s.purge(st.Now)
	return s
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

func (s *leaseSet) nextFence(now int64) uint64 {
	f := s.fence + 1
	if us := uint64(max(now, 0) / 1000); us > f {
		f = us
	}
	s.fence = f
	return f
}

// Sweep implements Sweeper.
func (t *leaseTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(s *leaseSet) bool {
		s.purge(now)
		return len(s.holders) == 0 && now-s.touched >= leaseIdleEvict
	})
}

// LeaseReserve takes one slot of the constraint key Key for lease LeaseID
// until Expires, if fewer than Capacity live leases hold one. Reserving a
// lease ID that already holds a slot is a retry: it grants nothing new and
// reports the existing holding.
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
}

// Apply implements Op.
func (o *LeaseReserve) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, true)
	if h, ok := s.holders[o.LeaseID]; ok {
		o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse = true, true, h.fence, h.expires, len(s.holders)
		return
	}
	if len(s.holders) >= o.Capacity || o.Expires <= st.Now {
		o.Granted, o.InUse = false, len(s.holders)
		if len(s.holders) > 0 {
			o.RetryAfter = max(s.earliest()-st.Now, 1)
		}
		return
	}
	h := leaseHolder{expires: o.Expires, fence: s.nextFence(st.Now)}
	s.holders[o.LeaseID] = h
	if len(s.holders) == 1 || h.expires < s.nextExpiry {
		s.nextExpiry = h.expires
	}
	o.Granted, o.Existing, o.Fence, o.HeldUntil, o.InUse = true, false, h.fence, h.expires, len(s.holders)
}

// LeaseRenew moves the expiry of a live holding to Expires. Held is false
// when the lease no longer holds the slot (expired, released, or the slot
// now belongs to another grant under the same id with another fence).
//
//actors:wire lease.renew LeaseRef Flag
type LeaseRenew struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`
	Expires int64  `wire:"op"`

	Held bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *LeaseRenew) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		o.Held = false
		return
	}
	h, ok := s.holders[o.LeaseID]
	if !ok || h.fence != o.Fence {
		o.Held = false
		return
	}
	h.expires = o.Expires
	s.holders[o.LeaseID] = h
	s.nextExpiry = min(s.nextExpiry, h.expires)
	o.Held = true
}

// LeaseRelease frees the slot a lease holds. Released reports whether it
// still held one; releasing twice is harmless.
//
//actors:wire lease.release LeaseRef Flag
type LeaseRelease struct {
	Key     string `wire:"op"`
	LeaseID string `wire:"op"`
	Fence   uint64 `wire:"op"`

	Released bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *LeaseRelease) Apply(st *State) {
	s := Slot(st, KindLease, newLeaseTable).get(o.Key, st, false)
	if s == nil {
		o.Released = false
		return
	}
	h, ok := s.holders[o.LeaseID]
	if !ok || h.fence != o.Fence {
		o.Released = false
		return
	}
	delete(s.holders, o.LeaseID)
	o.Released = true
}

// LeaseUsage reports how many live leases hold slots of Key.
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
