// Package persistence owns the durable, replicated state of a node: one
// hashicorp/raft group whose log and stable store live in raft-boltdb, with
// file snapshots, applying catalog commands through an FSM. Every node
// serves reads from the FSM's latest immutable catalog, so authentication
// never leaves the node.
//
// It never serves HTTP and never decides what a command means; package
// catalog does.
package persistence
