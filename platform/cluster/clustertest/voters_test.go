package clustertest

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// stranger is a process that holds the cluster key, so it joins gossip,
// but not a certificate of the cluster CA naming its gossip name.
type stranger struct {
	name string
	ml   *memberlist.Memberlist
	stop []func()
}

type strangerMeta []byte

func (m strangerMeta) NodeMeta(int) []byte                  { return m }
func (strangerMeta) NotifyMsg([]byte)                       {}
func (strangerMeta) GetBroadcasts(int, int) [][]byte        { return nil }
func (strangerMeta) LocalState(bool) []byte                 { return nil }
func (strangerMeta) MergeRemoteState(buf []byte, join bool) {}

// serveAs listens on loopback and, when cert is set, answers TLS
// handshakes with it (any client certificate accepted) and peer status
// probes claiming to be name; without cert it accepts and closes.
func (s *stranger) serveAs(t *testing.T, cert *tls.Certificate) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cert == nil {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		s.stop = append(s.stop, func() { ln.Close() })
		return ln.Addr().String()
	}
	tln := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, ClientAuth: tls.RequireAnyClientCert})
	srv := &fasthttp.Server{Logger: log.New(io.Discard, "", 0), Handler: func(ctx *fasthttp.RequestCtx) {
		b, _ := gproto.Marshal(&clusterpb.NodeStatus{Id: s.name, LastIndex: 1 << 30, AppliedIndex: 1 << 30})
		ctx.SetBody(b)
	}}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(tln) }()
	s.stop = append(s.stop, func() { _ = srv.Shutdown(); ln.Close(); <-done })
	return ln.Addr().String()
}

