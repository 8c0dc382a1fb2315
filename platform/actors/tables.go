package actors

import gproto "google.golang.org/protobuf/proto"

// Helpers every slot table shares: sweeping a map within a budget, and
// grouping entries by partition for a hand-off.

// sweep visits at most budget-1 entries of m (map order, so successive
// sweeps reach different ones) and deletes those drop reports done with;
// drop may also tidy the entry it is shown.
func sweep[K comparable, V any](m map[K]V, budget int, drop func(V) bool) {
	for k, v := range m {
		if budget--; budget == 0 {
			return
		}
		if drop(v) {
			delete(m, k)
		}
	}
}

// partitionSets collects a table's exported entries into one message per
// partition (an actorpb …Set or …Table) and hands each out encoded.
type partitionSets[S gproto.Message] struct {
	m   map[int32]S
	mk  func() S
	in  func(int) bool
	out func(int, []byte)
}

func newPartitionSets[S gproto.Message](in func(int) bool, out func(int, []byte), mk func() S) *partitionSets[S] {
	return &partitionSets[S]{m: map[int32]S{}, mk: mk, in: in, out: out}
}

// of returns the message of partition p, or ok false when p is not moving.
func (ps *partitionSets[S]) of(p int32) (s S, ok bool) {
	if !ps.in(int(p)) {
		return s, false
	}
	s, ok = ps.m[p]
	if !ok {
		s = ps.mk()
		ps.m[p] = s
	}
	return s, true
}

// emit encodes every partition's message and hands it out.
func (ps *partitionSets[S]) emit() {
	for p, s := range ps.m {
		if b, err := gproto.Marshal(s); err == nil {
			ps.out(int(p), b)
		}
	}
}
