// Package catalog owns the replicated configuration of the service:
// workspaces, sites, mobile apps, scoped credentials, signing keys and the
// durable records other modules keep. It is the state machine Raft
// replicates: commands are applied to an immutable Catalog value, producing
// the next one, which every node serves reads from without locks.
//
// Apply must be deterministic: commands carry every random value and
// timestamp they need; nothing here reads the clock, the network or disk.
package catalog
