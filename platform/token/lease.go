package token

// LeasePrefix starts every concurrency lease token.
const LeasePrefix = "lease_"

// MaxLeaseSlots bounds the constraint slots one lease carries (a
// workspace's constraint cap).
const MaxLeaseSlots = 64

// maxLeaseText fits MaxLeaseSlots slots with full-length ids.
const maxLeaseText = 8192

// LeaseSlot is one constraint slot a lease holds.
type LeaseSlot struct {
	ConstraintID string
	ScopeHash    [16]byte
	Fence        uint64
}

// Lease is what a lease token says: which slots it holds, for whom, bound
// to the keyed hash of its context, until when.
type Lease struct {
	KeyID       string
	ID          string
	WorkspaceID string
	AppID       string
	Context     [16]byte
	// ExpiresMs is Unix milliseconds.
	ExpiresMs int64
	Slots     []LeaseSlot
}

// Sign returns the lease's text under k.
func (l *Lease) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 128+len(l.Slots)*64)}
	w.str(k.ID)
	w.u8(1)
	w.str(l.ID)
	w.str(l.WorkspaceID)
	w.str(l.AppID)
	w.fixed(l.Context[:])
	w.varint(l.ExpiresMs)
	w.uvarint(uint64(len(l.Slots)))
	for _, s := range l.Slots {
		w.str(s.ConstraintID)
		w.fixed(s.ScopeHash[:])
		w.uvarint(s.Fence)
	}
	return seal(k, LeasePrefix, w.b)
}

// DecodeLease verifies and parses a lease; expiry and binding are the
// caller's.
func DecodeLease(text string, keys Lookup) (Lease, error) {
	r, kid, err := openMax(text, LeasePrefix, keys, nil, maxLeaseText)
	if err != nil {
		return Lease{}, err
	}
	l := Lease{KeyID: kid}
	if r.u8() != 1 {
		return Lease{}, ErrMalformed
	}
	l.ID = r.str(64)
	l.WorkspaceID = r.str(64)
	l.AppID = r.str(64)
	r.fixed(l.Context[:])
	l.ExpiresMs = r.varint()
	n := r.uvarint()
	if r.bad || n > MaxLeaseSlots {
		return Lease{}, ErrMalformed
	}
	l.Slots = make([]LeaseSlot, n)
	for i := range l.Slots {
		s := &l.Slots[i]
		s.ConstraintID = r.str(64)
		r.fixed(s.ScopeHash[:])
		s.Fence = r.uvarint()
	}
	if !r.done() {
		return Lease{}, ErrMalformed
	}
	return l, nil
}
