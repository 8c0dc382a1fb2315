package actors

// Single-use markers: a response token, nonce, proof or de-duplication key
// is consumed exactly once because the one shard that owns its id decides.
// An entry is kept until its expiry (callers add their clock-skew
// allowance), after which the id would be refused by its own expiry check
// anyway, so forgetting it opens no replay window.

type markerTable struct {
	m map[string]int64 // id → expiry, Unix ns
}

func newMarkerTable() *markerTable { return &markerTable{m: make(map[string]int64)} }

func (t *markerTable) Sweep(now int64) {
	for id, exp := range t.m {
		if exp <= now {
			delete(t.m, id)
		}
	}
}

// Consume marks ID as used until Expires. First reports whether this call
// was the first use; a later call for the same ID, before expiry, reports
// false.
type Consume struct {
	ID      string
	Expires int64

	First bool
}

// Apply implements Op.
func (o *Consume) Apply(st *State) {
	t := Slot(st, KindMarker, newMarkerTable)
	if exp, ok := t.m[o.ID]; ok && exp > st.Now {
		o.First = false
		return
	}
	t.m[o.ID] = o.Expires
	o.First = true
}

// Seen reports, without consuming, whether ID is marked as used.
type Seen struct {
	ID string

	Used bool
}

// Apply implements Op.
func (o *Seen) Apply(st *State) {
	t := Slot(st, KindMarker, newMarkerTable)
	exp, ok := t.m[o.ID]
	o.Used = ok && exp > st.Now
}
