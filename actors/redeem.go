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
// it, then the partition's replica, and a use is first only if both saw it
// first. A replay (same key) is confirmed by the replica too, and the
// replica's stored record wins: when the replica knew the id first, the
// owner adopts its record (Adopter), so the owner and its successor hold
// the same first outcome and an idempotent retry after a failover gets it.

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
// Replayed: a duplicate.
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

	First    bool `wire:"result"`
	Replayed bool `wire:"result"`

	// held is the stored record when the use was not first; it travels
	// in the result so an owner can adopt its replica's record.
	held *redemption `wire:"result" wireenc:"o.heldPB($)" wiredec:"heldOf"`
	// adopt is the replica's record the owner takes over (MergeReplica).
	adopt *redemption
}

// Apply implements Op.
func (o *Redeem) Apply(st *State) {
	t := Slot(st, KindRedeem, newRedeemTable)
	o.held, o.adopt = nil, nil
	if r, ok := t.m[o.ID]; ok && r.expires > st.Now {
		o.First = false
		o.Replayed = o.Key != "" && r.key == o.Key
		if o.Replayed {
			o.Outcome = r.outcome
		}
		o.held = &r
		return
	}
	if _, ok := t.m[o.ID]; !ok && !st.Room(KindRedeem, len(t.m)) {
		return // refused: the table is full; the ask fails closed
	}
	t.m[o.ID] = redemption{expires: o.Expires, key: o.Key, outcome: o.Outcome, partition: int32(st.Partition)}
	o.First, o.Replayed = true, false
	if o.Record != nil {
		Slot(st, KindVerification, newVerificationTable).m[o.Record.ID] = *o.Record
	}
}

// ReplicaOp implements Replicated: a first use and a replay both need the
// replica's word (a replay answers the stored outcome, which must be the
// one both nodes hold); a duplicate is final already.
func (o *Redeem) ReplicaOp() WireOp {
	if !o.First && !o.Replayed {
		return nil
	}
	return &Redeem{ID: o.ID, Expires: o.Expires, Key: o.Key, Outcome: o.Outcome, Record: o.Record}
}

// MergeReplica implements Replicated: when the replica already held the
// id, its record decides the answer and is adopted by the owner.
func (o *Redeem) MergeReplica(replica WireOp) {
	r, ok := replica.(*Redeem)
	if !ok || r.First {
		return
	}
	o.First, o.Replayed = false, r.Replayed
	if r.Replayed {
		o.Outcome = r.Outcome
	}
	if r.held != nil && (o.held == nil || *o.held != *r.held) {
		o.adopt = r.held
	}
}

// Adopt implements Adopter: the owner takes over the replica's record.
func (o *Redeem) Adopt() Op {
	if o.adopt == nil {
		return nil
	}
	return &adoptRedemption{ID: o.ID, R: *o.adopt}
}

// Revert implements Replicated: a first use the replica did not confirm
// is forgotten on the owner, so the caller's retry can still succeed. A
// replay changed nothing.
func (o *Redeem) Revert() Op {
	if !o.First {
		return nil
	}
	return &releaseRedemption{ID: o.ID, Key: o.Key, Outcome: o.Outcome}
}

// adoptRedemption overwrites the owner's record of ID with its replica's.
// It is not a WireOp: only the owner's own router applies it.
type adoptRedemption struct {
	ID string
	R  redemption
}

func (o *adoptRedemption) Apply(st *State) {
	o.R.partition = int32(st.Partition)
	Slot(st, KindRedeem, newRedeemTable).m[o.ID] = o.R
}

// releaseRedemption forgets the record of ID that an unconfirmed first
// use stored, unless another record replaced it since. It is not a
// WireOp: no other node may make this one forget a use.
type releaseRedemption struct {
	ID      string
	Key     string
	Outcome Outcome
}

func (o *releaseRedemption) Apply(st *State) {
	t := Slot(st, KindRedeem, newRedeemTable)
	if r, ok := t.m[o.ID]; ok && r.key == o.Key && r.outcome == o.Outcome {
		delete(t.m, o.ID)
	}
}
