package actors

// Redemption markers: a single-use id that also remembers the outcome of
// its first use. /siteverify consumes a response token with one, so that
// the first recognised use decides, and a retry carrying the same
// idempotency key gets the first outcome back instead of a duplicate;
// detection feedback de-duplicates exact retries the same way. The check,
// the consumption and the storing of the outcome are one Apply, so no
// interleaving can split them.
//
// In a cluster a Redeem is Replicated like a Consume: the owner applies
// it, then the partition's replica, and the replica's word decides.
// Faults leave a record on one node only: the owner's half of a use whose
// replica did not answer in time (reverted, unless the owner's own apply
// ran late), or the replica's half of a use whose answer was lost on the
// way back (the owner reverted its half). A retry must still meet its own
// first use there, and another caller must not be refused by a use that
// never happened. So a record is *tentative* until the owner has heard
// its replica hold the same record, then *confirmed* (the owner settles
// it after the round trip):
//
//   - a first use, a replay, and a duplicate refused by a tentative
//     record all go to the replica with the record the owner holds; the
//     replica's record wins (the owner settles on it, confirmed), so a
//     retry whose first use only the replica saw gets its first outcome,
//     and a caller refused by an unconfirmed use is refused only once
//     that use is on both nodes;
//   - a duplicate refused by a confirmed record is final on the owner;
//   - a replay of a confirmed record goes to the replica marked confirmed
//     and overrides a different record there (one left by a use under
//     another ring that no caller was ever answered), so a confirmed
//     first outcome is never overturned;
//   - a revert forgets only a tentative record.

// Outcome is what the first use of an id decided, opaque to the actor.
type Outcome struct {
	// Codes is a bit set of result codes of the caller's choosing.
	Codes uint32
	// Ref is a reference the caller needs to answer a replay alike (a
	// verification id, a record id).
	Ref string
	// At is when the first use happened, Unix ns.
	At int64
}

type redemption struct {
	expires   int64
	key       string
	outcome   Outcome
	partition int32
	// confirmed: the owner heard its replica hold this record.
	confirmed bool
}

// same reports whether r and o record the same use.
func (r *redemption) same(o *redemption) bool {
	return r.key == o.key && r.outcome == o.outcome
}

type redeemTable struct {
	m map[string]redemption
}

func newRedeemTable() *redeemTable { return &redeemTable{m: make(map[string]redemption)} }

func (t *redeemTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(r redemption) bool {
		return r.expires <= now
	})
}

// Redeem consumes ID until Expires, storing Outcome on first use. A later
// Redeem of the same ID is Replayed (and gets the stored Outcome) only when
// both carry the same non-empty Key; otherwise it is neither First nor
// Replayed: a duplicate. A Redeem whose Expires has passed is never a
// first use: it only finds a stored outcome (a retry after the token's
// own lifetime).
//
//actors:wire redeem Redemption RedeemResult
type Redeem struct {
	ID      string  `wire:"op"`
	Expires int64   `wire:"op"`
	Key     string  `wire:"op"`
	Outcome Outcome `wire:"op,result" wirevia:"outcome"`
	// Record, when set, is stored as a verification by the first use, in
	// the same step: /siteverify consumes the token and keeps its
	// verification in one ask, and no verification exists for a token
	// that was not consumed. Its ID must route to this op's partition
	// (see VerificationPartition).
	Record *Verification `wire:"op" wirevia:"verificationPtr"`
	// confirmed is set only on the op an owner sends its replica (see
	// ReplicaOp): the owner's record is confirmed and overrides another.
	confirmed bool `wire:"op"`

	First    bool `wire:"result"`
	Replayed bool `wire:"result"`

	// held is the stored record when the use was not first; it travels
	// in the result so an owner can settle on its replica's record.
	held *redemption `wire:"result" wireenc:"o.heldPB($)" wiredec:"heldOf"`
	// after is what the owner applies once the replica answered
	// (MergeReplica, Adopt): settle on the record both now hold, or undo
	// its own half when the replica gave no word.
	after Op
	// settling is after's storage when it settles (no allocation per use).
	settling settleRedemption
	// lookup: the op was past its expiry and the owner held no record;
	// the replica may still hold the first outcome.
	lookup bool
}

// Apply implements Op.
func (o *Redeem) Apply(st *State) {
	t := Slot(st, KindRedeem, newRedeemTable)
	o.held, o.after, o.lookup = nil, nil, false
	r, ok := t.m[o.ID]
	live := ok && r.expires > st.Now
	if live && o.confirmed && (r.key != o.Key || r.outcome != o.Outcome) {
		live = false // the owner's confirmed record overrides this one
	}
	if live {
		if o.confirmed && !r.confirmed {
			r.confirmed = true
			t.m[o.ID] = r
		}
		o.First = false
		o.Replayed = o.Key != "" && r.key == o.Key
		if o.Replayed {
			o.Outcome = r.outcome
		}
		o.held = &r
		return
	}
	o.First, o.Replayed = false, false
	if o.Expires <= st.Now {
		o.lookup = o.Key != ""
		return // past its expiry a use is never first
	}
	if !ok && !st.Room(KindRedeem, len(t.m)) {
		return // refused: the table is full; the ask fails closed
	}
	t.m[o.ID] = redemption{expires: o.Expires, key: o.Key, outcome: o.Outcome, partition: int32(st.Partition), confirmed: o.confirmed}
	o.First = true
	if o.Record != nil {
		Slot(st, KindVerification, newVerificationTable).m[o.Record.ID] = *o.Record
	}
}

