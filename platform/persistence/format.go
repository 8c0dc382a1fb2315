package persistence

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Formats of what this package writes to disk and to other nodes' disks:
// Raft log entries (raftpb.Batch.Format) and FSM snapshots (the
// "snapshot_format" member of the snapshot's JSON object). Each is the
// version this build writes and the highest it reads.
//
// Format 0 is what builds before versions (61b6550 and older) wrote: no
// version at all. Format 1 is the same layout with its version stated,
// so a reader reads 0 and 1 alike, and the previous release, which knows
// neither field, skips it (protobuf skips unknown fields, the catalog's
// JSON decoder unknown members) and reads what this build writes.
//
// A build that changes a layout, or adds a catalog command kind, raises
// the format it can read first and writes the new format only once every
// member of the cluster reads it (each node gossips what it reads:
// cluster.Cluster.ClusterReads; the version-skew policy in
// docs/operations.md: builds N and N-1 side by side). A reader that meets
// a format above its own refuses it with ErrUnknownFormat, a log line and
// trustd_format_refused_total, instead of misreading it.
const (
	LogFormat      uint32 = 1
	SnapshotFormat uint32 = 1
)

// ErrUnknownFormat is a log entry, snapshot or forwarded batch written in
// a format newer than this build reads: the node refuses it rather than
// misread it. Upgrading the node's binary is the remedy.
var ErrUnknownFormat = errors.New("persistence: format newer than this build reads; upgrade this node")

// Refusals counts what this node refused for its format, by kind.
type Refusals struct {
	Entries   uint64 `json:"entries"`   // Raft log entries (and forwarded batches)
	Snapshots uint64 `json:"snapshots"` // snapshots offered to Restore
}

type refusals struct {
	entries, snapshots atomic.Uint64
}

func (r *refusals) load() Refusals {
	return Refusals{Entries: r.entries.Load(), Snapshots: r.snapshots.Load()}
}

// checkFormat refuses a format above max.
func checkFormat(what string, got, max uint32) error {
	if got > max {
		return fmt.Errorf("%w: %s format %d, this build reads up to %d", ErrUnknownFormat, what, got, max)
	}
	return nil
}
