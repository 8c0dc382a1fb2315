// Package actors owns the hot, per-key state of a node: token buckets,
// quota counters, single-use markers, leases, breakers and the like. Each
// piece of state lives in exactly one shard, which applies operations to
// it one at a time: an op runs on the asking goroutine while it holds the
// shard's one slot (a lock with a bounded wait), so check-and-consume is
// atomic and a local ask costs no goroutine switch.
//
// The package never performs network or disk I/O and never blocks inside an
// actor: an Op is pure computation over the shard's maps.
package actors