// ReplicaOp implements Replicated: the record the owner holds for the id
// goes to the replica, unless the owner refused a duplicate on a
// confirmed record (final) or refused without one (a full table). A
// keyed use past its expiry that the owner knows nothing of asks the
// replica, which may hold its first outcome (the owner reverted its half
// of a use whose answer was lost); it consumes nothing there either.
func (o *Redeem) ReplicaOp() WireOp {
	switch {
	case o.First:
		return &Redeem{ID: o.ID, Expires: o.Expires, Key: o.Key, Outcome: o.Outcome, Record: o.Record}
	case o.lookup:
		return &Redeem{ID: o.ID, Expires: o.Expires, Key: o.Key}
	case o.held == nil, o.held.confirmed && !o.Replayed:
		return nil
	}
	h := o.held
	return &Redeem{ID: o.ID, Expires: h.expires, Key: h.key, Outcome: h.outcome, confirmed: h.confirmed}
}

// sent is the record the owner sent its replica (ReplicaOp).
func (o *Redeem) sent() redemption {
	if o.held == nil {
		return redemption{expires: o.Expires, key: o.Key, outcome: o.Outcome}
	}
	return *o.held
}

// MergeReplica implements Replicated: the record the replica holds now
// decides the answer, and the owner settles on it (Adopt).
func (o *Redeem) MergeReplica(replica WireOp) {
	r, ok := replica.(*Redeem)
	if !ok {
		return
	}
	var rec redemption
	switch {
	case r.First || r.Replayed:
		// The replica holds what was sent (a replay may find another
		// outcome under the same key there: the replica's wins).
		rec = o.sent()
		if r.Replayed {
			rec.outcome = r.Outcome
		}
		if r.held != nil {
			rec.expires = max(rec.expires, r.held.expires)
		}
	case r.held != nil:
		rec = *r.held
	default:
		// No word (the replica's table is full): fail closed, and leave
		// no use on the owner that its replica does not hold.
		if o.First {
			o.after = &releaseRedemption{ID: o.ID, Key: o.Key, Outcome: o.Outcome}
		}
		o.First, o.Replayed = false, false
		return
	}
	mine := o.First && rec.key == o.Key && rec.outcome == o.Outcome
	switch {
	case mine:
	case o.Key != "" && rec.key == o.Key:
		o.First, o.Replayed, o.Outcome = false, true, rec.outcome
	default:
		o.First, o.Replayed = false, false
	}
	if o.held == nil || !o.held.confirmed || !o.held.same(&rec) {
		rec.confirmed = true
		o.settling = settleRedemption{ID: o.ID, R: rec}
		o.after = &o.settling
	}
}

// Adopt implements Adopter: the owner settles on the record its replica
// holds (confirmed), or undoes its half when the replica gave no word.
func (o *Redeem) Adopt() Op { return o.after }

// Revert implements Replicated: a first use the replica did not confirm
// is forgotten on the owner (unless a replay confirmed it meanwhile), so
// another caller is not refused by a use that may never have happened; a
// retry with the same key meets its record on the replica if it got
// there. A replay or a duplicate changed nothing.
func (o *Redeem) Revert() Op {
	if !o.First {
		return nil
	}
	return &releaseRedemption{ID: o.ID, Key: o.Key, Outcome: o.Outcome}
}

// settleRedemption makes the owner's record of ID the one its replica
// holds, confirmed. It is not a WireOp: only the owner's own router
// applies it, with its replica's word.
type settleRedemption struct {
	ID string
	R  redemption
}

func (o *settleRedemption) Apply(st *State) {
	o.R.partition = int32(st.Partition)
	Slot(st, KindRedeem, newRedeemTable).m[o.ID] = o.R
}

// releaseRedemption forgets the record of ID that an unconfirmed first
// use stored, unless another record replaced it or it was confirmed
// since. It is not a WireOp: no other node may make this one forget a use.
type releaseRedemption struct {
	ID      string
	Key     string
	Outcome Outcome
}

func (o *releaseRedemption) Apply(st *State) {
	t := Slot(st, KindRedeem, newRedeemTable)
	if r, ok := t.m[o.ID]; ok && !r.confirmed && r.key == o.Key && r.outcome == o.Outcome {
		delete(t.m, o.ID)
	}
}
