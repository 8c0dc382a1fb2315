package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster/clustertest/deadline"
)

// cutTransport is a memberlist transport whose node can be cut off from
// gossip: while cut, it sends nothing, dials nothing, and drops every
// packet and stream that arrives.
type cutTransport struct {
	memberlist.Transport
	cut     atomic.Bool
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

func newCutTransport(inner memberlist.Transport) *cutTransport {
	t := &cutTransport{Transport: inner, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn),
		done: make(chan struct{})}
	go func() {
		for {
			select {
			case p := <-inner.PacketCh():
				if t.cut.Load() {
					continue
				}
				select {
				case t.packets <- p:
				case <-t.done:
					return
				}
			case <-t.done:
				return
			}
		}
	}()
	go func() {
		for {
			select {
			case c := <-inner.StreamCh():
				if t.cut.Load() {
					c.Close()
					continue
				}
				select {
				case t.streams <- c:
				case <-t.done:
					c.Close()
					return
				}
			case <-t.done:
				return
			}
		}
	}()
	return t
}

var errCut = errors.New("gossip cut")

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.cut.Load() {
		return time.Now(), nil // lost on the way
	}
	return t.Transport.WriteTo(b, addr)
}

func (t *cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	return t.Transport.DialTimeout(addr, timeout)
}

func (t *cutTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *cutTransport) StreamCh() <-chan net.Conn           { return t.streams }

func (t *cutTransport) Shutdown() error {
	t.once.Do(func() { close(t.done) })
	// The inner transport's listeners block handing over a packet nobody
	// reads any more, and its Shutdown waits for them: drain until it is
	// done.
	stopped := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.Transport.PacketCh():
			case c := <-t.Transport.StreamCh():
				c.Close()
			case <-stopped:
				return
			}
		}
	}()
	defer close(stopped)
	return t.Transport.Shutdown()
}

// idleRaft is a Raft node with no configuration: it never elects
// anybody, which is all a gossip-only test cluster needs of Consensus.
type idleRaft struct{ r *raft.Raft }

func (i idleRaft) Raft() *raft.Raft { return i.r }
func (i idleRaft) ApplyBatch([]byte, time.Duration) (uint64, error) {
	return 0, errors.New("no raft in this test")
}
func (i idleRaft) Apply(context.Context, catalog.Command) (any, error) {
	return nil, errors.New("no raft in this test")
}
func (i idleRaft) Catalog() *catalog.Catalog { return catalog.Empty() }

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("none") }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// gossipNode is one node of a gossip-only test cluster.
type gossipNode struct {
	c   *Cluster
	cut *cutTransport
}

// mustStartGossip starts n Clusters on loopback that gossip with each
// other through cuttable transports (no Raft group: each node's Raft is
// idle and gossips no Raft address). They are closed when the test ends.
func mustStartGossip(tb testing.TB, n int) []*gossipNode {
	tb.Helper()
	deadline.Arm(tb, 0, nil)
	var nodes []*gossipNode
	name := "gossiptest-" + rand.Text()[:10] // a killed node's port reused by another test's cluster is not joined
	for i := range n {
		id := fmt.Sprintf("node-%d", i)
		rc := raft.DefaultConfig()
		rc.LocalID = raft.ServerID(id)
		rc.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
		_, rt := raft.NewInmemTransport("")
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(rc, nopFSM{}, store, store, raft.NewInmemSnapshotStore(), rt)
		if err != nil {
			tb.Fatal(err)
		}
		sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
		tr := NewTransport("k", nil)
		router := NewRouter(NewRing(0, nil, id), sys, tr, time.Second)
		gn := &gossipNode{}
		var join []string
		for _, o := range nodes {
			join = append(join, o.c.GossipAddr())
		}
		c, err := Start(Config{NodeID: id, Name: name, Key: "k", GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0",
			Join: join, WrapGossip: func(t memberlist.Transport) memberlist.Transport {
				gn.cut = newCutTransport(t)
				return gn.cut
			}}, router, tr, idleRaft{r})
		if err != nil {
			tb.Fatal(err)
		}
		// gossip state only: there is no quorum to record it through
		c.state.Store(int32(Ready))
		if err := c.updateMeta(); err != nil {
			tb.Fatal(err)
		}
		gn.c = c
		tb.Cleanup(func() {
			c.Close()
			_ = r.Shutdown().Error()
			sys.Stop()
		})
		nodes = append(nodes, gn)
	}
	return nodes
}

