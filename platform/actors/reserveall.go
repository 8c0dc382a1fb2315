package actors

// ReserveAll runs the Reserves of one rate-limit check whose keys all live
// on one shard, in order, as one op: all or none. When a Reserve marked
// Binding refuses, every Reserve of the op that took is refunded before the
// op returns, so no other check ever sees capacity that a refused check
// held for a moment, and the check needs no refund round trip. Reserves not
// marked Binding (observe-mode policies) are applied but their refusal
// undoes nothing, as when they run one by one.
//
// A full table (the ask fails with ErrTableFull) also refunds every Reserve
// that took, so a failed ask holds nothing.
//
// Parts[i] is the partition of Ops[i].Key (recorded by the bucket entry for
// hand-off). The op runs on this node only (it is not a WireOp): the caller
// uses it when this node owns every key and one shard holds them all.
type ReserveAll struct {
	Ops     []*Reserve
	Parts   []int
	Binding []bool

	// Undone is set when a Binding Reserve refused and every Reserve that
	// took was refunded (their OK stays true: they took, then gave back).
	Undone bool
}

// Apply implements Op.
func (o *ReserveAll) Apply(st *State) {
	o.Undone = false
	own := st.Partition
	defer func() { st.Partition = own }()
	refuse := false
	for i, r := range o.Ops {
		st.Partition = o.Parts[i]
		r.Apply(st)
		// A full table fails the whole ask (ErrTableFull): hold nothing.
		if st.refused {
			refuse = true
			break
		}
		refuse = refuse || (!r.OK && o.Binding[i])
	}
	if !refuse {
		return
	}
	for i := len(o.Ops) - 1; i >= 0; i-- {
		if r := o.Ops[i]; r.OK {
			rf := Refund{Key: r.Key, Bucket: r.Bucket, Cost: r.Cost, QuotaStart: r.QuotaStart, QuotaLimit: r.QuotaLimit}
			rf.Apply(st)
		}
	}
	o.Undone = true
}
