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

// InContext asks within a request's context when its Asker takes one,
// else plainly. It is resolved once (NewInContext) so a hot path pays no
// type assertion per ask.
type InContext struct {
	a  Asker
	ca ContextAsker // nil when a takes no context
}

// NewInContext resolves a once.
func NewInContext(a Asker) InContext {
	ca, _ := a.(ContextAsker)
	return InContext{a: a, ca: ca}
}

// Ask runs op on key's owner, within ctx when ctx is set and the Asker
// takes contexts.
func (x InContext) Ask(ctx context.Context, key string, op Op) error {
	if x.ca != nil && ctx != nil {
		return x.ca.AskContext(ctx, key, op)
	}
	return x.a.Ask(key, op)
}