// memberIDs is node's live member table, as ids.
func memberIDs(c *Cluster) []string {
	var ids []string
	for _, m := range c.Members() {
		ids = append(ids, m.ID)
	}
	return ids
}

// waitTables waits until every node's member table holds exactly want,
// and returns how long that took.
func waitTables(tb testing.TB, nodes []*gossipNode, want []string, within time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	for {
		var bad []string
		for _, n := range nodes {
			if got := memberIDs(n.c); !slices.Equal(got, want) {
				bad = append(bad, fmt.Sprintf("%s sees %v", n.c.NodeID(), got))
			}
		}
		if len(bad) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > within {
			tb.Fatalf("member tables not %v within %v: %s", want, within, strings.Join(bad, "; "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 23: after a partition longer than GossipToTheDeadTime both sides
// listed each other as failed for ever (3 s and 6 s cuts never healed
// until a restart). With the reconnect loop every member table is whole
// again within 5 s of the cut ending.
func TestGossipReMergesAfterAPartitionLongerThanGossipToTheDead(t *testing.T) {
	nodes := mustStartGossip(t, 3)
	all := []string{"node-0", "node-1", "node-2"}
	waitTables(t, nodes, all, 10*time.Second)

	// node-2 is cut off from gossip for longer than memberlist gossips to
	// the dead (5 s): without a new join nobody would contact it again.
	nodes[2].cut.cut.Store(true)
	waitTables(t, nodes[:2], all[:2], 10*time.Second)
	waitTables(t, nodes[2:], all[2:], 10*time.Second)
	time.Sleep(6 * time.Second)

	nodes[2].cut.cut.Store(false)
	took := waitTables(t, nodes, all, 5*time.Second)
	t.Logf("member tables whole again %v after the 6 s+ partition ended", took)
}

// A 1-versus-1-versus-1 split (every node cut) heals the same way.
func TestGossipReMergesAfterEveryNodeWasCutOff(t *testing.T) {
	nodes := mustStartGossip(t, 3)
	all := []string{"node-0", "node-1", "node-2"}
	waitTables(t, nodes, all, 10*time.Second)
	for _, n := range nodes {
		n.cut.cut.Store(true)
	}
	for i, n := range nodes {
		waitTables(t, nodes[i:i+1], []string{n.c.NodeID()}, 10*time.Second)
	}
	time.Sleep(6 * time.Second)
	for _, n := range nodes {
		n.cut.cut.Store(false)
	}
	took := waitTables(t, nodes, all, 5*time.Second)
	t.Logf("member tables whole again %v after every node was alone for 6 s+", took)
}

// A member that left gracefully is not joined again, and a failed one is
// tried only until ReconnectTimeout.
func TestReconnectTargetsSkipLeftAndExpiredMembers(t *testing.T) {
	c := &Cluster{cfg: Config{NodeID: "self", ReconnectTimeout: time.Minute}, members: map[string]member{"self": {}, "x": {}},
		gone: map[string]goneMember{}, joining: map[string]bool{}}
	now := time.Now()
	c.gone["left"] = goneMember{addr: "10.0.0.1:1", since: now, graceful: true}
	c.gone["failed"] = goneMember{addr: "10.0.0.2:1", since: now.Add(-30 * time.Second)}
	c.gone["reaped"] = goneMember{addr: "10.0.0.3:1", since: now.Add(-2 * time.Minute)}
	got := c.reconnectTargets(now)
	if !slices.Equal(got, []string{"10.0.0.2:1"}) {
		t.Fatalf("targets %v, want only the failed member within the timeout", got)
	}
	if _, ok := c.gone["reaped"]; ok {
		t.Fatal("a member failed longer than the timeout is still remembered")
	}
	if got := c.reconnectTargets(now); len(got) != 0 {
		t.Fatalf("targets %v while the previous join is under way", got)
	}
}
