package cluster

import (
	"fmt"
	"time"

	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// Ownership hand-off. When the ring changes, this node pushes:
//
//   - to the new owner of every partition it owned and lost, all the
//     partition's exportable state (soft state such as buckets, and
//     markers);
//   - to the new replica of every partition it owns whose replica
//     changed, the partition's replicated state (markers), so a marker
//     survives a second failure too.
//
// Markers need no hand-off to stay safe across one change: the replica
// of a partition is the node that becomes its owner when the owner goes,
// and the old owner is the replica of a node that joins.

const handoffTimeout = 3 * time.Second

type handoffPlan struct {
	all        map[int]bool // partitions whose full state goes to dest
	replicated map[int]bool // partitions whose replicated state goes to dest
}

func (c *Cluster) handoff(prev, next *Ring) {
	plans := map[string]*handoffPlan{}
	dests := map[string]Member{}
	plan := func(m Member) *handoffPlan {
		p := plans[m.ID]
		if p == nil {
			p = &handoffPlan{all: map[int]bool{}, replicated: map[int]bool{}}
			plans[m.ID] = p
			dests[m.ID] = m
		}
		return p
	}
	for p := 0; p < Partitions; p++ {
		no := next.Owner(p)
		if prev.OwnsLocally(p) && no >= 0 && no != next.Self {
			plan(next.Members[no]).all[p] = true
		}
		if next.OwnsLocally(p) {
			nr := next.Replica(p)
			if nr >= 0 && (prev.Replica(p) < 0 || prev.Members[prev.Replica(p)].ID != next.Members[nr].ID) {
				plan(next.Members[nr]).replicated[p] = true
			}
		}
	}
	for id, pl := range plans {
		// A new owner waits for this hand-off before it decides for the
		// partitions (hold.go), so it is retried while the ring stands;
		// once the ring moves on, the next hand-off carries a newer epoch.
		for attempt := 0; ; attempt++ {
			err := c.sendHandoff(next.Epoch, dests[id], pl)
			if err == nil {
				break
			}
			if attempt >= 20 || c.router.Ring() != next {
				c.log.Warn("hand-off failed", "to", id, "err", err)
				break
			}
			select {
			case <-c.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (c *Cluster) sendHandoff(epoch uint64, to Member, pl *handoffPlan) error {
	sys := c.router.Local()
	h := &clusterpb.Handoff{Epoch: epoch, From: c.cfg.NodeID, Format: HandoffFormat}
	collect := func(in map[int]bool, replicatedOnly bool) error {
		if len(in) == 0 {
			return nil
		}
		for i := 0; i < sys.Shards(); i++ {
			op := &actors.Export{In: func(p int) bool { return in[p] }, ReplicatedOnly: replicatedOnly}
			if err := sys.Ask(i, op, handoffTimeout); err != nil {
				return err
			}
			for _, ch := range op.Chunks {
				h.Chunks = append(h.Chunks, &clusterpb.StateChunk{Kind: uint32(ch.Kind), Partition: uint32(ch.Partition), Data: ch.Data})
			}
		}
		return nil
	}
	if err := collect(pl.all, false); err != nil {
		return err
	}
	if err := collect(pl.replicated, true); err != nil {
		return err
	}
	if len(h.Chunks) == 0 && len(pl.all) == 0 {
		return nil // a new owner waits for an (even empty) hand-off; a replica does not
	}
	body, err := gproto.Marshal(h)
	if err != nil {
		return err
	}
	_, err = c.trans.call(to.PeerAddr, pathHandoff, body, nil, handoffTimeout)
	if err == nil {
		c.log.Info("handed off state", "to", to.ID, "chunks", len(h.Chunks))
	}
	return err
}

// importHandoff merges received chunks into the local shards.
func (c *Cluster) importHandoff(h *clusterpb.Handoff) error {
	c.router.Observe(h.Epoch)
	for _, ch := range h.Chunks {
		kind, p := actors.Kind(ch.Kind), int(ch.Partition)
		if p >= Partitions || ch.Kind > 255 {
			return fmt.Errorf("cluster: hand-off chunk of kind %d for partition %d", ch.Kind, p)
		}
		op := &actors.Import{Chunk: actors.Chunk{Kind: kind, Partition: p, Data: ch.Data}}
		if err := c.router.AskLocal(p, op); err != nil {
			return err
		}
		if op.Err != nil {
			return op.Err
		}
	}
	c.mu.Lock()
	if h.Epoch > c.handedOff[h.From] {
		c.handedOff[h.From] = h.Epoch
	}
	c.mu.Unlock()
	return nil
}
