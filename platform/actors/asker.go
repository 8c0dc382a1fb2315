package actors

// Asker runs an op on the shard that owns key: *cluster.Router across the
// cluster (forwarding to the owner), a node's local shards in tests.
// Product modules hold one, passed down by node/, and build no routing of
// their own.
type Asker interface {
	Ask(key string, op Op) error
}

// PartitionAsker also reaches a partition directly: a key's partition
// computed once and reused, or a walk over every partition.
type PartitionAsker interface {
	Asker
	AskPartition(p int, op Op) error
}
