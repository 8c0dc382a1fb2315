// Package cluster decides which node owns a key and carries an ask there.
// It owns the ring (1024 fixed partitions placed on members by rendezvous
// hashing, swapped atomically with an epoch) and the Router, the only way a
// handler reaches per-key state.
//
// It never interprets the state it routes to; that belongs to package actors.
package cluster
