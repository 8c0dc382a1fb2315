package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// MaxVoters is how many Raft voters the leader keeps; further nodes join
// as non-voters (they replicate the log and serve reads but do not vote).
const MaxVoters = 5

// reconcileLoop keeps the Raft configuration in step with gossip. Only
// the leader changes it, as Consul does: Raft membership follows
// memberlist through one place, never through each node on its own.
func (c *Cluster) reconcileLoop() {
	defer c.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.recon:
		}
		if c.cons.Raft().State() == raft.Leader {
			c.reconcile()
		}
	}
}

// reconcile adds live members missing from the Raft configuration (voters
// up to MaxVoters, then non-voters), promotes non-voters while voters are
// short, and removes members that left gracefully or were dead longer
// than ReapAfter.
func (c *Cluster) reconcile() {
	r := c.cons.Raft()
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	servers := map[string]raft.Server{}
	voters := 0
	for _, s := range f.Configuration().Servers {
		servers[string(s.ID)] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	alive := map[string]Meta{}
	for _, m := range c.Members() {
		alive[m.ID] = m
	}
	const timeout = 5 * time.Second
	for id, m := range alive {
		if id == c.cfg.NodeID || m.RaftAddr == "" || m.State == Draining {
			continue
		}
		s, known := servers[id]
		addr := raft.ServerAddress(m.RaftAddr)
		switch {
		case !known || s.Address != addr:
			var err error
			if voters < MaxVoters || (known && s.Suffrage == raft.Voter) {
				err = r.AddVoter(raft.ServerID(id), addr, 0, timeout).Error()
				if err == nil && !(known && s.Suffrage == raft.Voter) {
					voters++
				}
			} else {
				err = r.AddNonvoter(raft.ServerID(id), addr, 0, timeout).Error()
			}
			c.logChange("add", id, err)
		case s.Suffrage == raft.Nonvoter && voters < MaxVoters:
			err := r.AddVoter(raft.ServerID(id), addr, 0, timeout).Error()
			if err == nil {
				voters++
			}
			c.logChange("promote", id, err)
		}
	}
	c.mu.Lock()
	left, dead := map[string]bool{}, map[string]bool{}
	for id := range c.left {
		left[id] = true
	}
	for id, at := range c.dead {
		dead[id] = time.Since(at) > c.cfg.ReapAfter
	}
	c.mu.Unlock()
	for id := range servers {
		if id == c.cfg.NodeID {
			continue
		}
		if _, ok := alive[id]; !ok && (left[id] || dead[id]) {
			c.logChange("remove", id, r.RemoveServer(raft.ServerID(id), 0, timeout).Error())
		}
	}
}

func (c *Cluster) logChange(what, id string, err error) {
	if err != nil {
		c.log.Warn("raft membership change failed", "change", what, "node_id", id, "err", err)
		return
	}
	c.log.Info("raft membership changed", "change", what, "node_id", id)
}
