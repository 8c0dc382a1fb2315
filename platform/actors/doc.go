// Package actors owns the hot, per-key state of a node: token buckets,
// quota counters, single-use markers, leases, breakers and the like. Each
// piece of state lives in exactly one shard actor (protoactor-go), which
// applies operations to it one message at a time, so no state here is ever
// guarded by a lock.
//
// The package never performs network or disk I/O and never blocks inside an
// actor: an Op is pure computation over the shard's maps.
package actors
