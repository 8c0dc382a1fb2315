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
		c.signal(c.recon)
	}
}

// rebuild installs the ring of the replicated membership if it is newer
// than the router's and returns the router's ring (the Router's refresher,
// used when a peer reports a newer epoch). Rings come from the quorum
// (liveness.go), never from this node's gossip view.
func (c *Cluster) rebuild(uint64) *Ring { return c.syncRing() }

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
