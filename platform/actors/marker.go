package actors

import (
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/proto/actorpb"
)

// Single-use markers: a response token, nonce, proof or de-duplication key
// is consumed exactly once because the one shard that owns its id decides.
// An entry is kept until its expiry (callers add their clock-skew
// allowance), after which the id would be refused by its own expiry check
// anyway, so forgetting it opens no replay window.
//
// In a cluster a Consume is Replicated: the owner applies it, then the
// partition's replica applies it too, and the use counts as first only if
// both saw it first. The replica is the node that becomes owner when this
// one dies or leaves, and the old owner is the replica of a node that
// joins, so the successor always already holds every marker.

type marker struct {
	expires   int64 // Unix ns
	partition int32
}

type markerTable struct {
	m map[string]marker
}

func newMarkerTable() *markerTable { return &markerTable{m: make(map[string]marker)} }

func (t *markerTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(mk marker) bool {
		return mk.expires <= now
	})
}

// mark records id as used until expires, keeping the later expiry of two.
func (t *markerTable) mark(id string, expires int64, partition int) {
	if cur, ok := t.m[id]; ok && cur.expires >= expires {
		return
	}
	t.m[id] = marker{expires: expires, partition: int32(partition)}
}

func (t *markerTable) Replicated() bool { return true }

func (t *markerTable) Export(in func(int) bool, out func(int, []byte)) {
	sets := newPartitionSets(in, out, func() *actorpb.MarkerSet { return &actorpb.MarkerSet{} })
	for id, mk := range t.m {
		s, ok := sets.of(mk.partition)
		if !ok {
			continue
		}
		s.Markers = append(s.Markers, &actorpb.Marker{Id: id, Expires: mk.expires, Partition: uint32(mk.partition)})
	}
	sets.emit()
}

func (t *markerTable) Import(data []byte, now int64) error {
	var s actorpb.MarkerSet
	if err := gproto.Unmarshal(data, &s); err != nil {
		return err
	}
	for _, mk := range s.Markers {
		if mk.Expires > now {
			t.mark(mk.Id, mk.Expires, int(mk.Partition))
		}
	}
	return nil
}

// Consume marks ID as used until Expires. First reports whether this call
// was the first use; a later call for the same ID, before expiry, reports
// false.
//
//actors:wire marker.consume Marker MarkerResult
type Consume struct {
	ID      string `wire:"op"`
	Expires int64  `wire:"op"`

	First bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *Consume) Apply(st *State) {
	t := Slot(st, KindMarker, newMarkerTable)
	if mk, ok := t.m[o.ID]; ok && mk.expires > st.Now {
		o.First = false
		return
	}
	if _, ok := t.m[o.ID]; !ok && !st.Room(KindMarker, len(t.m)) {
		return // refused: the table is full; the ask fails closed
	}
	t.mark(o.ID, o.Expires, st.Partition)
	o.First = true
}

// ReplicaOp implements Replicated: only a first use needs the replica's
// confirmation; a refused replay is final already.
func (o *Consume) ReplicaOp() WireOp {
	if !o.First {
		return nil
	}
	return &Consume{ID: o.ID, Expires: o.Expires}
}

// MergeReplica implements Replicated.
func (o *Consume) MergeReplica(replica WireOp) {
	if r, ok := replica.(*Consume); ok && !r.First {
		o.First = false
	}
}

// Revert implements Replicated: a first use the replica did not confirm is
// forgotten on the owner, so the caller's retry (after ErrUnavailable) can
// still succeed; the replica, if it did apply it, keeps refusing.
func (o *Consume) Revert() Op {
	if !o.First {
		return nil
	}
	return &release{ID: o.ID}
}

// Seen reports, without consuming, whether ID is marked as used.
//
//actors:wire marker.seen Marker MarkerResult
type Seen struct {
	ID string `wire:"op"`

	Used bool `wire:"result" wirename:"Yes"`
}

// Apply implements Op.
func (o *Seen) Apply(st *State) {
	t := Slot(st, KindMarker, newMarkerTable)
	mk, ok := t.m[o.ID]
	o.Used = ok && mk.expires > st.Now
}

// release forgets a marker: the owner's undo of a Consume whose replica
// could not confirm it. It is deliberately not a WireOp: no other node
// may make this one forget a use.
type release struct{ ID string }

func (o *release) Apply(st *State) { delete(Slot(st, KindMarker, newMarkerTable).m, o.ID) }
