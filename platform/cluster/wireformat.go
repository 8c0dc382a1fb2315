package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"

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

// HandoffFormat, StatusFormat and LeaveFormat are the versions of the
// layouts of the other peer messages this build writes and the highest it
// reads: an ownership hand-off (clusterpb.Handoff with its chunks, whose
// data are the actors tables' Export encodings), a status report
// (clusterpb.NodeStatus) and a leave request (clusterpb.LeaveRequest).
// They follow AskFormat's rules: format 0 is what builds before them sent
// (no field, the same layout as 1), those builds skip the field, and a
// receiver that meets a format above its own refuses the message with a
// log line and trustd_format_refused_total{what="handoff"|"status"|"leave"}
// instead of misreading it. A change to a table's Export encoding is a new
// HandoffFormat.
const (
	HandoffFormat uint32 = 1
	StatusFormat  uint32 = 1
	LeaveFormat   uint32 = 1
)

// formatRefusals counts the messages this node refused for their format,
// per kind of message, and keeps the log to one line per kind per
// refusalLogEvery, however many messages a newer peer sends.
type formatRefusals struct {
	asks, handoffs, statuses, leaves refusalCount
}

// refusalCount counts the refusals of one kind of message and limits
// their log lines.
type refusalCount struct {
	n      atomic.Uint64
	logged atomic.Int64 // unix nanoseconds of the last log line
}

const refusalLogEvery = 10 * time.Second

// refuse counts one refusal and logs msg with args (and the count so far)
// unless a line of this kind was logged less than refusalLogEvery ago.
func (r *refusalCount) refuse(log *slog.Logger, msg string, args ...any) {
	n := r.n.Add(1)
	now, last := time.Now().UnixNano(), r.logged.Load()
	if log != nil && now-last >= int64(refusalLogEvery) && r.logged.CompareAndSwap(last, now) {
		log.Error(msg, append(args, "refused_total", n)...)
	}
}

// askReadable reports whether this build reads a's format; false: ans
// holds the refusal.
func (r *formatRefusals) askReadable(a *askMsg, ans *answer, log *slog.Logger) bool {
	if a.format <= uint64(AskFormat) {
		return true
	}
	ans.status = clusterpb.Status_STATUS_BAD_REQUEST
	ans.err = fmt.Sprintf("ask format %d is newer than this node reads (up to %d); upgrade this node", a.format, AskFormat)
	r.asks.refuse(log, "cluster: refused an ask written in a newer format; upgrade this node",
		"format", a.format, "reads_up_to", AskFormat, "kind", string(a.kind))
	return false
}

// ErrFormat is a peer message of a format newer than this build reads
// (a hand-off, a status report, a leave request): refused, never
// misread. The node that meets it is the one to upgrade.
var ErrFormat = errors.New("cluster: peer message of a newer format")

// handoffReadable returns nil when this build reads h's format, else the
// refusal (counted and logged); h is then not imported.
func (r *formatRefusals) handoffReadable(h *clusterpb.Handoff, log *slog.Logger) error {
	if h.Format <= HandoffFormat {
		return nil
	}
	r.handoffs.refuse(log, "cluster: refused a hand-off written in a newer format; upgrade this node",
		"format", h.Format, "reads_up_to", HandoffFormat, "from", h.From, "chunks", len(h.Chunks))
	return fmt.Errorf("%w: hand-off format %d is newer than this node reads (up to %d); upgrade this node", ErrFormat, h.Format, HandoffFormat)
}

// decodeStatus decodes a peer's status report; a report of a format this
// build does not read is refused (counted and logged) and the peer is
// treated as one that did not answer.
func (r *formatRefusals) decodeStatus(b []byte, log *slog.Logger) (*clusterpb.NodeStatus, error) {
	var st clusterpb.NodeStatus
	if err := gproto.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	if st.Format > StatusFormat {
		r.statuses.refuse(log, "cluster: refused a status report written in a newer format; upgrade this node",
			"format", st.Format, "reads_up_to", StatusFormat, "node", st.Id)
		return nil, fmt.Errorf("%w: status format %d from %q is newer than this node reads (up to %d); upgrade this node", ErrFormat, st.Format, st.Id, StatusFormat)
	}
	return &st, nil
}

