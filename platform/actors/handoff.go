package actors

import "fmt"

// Hand-off of per-partition state. When ownership of a partition moves
// (a node joins or drains), the node losing it exports the partition's
// entries and the new owner imports them, so a bucket keeps its level and
// a marker stays used. Tables that hold such state implement Exporter and
// are listed in exporters; tables without an entry simply start afresh on
// the new owner.

// Exporter is implemented by slot tables whose entries belong to a
// partition and may move with it.
type Exporter interface {
	// Export calls out with the encoded entries of every partition for
	// which in reports true and that holds any. It runs inside the actor.
	Export(in func(partition int) bool, out func(partition int, data []byte))
	// Import merges entries encoded by Export into the table. Merging
	// keeps the more restrictive of two entries for one key (a marker
	// stays used, a bucket keeps the lower level).
	Import(data []byte, now int64) error
	// Replicated reports whether the table's entries also live on the
	// partition's replica (single-use markers); such state is copied to a
	// new replica as well as to a new owner.
	Replicated() bool
}

// exporters constructs, by kind, the tables that take part in hand-off.
var exporters = map[Kind]func() Exporter{
	KindMarker:  func() Exporter { return newMarkerTable() },
	KindBucket:  func() Exporter { return newBucketTable() },
	KindRedeem:  func() Exporter { return newRedeemTable() },
	KindLease:   func() Exporter { return newLeaseTable() },
	KindBreaker: func() Exporter { return newBreakerTable() },
}

// Chunk is the exported state of one kind in one partition.
type Chunk struct {
	Kind      Kind
	Partition int
	Data      []byte
}

// Export collects the state of the partitions for which In reports true
// from one shard. With ReplicatedOnly it collects only replicated state.
// Send it to every shard (System.Shards, partition i reaches shard i).
type Export struct {
	In             func(partition int) bool
	ReplicatedOnly bool

	Chunks []Chunk
}

// Apply implements Op.
func (o *Export) Apply(st *State) {
	for k, v := range st.slots {
		e, ok := v.(Exporter)
		if !ok || (o.ReplicatedOnly && !e.Replicated()) {
			continue
		}
		e.Export(o.In, func(p int, data []byte) {
			o.Chunks = append(o.Chunks, Chunk{Kind: Kind(k), Partition: p, Data: data})
		})
	}
}

// Import merges a chunk into the shard owning its partition (ask it with
// the chunk's partition).
type Import struct {
	Chunk Chunk

	Err error
}

// Apply implements Op.
func (o *Import) Apply(st *State) {
	k := o.Chunk.Kind
	mk, ok := exporters[k]
	if !ok || int(k) >= len(st.slots) {
		o.Err = fmt.Errorf("actors: kind %d takes no hand-off", k)
		return
	}
	if st.slots[k] == nil {
		st.slots[k] = mk()
	}
	e, ok := st.slots[k].(Exporter)
	if !ok {
		o.Err = fmt.Errorf("actors: kind %d table is no Exporter", k)
		return
	}
	o.Err = e.Import(o.Chunk.Data, st.Now)
}
