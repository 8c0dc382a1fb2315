package actors

import "context"

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

// ContextAsker also carries a request's context to an ask it forwards
// (*cluster.Router: the request's trace continues on the owner).
type ContextAsker interface {
	AskContext(ctx context.Context, key string, op Op) error
}

// AskIn asks a within ctx when a is a ContextAsker and ctx is set, else
// plainly. A module on a hot path resolves the ContextAsker once instead.
func AskIn(ctx context.Context, a Asker, key string, op Op) error {
	if ca, ok := a.(ContextAsker); ok && ctx != nil {
		return ca.AskContext(ctx, key, op)
	}
	return a.Ask(key, op)
}