// startStranger joins the cluster's gossip as name, announcing peer and
// Raft addresses.
func startStranger(t *testing.T, label, join, name, peer, raftAddr string, s *stranger) {
	t.Helper()
	meta, err := cluster.Meta{ID: name, PeerAddr: peer, RaftAddr: raftAddr, APIAddr: "127.0.0.1:1", State: cluster.Joining, Version: "stranger"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name, mc.Label = name, label
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = "127.0.0.1", 0, 0
	k := sha256.Sum256([]byte("trustd gossip v1\x00clustertest-key"))
	mc.SecretKey = k[:]
	mc.Delegate = strangerMeta(meta)
	mc.LogOutput, mc.Logger = nil, log.New(io.Discard, "", 0)
	if s.ml, err = memberlist.Create(mc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ml.Join([]string{join}); err != nil {
		t.Fatalf("%s joins gossip: %v", name, err)
	}
}

func (s *stranger) close() {
	if s.ml != nil {
		_ = s.ml.Shutdown()
	}
	for _, f := range s.stop {
		f()
	}
}

// raftServers returns every id in node i's Raft configuration.
func (c *Cluster) raftServers(i int) []string {
	f := c.Nodes[i].Store().Raft().GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []string
	for _, s := range f.Configuration().Servers {
		out = append(out, string(s.ID))
	}
	return out
}

// Issue 23: a process with the cluster key but no certificate joined
// gossip and the leader made it a Raft voter; with that ghost, one real
// crash of three left both survivors without a quorum. Now gossip alone
// admits nobody: strangers without a certificate, with one of another
// CA, with one of the cluster's CA naming another id, or announcing a
// real member's addresses, are never added to Raft, and a crash of one
// real node (the leader) leaves the other two ready and writing.
func TestStrangersInGossipNeverVoteAndTheClusterSurvivesACrash(t *testing.T) {
	c := Start(t, 3)
	otherCA, _ := mtls.CreateCA("other", time.Hour, time.Now())
	foreign, _ := mtls.CreateNodeCert(otherCA, mtls.NodeRequest{NodeID: "ghost-foreign-ca"}, time.Now())
	foreignCert, _ := tls.X509KeyPair(foreign.Cert, foreign.Key)
	misnamed, _ := mtls.CreateNodeCert(c.CA, mtls.NodeRequest{NodeID: "node-7"}, time.Now())
	misnamedCert, _ := tls.X509KeyPair(misnamed.Cert, misnamed.Key)
	join := c.Nodes[0].Cluster().GossipAddr()
	real1 := c.Nodes[1]

	ghosts := map[string]*stranger{}
	for _, g := range []struct {
		name string
		cert *tls.Certificate
		real bool
	}{{"ghost-no-cert", nil, false}, {"ghost-foreign-ca", &foreignCert, false}, {"ghost-misnamed", &misnamedCert, false}, {"ghost-borrowed-addresses", nil, true}} {
		s := &stranger{name: g.name}
		t.Cleanup(s.close)
		peer, raftAddr := real1.Cluster().PeerAddr(), real1.Store().RaftAddr()
		if !g.real {
			peer, raftAddr = s.serveAs(t, g.cert), s.serveAs(t, g.cert)
		}
		startStranger(t, c.Name(), join, g.name, peer, raftAddr, s)
		ghosts[g.name] = s
	}
	leader := c.WaitLeader()
	Eventually(t, 10*time.Second, func() error {
		seen := 0
		for _, m := range c.Nodes[leader].Cluster().Members() {
			if ghosts[m.ID] != nil {
				seen++
			}
		}
		if seen != len(ghosts) {
			return fmt.Errorf("the leader sees %d of %d strangers in gossip", seen, len(ghosts))
		}
		return nil
	})
	var mu sync.Mutex
	admitted := map[string]bool{}
	watch := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			for _, i := range c.Live() {
				for _, id := range c.raftServers(i) {
					if ghosts[id] != nil {
						mu.Lock()
						admitted[id] = true
						mu.Unlock()
					}
				}
			}
		}
	}
	// Many reconcile rounds (every 500ms) and probe retries (every 2s).
	watch(5 * time.Second)
	if len(admitted) > 0 {
		t.Fatalf("strangers in the raft configuration: %v", admitted)
	}

	// One real crash of three: the leader. The survivors elect a leader,
	// stay ready and take admin writes.
	c.Kill(leader)
	survivors := c.Live()
	newLeader := c.WaitLeader()
	for _, i := range survivors {
		Eventually(t, 10*time.Second, func() error {
			if !c.Nodes[i].Store().Ready() {
				return fmt.Errorf("node-%d not ready", i)
			}
			return nil
		})
	}
	for _, i := range survivors {
		c.MustCreate(i, "/admin/v1/workspaces", `{"name":"after-crash"}`)
	}
	watch(3 * time.Second)
	if len(admitted) > 0 {
		t.Fatalf("strangers in the raft configuration after the crash: %v", admitted)
	}
	for _, id := range c.raftServers(newLeader) {
		if strings.HasPrefix(id, "ghost") {
			t.Fatalf("%s in the new leader's configuration", id)
		}
	}
}

// A ghost that an older version made a voter (added straight as a voter,
// at an address where nothing speaks Raft) is removed once the leader has
// had it for the catch-up bound without seeing it caught up, and then one
// real crash of three leaves a quorum.
func TestAGhostVoterThatNeverCaughtUpIsRemovedAndACrashIsSurvived(t *testing.T) {
	c := Start(t, 3)
	for _, n := range c.Nodes {
		n.Cluster().SetCatchUpBound(2 * time.Second)
	}
	// A busy machine may cost the leader its lease while the ghost's entry
	// commits (the ghost counts in the quorum at once): ask the next
	// leader, as an operator would.
	var leader int
	for try := 0; ; try++ {
		leader = c.WaitLeader()
		err := c.Nodes[leader].Store().Raft().AddVoter("ghost", "127.0.0.1:1", 0, 5*time.Second).Error()
		if err == nil {
			break
		}
		if try == 4 || !(errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrNotLeader)) {
			t.Fatalf("adding the ghost as an older version did: %v", err)
		}
	}
	Eventually(t, 15*time.Second, func() error {
		for _, i := range c.Live() {
			for _, id := range c.raftServers(i) {
				if id == "ghost" {
					return fmt.Errorf("node-%d still has the ghost in its configuration", i)
				}
			}
		}
		return nil
	})
	victim := (leader + 1) % 3
	c.Kill(victim)
	c.WaitLeader()
	for _, i := range c.Live() {
		c.MustCreate(i, "/admin/v1/workspaces", `{"name":"after-ghost"}`)
	}
}
