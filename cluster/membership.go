package cluster

import (
	"os"
	"slices"
	"strings"
	"time"
)

// membershipLoop is the one goroutine that turns membership events into
// rings. Events are debounced: a burst (a node joining and turning ready,
// several nodes failing together) produces one new ring, not one per
// event, so partitions do not flap between owners.
func (c *Cluster) membershipLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.events:
		}
		quiet := time.NewTimer(c.cfg.Debounce)
		limit := time.NewTimer(4 * c.cfg.Debounce)
	debounce:
		for {
			select {
			case <-c.stop:
				quiet.Stop()
				limit.Stop()
				return
			case <-c.events:
				quiet.Reset(c.cfg.Debounce)
			case <-quiet.C:
				break debounce
			case <-limit.C:
				break debounce
			}
		}
		quiet.Stop()
		limit.Stop()
		c.rebuild(0)
		c.signal(c.recon)
	}
}

// rebuild publishes the ring of the current ready members if it differs
// from the router's, numbered after every epoch seen so far (and after
// atLeast), and returns the router's ring. A ring change starts the
// hand-off of the partitions this node lost.
func (c *Cluster) rebuild(atLeast uint64) *Ring {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	var ready []Member
	for _, m := range c.Members() {
		if m.State == Ready {
			ready = append(ready, m.Member())
		}
	}
	cur := c.router.Ring()
	if cur != nil && slices.Equal(cur.Members, ready) {
		return cur
	}
	epoch := max(c.router.Seen(), atLeast)
	if cur != nil {
		epoch = max(epoch, cur.Epoch)
	}
	next := NewRing(epoch+1, ready, c.cfg.NodeID)
	c.router.SetRing(next)
	c.log.Info("ring changed", "epoch", next.Epoch, "members", len(ready), "owns", next.Share()[c.cfg.NodeID])
	c.rememberPeers()
	if cur != nil && len(cur.Members) > 0 {
		c.wg.Add(1)
		c.handoffs.Add(1)
		go func() {
			defer c.wg.Done()
			defer c.handoffs.Done()
			c.handoff(cur, next)
		}()
	}
	return next
}

// rememberPeers writes the gossip addresses of the live members to the
// peers file, best effort.
func (c *Cluster) rememberPeers() {
	if c.cfg.PeersFile == "" {
		return
	}
	addrs := c.gossipAddrs()
	if len(addrs) == 0 {
		return
	}
	slices.Sort(addrs)
	_ = os.WriteFile(c.cfg.PeersFile, []byte(strings.Join(addrs, "\n")+"\n"), 0o600)
}
