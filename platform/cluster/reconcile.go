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

// reconcile admits verified live members to the Raft configuration (as
// non-voters, promoted once caught up while voters are short of
// MaxVoters: voters.go), and removes members that left gracefully or were
// dead longer than ReapAfter.
func (c *Cluster) reconcile() {
	r := c.cons.Raft()
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	servers := map[string]raft.Server{}
	for _, s := range f.Configuration().Servers {
		servers[string(s.ID)] = s
	}
	alive := map[string]Meta{}
	for _, m := range c.Members() {
		alive[m.ID] = m
	}
	c.admitVoters(r, f.Configuration().Servers, alive) // voters.go: only verified members, non-voters until caught up
	const timeout = 5 * time.Second
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
