package cluster

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// Membership heals by itself (issue 23). memberlist marks a member that
// stops answering dead and, after GossipToTheDeadTime, never contacts it
// again; the member does the same on its side. So after a partition
// longer than that both sides list each other as failed for ever, each
// with a complete ring of its own, unless somebody joins again. This is
// serf's answer on top of memberlist: remember the gossip address of
// every member that failed (not one that left gracefully) for
// ReconnectTimeout, and every ReconnectInterval (jittered) join a few of
// them. A node that has no live peer at all also tries its seeds (--join
// and the remembered peers file), so a node that started alone, or was
// cut off from everybody, finds its cluster once the network is back.
//
// One join is not always enough: memberlist ignores an "alive" that
// carries the incarnation it already declared dead, so the first push-pull
// only makes each side refute (the member learns it was declared dead and
// raises its incarnation); the follow-up join a moment later carries the
// refutation and the member is alive again on both sides. Measured in
// TestGossipReMergesAfterAPartitionLongerThanGossipToTheDead.

// goneMember is a member memberlist reported gone.
type goneMember struct {
	addr     string // gossip address
	since    time.Time
	graceful bool // left: never reconnected to
}

// reconnectFanout is how many failed members one round tries at most.
const reconnectFanout = 3

// followUpJoin is how long after a join that reached a failed member it
// is joined again, to carry its refutation (see above).
const followUpJoin = 250 * time.Millisecond

func (c *Cluster) reconnectLoop() {
	defer c.wg.Done()
	t := time.NewTimer(jitter(c.cfg.ReconnectInterval))
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		t.Reset(jitter(c.cfg.ReconnectInterval))
		if c.leaving.Load() {
			continue // a node on its way out does not pull itself back in
		}
		for _, addr := range c.reconnectTargets(time.Now()) {
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.rejoin(addr)
			}()
		}
	}
}

// jitter spreads d by ±25%, so nodes of one cluster do not all join at
// the same instant.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// reconnectTargets forgets failed members older than ReconnectTimeout and
// returns the addresses to join this round (none already being joined):
// up to reconnectFanout failed members at random, plus the seeds while
// this node has had no live peer for less than ReconnectTimeout.
func (c *Cluster) reconnectTargets(now time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var failed []string
	left := map[string]bool{}
	for id, g := range c.gone {
		switch {
		case now.Sub(g.since) > c.cfg.ReconnectTimeout:
			delete(c.gone, id)
		case g.graceful:
			left[g.addr] = true
		case !c.joining[g.addr]:
			failed = append(failed, g.addr)
		}
	}
	rand.Shuffle(len(failed), func(i, j int) { failed[i], failed[j] = failed[j], failed[i] })
	out := failed[:min(len(failed), reconnectFanout)]

	alone := true
	for id := range c.members {
		if id != c.cfg.NodeID {
			alone = false
			break
		}
	}
	switch {
	case !alone:
		c.aloneSince = time.Time{}
	case c.aloneSince.IsZero():
		c.aloneSince = now
	}
	if alone && now.Sub(c.aloneSince) <= c.cfg.ReconnectTimeout {
		for _, a := range c.seeds() {
			if !left[a] && !c.joining[a] && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	for _, a := range out {
		c.joining[a] = true
	}
	return out
}

// seeds are the configured join addresses and the remembered peers, less
// this node's own address.
func (c *Cluster) seeds() []string {
	seeds := slices.Clone(c.cfg.Join)
	if c.cfg.PeersFile != "" {
		if b, err := os.ReadFile(c.cfg.PeersFile); err == nil {
			for _, a := range strings.Fields(string(b)) {
				if !slices.Contains(seeds, a) {
					seeds = append(seeds, a)
				}
			}
		}
	}
	self := c.GossipAddr()
	return slices.DeleteFunc(seeds, func(a string) bool { return a == "" || a == self })
}

// rejoin joins addr, and once more shortly after when that reached it but
// the member there is still not alive here (its refutation comes with the
// second push-pull). Each attempt is bounded by memberlist's TCPTimeout.
func (c *Cluster) rejoin(addr string) {
	defer func() {
		c.mu.Lock()
		delete(c.joining, addr)
		c.mu.Unlock()
	}()
	for attempt := 0; attempt < 2; attempt++ {
		n, err := c.ml.Join([]string{addr})
		if n == 0 {
			c.log.Debug("reconnect failed", "gossip", addr, "err", err)
			return
		}
		if !c.stillFailed(addr) {
			c.log.Info("reconnected to a failed member", "gossip", addr, "members", c.ml.NumMembers())
			return
		}
		select {
		case <-c.stop:
			return
		case <-time.After(followUpJoin):
		}
	}
}

// stillFailed reports whether the member at gossip address addr is still
// failed (not alive) here.
func (c *Cluster) stillFailed(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.gone {
		if g.addr == addr && !g.graceful {
			return true
		}
	}
	return false
}
