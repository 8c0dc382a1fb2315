package cluster

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// AskFormat is the version of the ask layout (clusterpb.Ask) this build
// writes and the highest it reads. Format 0 is what builds before
// versions (61b6550 and older) sent: no format field, the same layout as
// 1. Those builds skip the field (askMsg.decode skips unknown fields), so
// they read this build's asks while a cluster is upgraded. A receiver
// answers in the ask's format, so answers need no version of their own.
//
// A build that changes the layout reads the new format first and sends it
// only once every member reads it (docs/operations.md, version skew); a
// receiver that meets a format above its own refuses the ask
// (STATUS_BAD_REQUEST, a log line, trustd_format_refused_total) instead
// of misreading it.
const AskFormat uint32 = 1

// askFormatField is clusterpb.Ask's format field number.
const askFormatField = 6

// askTraceField is the number of clusterpb.Ask.trace, the sender's trace
// context (trace.go); written only when the ask is traced.
const askTraceField = 7

// appendAskFormat appends this build's format to an encoded ask: the one
// line the sender needs, at the end, where proto.Marshal puts the
// highest-numbered field.
func appendAskFormat(b []byte) []byte {
	b = protowire.AppendTag(b, askFormatField, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(AskFormat))
}

// formatRefusals counts the asks this node refused for their format and
// keeps the log to one line per refusalLogEvery, however many asks a
// newer peer sends.
type formatRefusals struct {
	asks   atomic.Uint64
	logged atomic.Int64 // unix nanoseconds of the last log line
}

const refusalLogEvery = 10 * time.Second

// askReadable reports whether this build reads a's format; false: ans
// holds the refusal.
func (r *formatRefusals) askReadable(a *askMsg, ans *answer, log *slog.Logger) bool {
	if a.format <= uint64(AskFormat) {
		return true
	}
	n := r.asks.Add(1)
	ans.status = clusterpb.Status_STATUS_BAD_REQUEST
	ans.err = fmt.Sprintf("ask format %d is newer than this node reads (up to %d); upgrade this node", a.format, AskFormat)
	now, last := time.Now().UnixNano(), r.logged.Load()
	if log != nil && now-last >= int64(refusalLogEvery) && r.logged.CompareAndSwap(last, now) {
		log.Error("cluster: refused an ask written in a newer format; upgrade this node",
			"format", a.format, "reads_up_to", AskFormat, "kind", string(a.kind), "refused_total", n)
	}
	return false
}

// Formats are the highest formats a node reads of what nodes write for
// each other: Raft log entries and snapshots (platform/persistence/format.go) and
// forwarded asks (AskFormat). Every node gossips its own (Meta.Formats).
type Formats struct {
	Log, Snapshot, Ask uint32
}

// legacyFormats is what a member that gossips no formats reads: it runs a
// build from before versions (61b6550), which reads format 1 (the same
// layouts as its own format 0) of each.
var legacyFormats = Formats{Log: 1, Snapshot: 1, Ask: 1}

func (f Formats) orDefault() Formats {
	if f == (Formats{}) {
		return Formats{Log: 1, Snapshot: 1, Ask: AskFormat}
	}
	return f
}

func (f Formats) pb() *clusterpb.Formats {
	if f == (Formats{}) {
		return nil
	}
	return &clusterpb.Formats{Log: f.Log, Snapshot: f.Snapshot, Ask: f.Ask}
}

func formatsOf(pb *clusterpb.Formats) Formats {
	if pb == nil {
		return Formats{}
	}
	return Formats{Log: pb.Log, Snapshot: pb.Snapshot, Ask: pb.Ask}
}

// Reads is what m's node reads: its gossiped formats, or those of the
// builds before versions when it gossips none.
func (m Meta) Reads() Formats {
	if m.Formats == (Formats{}) {
		return legacyFormats
	}
	return m.Formats
}

// ClusterReads is, for each kind, the highest format every live member
// reads: a build that brings format N+1 of a kind keeps writing N until
// this says N+1 (docs/operations.md, version skew). It sees the members
// gossip sees; the policy (every node on N or N-1, one upgrade at a time)
// covers a member that is down meanwhile.
func (c *Cluster) ClusterReads() Formats {
	return minReads(c.Members())
}

func minReads(members []Meta) Formats {
	out := Formats{}
	for i, m := range members {
		r := m.Reads()
		if i == 0 {
			out = r
			continue
		}
		out = Formats{Log: min(out.Log, r.Log), Snapshot: min(out.Snapshot, r.Snapshot), Ask: min(out.Ask, r.Ask)}
	}
	return out
}

// RefusedAsks is how many asks this node refused for their format.
func (c *Cluster) RefusedAsks() uint64 { return c.formats.asks.Load() }