// leaveRequest encodes this build's leave request.
func leaveRequest() []byte {
	b, _ := gproto.Marshal(&clusterpb.LeaveRequest{Format: LeaveFormat})
	return b
}

// leaveReadable returns nil when body is a leave request this build reads
// (an empty body is the previous release's), else the refusal; a refused
// request leaves nothing.
func (r *formatRefusals) leaveReadable(body []byte, log *slog.Logger) error {
	var req clusterpb.LeaveRequest
	if err := gproto.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("cluster: undecodable leave request: %w", err)
	}
	if req.Format <= LeaveFormat {
		return nil
	}
	r.leaves.refuse(log, "cluster: refused a leave request written in a newer format; upgrade this node",
		"format", req.Format, "reads_up_to", LeaveFormat)
	return fmt.Errorf("%w: leave request format %d is newer than this node reads (up to %d); upgrade this node", ErrFormat, req.Format, LeaveFormat)
}

// Formats are the highest formats a node reads of what nodes write for
// each other: Raft log entries and snapshots (platform/persistence/format.go),
// forwarded asks (AskFormat), hand-offs, status reports and leave
// requests (HandoffFormat, StatusFormat, LeaveFormat). Every node gossips
// its own (Meta.Formats).
type Formats struct {
	Log, Snapshot, Ask     uint32
	Handoff, Status, Leave uint32
}

// orDefault fills what the node's configuration left zero with what this
// build reads (node/ names the persistence formats and the ask's).
func (f Formats) orDefault() Formats {
	f.Log = cmp.Or(f.Log, 1)
	f.Snapshot = cmp.Or(f.Snapshot, 1)
	f.Ask = cmp.Or(f.Ask, AskFormat)
	f.Handoff = cmp.Or(f.Handoff, HandoffFormat)
	f.Status = cmp.Or(f.Status, StatusFormat)
	f.Leave = cmp.Or(f.Leave, LeaveFormat)
	return f
}

func (f Formats) pb() *clusterpb.Formats {
	if f == (Formats{}) {
		return nil
	}
	return &clusterpb.Formats{Log: f.Log, Snapshot: f.Snapshot, Ask: f.Ask, Handoff: f.Handoff, Status: f.Status, Leave: f.Leave}
}

func formatsOf(pb *clusterpb.Formats) Formats {
	if pb == nil {
		return Formats{}
	}
	return Formats{Log: pb.Log, Snapshot: pb.Snapshot, Ask: pb.Ask, Handoff: pb.Handoff, Status: pb.Status, Leave: pb.Leave}
}

// Reads is what m's node reads: its gossiped formats, each kind it does
// not name at 1 (a build from before versions, 61b6550, names none; one
// from before the hand-off, status and leave formats names only the log,
// snapshot and ask formats: both read format 1, the layout of format 0,
// of what they do not name).
func (m Meta) Reads() Formats {
	f := m.Formats
	for _, v := range []*uint32{&f.Log, &f.Snapshot, &f.Ask, &f.Handoff, &f.Status, &f.Leave} {
		*v = max(*v, 1)
	}
	return f
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
		out = Formats{Log: min(out.Log, r.Log), Snapshot: min(out.Snapshot, r.Snapshot), Ask: min(out.Ask, r.Ask),
			Handoff: min(out.Handoff, r.Handoff), Status: min(out.Status, r.Status), Leave: min(out.Leave, r.Leave)}
	}
	return out
}

// RefusedAsks is how many asks this node refused for their format.
func (c *Cluster) RefusedAsks() uint64 { return c.formats.asks.n.Load() }

// Refused counts the peer messages this node refused for their format,
// by kind (trustd_format_refused_total's what label).
type Refused struct {
	Asks, Handoffs, Statuses, Leaves uint64
}

// RefusedFormats is how many peer messages of each kind this node refused
// for their format.
func (c *Cluster) RefusedFormats() Refused {
	f := &c.formats
	return Refused{Asks: f.asks.n.Load(), Handoffs: f.handoffs.n.Load(), Statuses: f.statuses.n.Load(), Leaves: f.leaves.n.Load()}
}
