package actors

// Redemption markers: a single-use id that also remembers the outcome of
// its first use. /siteverify consumes a response token with one, so that
// the first recognised use decides, and a retry carrying the same
// idempotency key gets the first outcome back instead of a duplicate;
// detection feedback de-duplicates exact retries the same way. The check,
// the consumption and the storing of the outcome are one Apply, so no
// interleaving can split them.

// Outcome is what the first use of an id decided, opaque to the actor.
type Outcome struct {
	// Codes is a bit set of result codes of the caller's choosing.
	Codes uint32
	// Ref is a reference the caller needs to answer a replay alike (an
	// assessment id, a record id).
	Ref string
	// At is when the first use happened, Unix ns.
	At int64
}

type redemption struct {
	expires int64
	key     string
	outcome Outcome
}

type redeemTable struct {
	m map[string]redemption
}

func newRedeemTable() *redeemTable { return &redeemTable{m: make(map[string]redemption)} }

func (t *redeemTable) Sweep(now int64) {
	for id, r := range t.m {
		if r.expires <= now {
			delete(t.m, id)
		}
	}
}

// Redeem consumes ID until Expires, storing Outcome on first use. A later
// Redeem of the same ID is Replayed (and gets the stored Outcome) only when
// both carry the same non-empty Key; otherwise it is neither First nor
// Replayed: a duplicate.
type Redeem struct {
	ID      string
	Expires int64
	Key     string
	Outcome Outcome

	First    bool
	Replayed bool
}

// Apply implements Op.
func (o *Redeem) Apply(st *State) {
	t := Slot(st, KindRedeem, newRedeemTable)
	if r, ok := t.m[o.ID]; ok && r.expires > st.Now {
		o.First = false
		o.Replayed = o.Key != "" && r.key == o.Key
		if o.Replayed {
			o.Outcome = r.outcome
		}
		return
	}
	t.m[o.ID] = redemption{expires: o.Expires, key: o.Key, outcome: o.Outcome}
	o.First, o.Replayed = true, false
}
