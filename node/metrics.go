package node

import (
	"math"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/trustd/trustd/platform/actors"
)

// raftCollector exports the Raft state on each scrape.
type raftCollector struct {
	n                        *Node
	state, last, applied, ix *prometheus.Desc
	contact                  *prometheus.Desc
	panics, held             *prometheus.Desc
	frames, frameAsks        *prometheus.Desc
	dials                    *prometheus.Desc
	refused                  *prometheus.Desc
	streams                  *prometheus.Desc
}

func (n *Node) raftCollector() prometheus.Collector {
	return &raftCollector{n: n,
		state:   prometheus.NewDesc("trustd_raft_state", "Raft state of this node (1 for the current state).", []string{"state"}, nil),
		last:    prometheus.NewDesc("trustd_raft_last_index", "Last Raft log index.", nil, nil),
		applied: prometheus.NewDesc("trustd_raft_applied_index", "Last applied Raft index.", nil, nil),
		ix:      prometheus.NewDesc("trustd_catalog_index", "Raft index of the catalog served.", nil, nil),
		contact: prometheus.NewDesc("trustd_raft_last_contact_seconds",
			"Seconds since this follower last heard from the Raft leader (0 on the leader, +Inf when never): a follower no longer replicated to grows it.", nil, nil),
		held:   prometheus.NewDesc("trustd_actor_held_keys", "Keys held per kind of actor table on this node (at the last sweep); each table of each shard is capped by --max-keys-per-table.", []string{"table"}, nil),
		panics: prometheus.NewDesc("trustd_actor_op_panics_total", "Ops that panicked in a shard actor; each failed its request closed and the shard kept its state.", nil, nil),
		frames: prometheus.NewDesc("trustd_peer_frames_total", "Ask frames this node sent to the keys' owners (one HTTP request, or one write to a peer stream, each).", nil, nil),
		frameAsks: prometheus.NewDesc("trustd_peer_frame_asks_total",
			"Asks those frames carried: divided by trustd_peer_frames_total, how well forwarded asks share a frame.", nil, nil),
		streams: prometheus.NewDesc("trustd_peer_stream_events_total",
			"Peer streams (one long-lived connection per peer): opened and served by this node, broken with asks answered unavailable, fallback to HTTP frames for a peer without streams, version_refused for a handshake or frame of an unknown version, late_answer for an answer after its caller gave up.",
			[]string{"event"}, nil),
		dials: prometheus.NewDesc("trustd_peer_dials_total",
			"Connections this node tried to open to peers; a steady rate on an idle cluster is a peer dialled in a loop.", nil, nil),
		refused: prometheus.NewDesc("trustd_format_refused_total",
			"Raft log entries (and forwarded batches), snapshots, peer asks, hand-offs, status reports and leave requests this node refused because a newer build wrote them in a format it does not read; any is a node to upgrade (docs/operations.md, version skew).", []string{"what"}, nil),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.last
	ch <- c.applied
	ch <- c.ix
	ch <- c.contact
	ch <- c.panics
	ch <- c.held
	ch <- c.frames
	ch <- c.frameAsks
	ch <- c.dials
	ch <- c.refused
	ch <- c.streams
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.store.Raft()
	cur := r.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, s.String())
	}
	ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, float64(r.LastIndex()))
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(r.AppliedIndex()))
	ch <- prometheus.MustNewConstMetric(c.ix, prometheus.GaugeValue, float64(c.n.store.Catalog().Index))
	if cur != raft.Shutdown {
		ch <- prometheus.MustNewConstMetric(c.contact, prometheus.GaugeValue, lastContactSeconds(cur, r.LastContact(), time.Now()))
	}
	ch <- prometheus.MustNewConstMetric(c.panics, prometheus.CounterValue, float64(c.n.actors.Panics()))
	frames, asks := c.n.trans.Frames()
	ch <- prometheus.MustNewConstMetric(c.frames, prometheus.CounterValue, float64(frames))
	ch <- prometheus.MustNewConstMetric(c.frameAsks, prometheus.CounterValue, float64(asks))
	ch <- prometheus.MustNewConstMetric(c.dials, prometheus.CounterValue, float64(c.n.trans.Dials()))
	refused := c.n.store.Refused()
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused.Entries), "raft_entry")
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused.Snapshots), "snapshot")
	if c.n.cluster != nil {
		rf := c.n.cluster.RefusedFormats()
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(rf.Asks), "peer_ask")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(rf.Handoffs), "handoff")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(rf.Statuses), "status")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(rf.Leaves), "leave")
	}
	st := c.n.trans.StreamStats()
	for _, e := range []struct {
		name string
		n    uint64
	}{{"opened", st.Opened}, {"served", st.Served}, {"broken", st.Broken}, {"fallback", st.Fallbacks},
		{"version_refused", st.VersionRefused}, {"late_answer", st.Late}} {
		ch <- prometheus.MustNewConstMetric(c.streams, prometheus.CounterValue, float64(e.n), e.name)
	}
	held := c.n.actors.HeldKeys()
	for k, name := range actors.KindNames {
		if name != "" {
			ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(held[k]), name)
		}
	}
}

// lastContactSeconds is trustd_raft_last_contact_seconds: how long ago a
// follower last heard from its leader (issue 23: a follower that stops
// receiving entries must be noticed). The leader is in contact with
// itself; a node that never heard from a leader reports +Inf.
func lastContactSeconds(state raft.RaftState, last, now time.Time) float64 {
	switch {
	case state == raft.Leader:
		return 0
	case last.IsZero():
		return math.Inf(1)
	}
	return now.Sub(last).Seconds()
}
