package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/catalog"
)

// Consensus is what the cluster needs of the node's Raft store: the Raft
// node itself (configuration changes, leadership) and a way to apply a
// batch a follower forwarded. persistence.Store implements it.
type Consensus interface {
	Raft() *raft.Raft
	ApplyBatch(data []byte, timeout time.Duration) (uint64, error)
	// Apply replicates one catalog command (liveness renewals and fences)
	// and returns its result once applied on this node.
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
	// Catalog is the applied catalog, whose membership tables give the ring.
	Catalog() *catalog.Catalog
}

// Config configures a Cluster.
type Config struct {
	NodeID string
	// Name is the cluster's name, used as the memberlist label so that two
	// clusters sharing a network never merge.
	Name string
	// Key, when set, encrypts gossip and authenticates the peer transport.
	Key string
	// ServerTLS, when set, puts the peer listener on mutual TLS: only
	// clients with a certificate of the cluster CA complete a handshake
	// (see platform/cluster/mtls). The Transport dials with the matching client side.
	ServerTLS *tls.Config
	// GossipAddr is the memberlist bind address; AdvertiseGossip what
	// peers dial (empty: the bound address).
	GossipAddr, AdvertiseGossip string
	// PeerAddr is where the peer listener binds; AdvertisePeer what peers
	// dial.
	PeerAddr, AdvertisePeer string
	// APIAddr and RaftAddr are gossiped as they are.
	APIAddr, RaftAddr string
	// Join lists gossip addresses of existing members.
	Join []string
	// PeersFile remembers the gossip addresses of the last known members,
	// so a node restarted without --join finds its cluster again.
	PeersFile string
	Version   string
	// Formats are the highest formats this build reads, gossiped so that a
	// build only writes a new format once every member reads it
	// (wireformat.go, ClusterReads). Zero: this package's AskFormat and
	// format 1 of the rest.
	Formats Formats
	// Debounce is how long membership events are collected before the
	// next ring is published (default 50ms).
	Debounce time.Duration
	// ReapAfter is how long a failed node stays in the Raft configuration
	// before the leader removes it (default 10 minutes). Nodes that leave
	// gracefully are removed at once.
	ReapAfter time.Duration
	// RenewInterval and LivenessTTL time this node's liveness renewals
	// through Raft (liveness.go; defaults 500ms and 4s).
	RenewInterval, LivenessTTL time.Duration
	// ReconnectInterval is how often this node tries to join again members
	// that failed (and, while it has no live peer, its seeds), so that
	// gossip re-merges after a partition (default 1s, jittered ±25%; see
	// reconnect.go). ReconnectTimeout is how long a failed member is tried
	// (default ReapAfter, when the leader removes it from Raft).
	ReconnectInterval, ReconnectTimeout time.Duration
	// WrapGossip, when set, wraps memberlist's network transport (tests
	// cut a node's gossip with it).
	WrapGossip func(memberlist.Transport) memberlist.Transport
	Logger     *slog.Logger
}

// Cluster is this node's membership in the cluster: gossip, the ring it
// publishes to the Router, the peer listener, the leader's Raft reconcile
// loop and ownership hand-off.
type Cluster struct {
	// ext holds the peer channel's extension operations (peer_ext.go).
	ext    peerExt
	voters voterState // the leader's voter admission (voters.go)
	cfg    Config
	log    *slog.Logger

	formats formatRefusals // asks refused for their format (wireformat.go)
	router  *Router
	trans   *Transport
	cons    Consensus
	ml      *memberlist.Memberlist
	token   string
	// gossipAddr is the local gossip address, read once after memberlist
	// started: its LocalNode is written under memberlist's own lock on
	// every meta update, so it is never read again from outside.
	gossipAddr string

	state atomic.Int32 // NodeState
	meta  atomic.Pointer[[]byte]

	events chan struct{} // membership changed (coalescing)
	recon  chan struct{} // reconcile Raft now (coalescing)

	ringMu sync.Mutex // serialises ring builds

	mu      sync.Mutex
	members map[string]member    // live members by node id, copied in the event callbacks
	left    map[string]time.Time // node id → when it left gracefully
	dead    map[string]time.Time // node id → when it was declared dead
	// gone are the members memberlist reported gone, by node id, with
	// their gossip address (reconnect.go); joining the addresses being
	// joined again; aloneSince when this node last found itself without a
	// live peer.
	gone       map[string]goneMember
	joining    map[string]bool
	aloneSince time.Time
	onLeave    func()

	peerLn    net.Listener
	peerSrv   *fasthttp.Server
	streamSrv streamServers // streams peers opened here (stream_serve.go)

	leftGossip atomic.Bool // after Leave: this node is no member any more

	// Liveness (liveness.go) and holding (hold.go).
	epoch        atomic.Uint64     // this node's liveness epoch (0: none yet)
	renewMu      sync.Mutex        // one renewal at a time
	stopRenewing atomic.Bool       // set once the node has left the ring for good
	handedOff    map[string]uint64 // member id → newest epoch it handed off to us (under mu)

	stop     chan struct{}
	wg       sync.WaitGroup
	handoffs sync.WaitGroup
	stopOnce sync.Once
	leaving  atomic.Bool
}

// Start joins (or founds) the cluster: it opens the peer listener, starts
// gossip in state Joining, joins cfg.Join and the remembered peers, and
// starts publishing rings to router. The node turns Ready with SetReady
// once its Raft catalog has caught up.
func Start(cfg Config, router *Router, trans *Transport, cons Consensus) (*Cluster, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "trustd"
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 50 * time.Millisecond
	}
	if cfg.ReapAfter <= 0 {
		cfg.ReapAfter = 10 * time.Minute
	}
	if cfg.RenewInterval <= 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	if cfg.LivenessTTL <= 0 {
		cfg.LivenessTTL = DefaultLivenessTTL
	}
	if cfg.ReconnectInterval <= 0 {
		cfg.ReconnectInterval = time.Second
	}
	if cfg.ReconnectTimeout <= 0 {
		cfg.ReconnectTimeout = cfg.ReapAfter
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger.With("component", "cluster"), router: router, trans: trans, cons: cons,
		token: peerToken(cfg.Key), events: make(chan struct{}, 1), recon: make(chan struct{}, 1),
		members: map[string]member{}, left: map[string]time.Time{}, dead: map[string]time.Time{},
		gone: map[string]goneMember{}, joining: map[string]bool{}, stop: make(chan struct{}),
		handedOff: map[string]uint64{}}
	c.state.Store(int32(Joining))
	if trans != nil {
		trans.SetLogger(c.log)
	}

	var err error
	if c.peerLn, err = net.Listen("tcp", cfg.PeerAddr); err != nil {
		return nil, fmt.Errorf("cluster: peer listen on %s: %w", cfg.PeerAddr, err)
	}
	if c.cfg.AdvertisePeer == "" || strings.HasSuffix(c.cfg.AdvertisePeer, ":0") {
		c.cfg.AdvertisePeer = c.peerLn.Addr().String()
	}
	if cfg.ServerTLS != nil {
		c.peerLn = tls.NewListener(c.peerLn, cfg.ServerTLS)
	}
	c.peerSrv = c.newPeerServer()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = c.peerSrv.Serve(c.peerLn)
	}()
	if err := c.updateMeta(); err != nil {
		c.closePeer()
		return nil, err
	}
	mc, err := c.memberlistConfig()
	if err == nil {
		c.ml, err = memberlist.Create(mc)
	}
	if err == nil {
		c.gossipAddr = c.ml.LocalNode().Address()
	}
	if err != nil {
		if mc != nil && mc.Transport != nil {
			_ = mc.Transport.Shutdown()
		}
		c.closePeer()
		return nil, fmt.Errorf("cluster: start gossip on %s: %w", cfg.GossipAddr, err)
	}
	// Nothing is decided here before a renewal through the quorum applied.
	router.leased.Store(true)
	router.SetRefresher(c.rebuild)
	if err := c.join(); err != nil {
		_ = c.ml.Shutdown()
		c.closePeer()
		return nil, err
	}
	c.wg.Add(5)
	go c.membershipLoop()
	go c.reconcileLoop()
	go c.reconnectLoop()
	go c.renewLoop()
	go c.watchLoop()
	return c, nil
}

func (c *Cluster) memberlistConfig() (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.cfg.NodeID
	mc.Label = c.cfg.Name
	host, port := splitHostPort(c.cfg.GossipAddr, 7946)
	mc.BindAddr, mc.BindPort = host, port
	if c.cfg.AdvertiseGossip != "" {
		mc.AdvertiseAddr, mc.AdvertisePort = splitHostPort(c.cfg.AdvertiseGossip, port)
	}
	if c.cfg.Key != "" {
		k := sha256.Sum256([]byte("trustd gossip v1\x00" + c.cfg.Key))
		mc.SecretKey = k[:]
	}
	// Tuned for a LAN: a crashed node is probed every 200ms, and declared
	// dead about a second after it stops answering; a graceful leave is
	// gossiped every 50ms to three nodes, so it spreads in well under a
	// second. Measured in TestFailureDetectionAndLeavePropagation.
	mc.ProbeInterval = 200 * time.Millisecond
	mc.ProbeTimeout = 100 * time.Millisecond
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 3
	mc.GossipInterval = 50 * time.Millisecond
	mc.GossipNodes = 3
	mc.RetransmitMult = 4
	mc.PushPullInterval = 15 * time.Second
	mc.TCPTimeout = time.Second
	// A member dead for this long is gossiped to no more; the reconnect
	// loop (reconnect.go) is what brings it back after a partition.
	mc.GossipToTheDeadTime = 5 * time.Second
	mc.DeadNodeReclaimTime = time.Second
	// Lifeguard's local health awareness: a node that misses its own
	// probes' acks (a CPU-starved node) stretches its probe interval and
	// timeout up to this many times, so it suspects its peers less (the
	// default, stated: the flaps under load in DESIGN.md happen with it).
	mc.AwarenessMaxMultiplier = 8
	mc.Delegate = (*delegate)(c)
	mc.Events = (*events)(c)
	mc.LogOutput = nil
	mc.Logger = log.New(io.Discard, "", 0)
	if c.cfg.WrapGossip != nil {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{mc.BindAddr},
			BindPort: mc.BindPort, Logger: mc.Logger})
		if err != nil {
			return nil, err
		}
		if mc.BindPort == 0 {
			mc.BindPort = nt.GetAutoBindPort()
			if c.cfg.AdvertiseGossip == "" {
				mc.AdvertisePort = mc.BindPort
			}
		}
		mc.Transport = c.cfg.WrapGossip(nt)
	}
	return mc, nil
}

func splitHostPort(addr string, defPort int) (string, int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, defPort
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return host, defPort
	}
	return host, port
}

// join contacts cfg.Join and the remembered peers. It fails only when
// cfg.Join was given and no member could be reached.
func (c *Cluster) join() error {
	seeds := c.seeds()
	if len(seeds) == 0 {
		return nil
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		var n int
		if n, err = c.ml.Join(seeds); n > 0 {
			c.log.Info("joined cluster", "contacted", n, "members", c.ml.NumMembers())
			return nil
		}
		if len(c.cfg.Join) == 0 {
			c.log.Warn("no remembered peer reachable; starting alone", "err", err)
			return nil
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-c.stop:
			return errors.New("cluster: stopped while joining")
		}
	}
	return fmt.Errorf("cluster: join %s: %w", strings.Join(c.cfg.Join, ","), err)
}

// GossipAddr is the address other nodes join through.
func (c *Cluster) GossipAddr() string {
	return c.gossipAddr
}

// PeerAddr is the address of this node's peer listener.
func (c *Cluster) PeerAddr() string { return c.cfg.AdvertisePeer }

// NodeID is this node's id.
func (c *Cluster) NodeID() string { return c.cfg.NodeID }

// Router is the router this cluster publishes rings to.
func (c *Cluster) Router() *Router { return c.router }

// State is this node's gossiped state.
func (c *Cluster) State() NodeState { return NodeState(c.state.Load()) }

// SetReady announces that this node has caught up and may own partitions.
// It returns once the quorum has recorded it and this node holds its share
// of the ring, or after a bound (the node then serves what it holds).
func (c *Cluster) SetReady() error {
	if err := c.setState(Ready); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r := c.router.Ring(); r.Self >= 0 && r.HeldAll() {
			return nil
		}
		select {
		case <-c.stop:
			return errors.New("cluster: stopped while turning ready")
		case <-time.After(10 * time.Millisecond):
		}
	}
	c.log.Warn("ready, but not yet holding every owned partition", "ring_epoch", c.router.Ring().Epoch)
	return nil
}

func (c *Cluster) setState(s NodeState) error {
	c.state.Store(int32(s))
	if err := c.updateMeta(); err != nil {
		return err
	}
	if err := c.ml.UpdateNode(time.Second); err != nil {
		c.log.Warn("gossip of the new node state incomplete", "state", s, "err", err)
	}
	if err := c.renewSync(context.Background()); err != nil {
		return fmt.Errorf("cluster: record state %s through the quorum: %w", s, err)
	}
	c.signal(c.recon)
	return nil
}

func (c *Cluster) updateMeta() error {
	b, err := Meta{ID: c.cfg.NodeID, APIAddr: c.cfg.APIAddr, PeerAddr: c.cfg.AdvertisePeer, RaftAddr: c.cfg.RaftAddr,
		State: c.State(), Version: c.cfg.Version, Formats: c.cfg.Formats.orDefault(), PeerStream: StreamVersion}.Encode()
	if err != nil {
		return err
	}
	c.meta.Store(&b)
	return nil
}

// OnLeave installs what runs after a leave that a peer or the admin API
// requested has completed (the node shuts itself down).
func (c *Cluster) OnLeave(f func()) {
	c.mu.Lock()
	c.onLeave = f
	c.mu.Unlock()
}

func (c *Cluster) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// member is a live member as the event callbacks last saw it. memberlist
// hands out pointers into its own state, which it keeps writing, so the
// callbacks (which run under memberlist's lock) copy what we need.
type member struct {
	meta   Meta
	gossip string
}

// Members returns the metadata of every live member (including this
// node), sorted by id.
func (c *Cluster) Members() []Meta {
	c.mu.Lock()
	out := make([]Meta, 0, len(c.members))
	for id, m := range c.members {
		if id == c.cfg.NodeID {
			continue
		}
		out = append(out, m.meta)
	}
	c.mu.Unlock()
	if !c.leftGossip.Load() {
		b := *c.meta.Load()
		if self, err := DecodeMeta(b); err == nil {
			out = append(out, self)
		}
	}
	slices.SortFunc(out, func(a, b Meta) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// gossipAddrs returns the gossip addresses of the other live members.
func (c *Cluster) gossipAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, m := range c.members {
		if id != c.cfg.NodeID {
			out = append(out, m.gossip)
		}
	}
	return out
}

// Close stops gossip abruptly (no leave), the loops and the peer listener.
// A node that means to go away for good calls Leave first.
func (c *Cluster) Close() error {
	c.stopOnce.Do(func() {
		close(c.stop)
		if c.ml != nil {
			_ = c.ml.Shutdown()
		}
		c.closePeer()
		c.wg.Wait()
		c.trans.Close()
	})
	return nil
}

func (c *Cluster) closePeer() {
	if c.peerSrv != nil {
		_ = c.peerSrv.Shutdown()
	}
	c.streamSrv.close()
	// Shutdown closes only a listener Serve has already registered; one
	// that Serve has not reached yet would otherwise accept forever.
	if c.peerLn != nil {
		_ = c.peerLn.Close()
	}
}

// delegate and events adapt the Cluster to memberlist's callbacks.
type delegate Cluster

func (d *delegate) NodeMeta(limit int) []byte {
	b := *(*Cluster)(d).meta.Load()
	if len(b) > limit {
		return nil
	}
	return b
}
func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

type events Cluster

func (e *events) NotifyJoin(n *memberlist.Node) { (*Cluster)(e).seen(n) }

func (e *events) NotifyUpdate(n *memberlist.Node) { (*Cluster)(e).seen(n) }

// seen records a live member's metadata. A node whose metadata does not
// decode, or names another id than its memberlist name, is ignored.
func (c *Cluster) seen(n *memberlist.Node) {
	m, err := DecodeMeta(n.Meta)
	if err != nil || m.ID != n.Name {
		c.log.Warn("ignoring member with bad metadata", "name", n.Name, "err", err)
		return
	}
	c.mu.Lock()
	c.members[n.Name] = member{meta: m, gossip: n.Address()}
	delete(c.left, n.Name)
	delete(c.dead, n.Name)
	delete(c.gone, n.Name)
	c.mu.Unlock()
	if c.trans != nil && n.Name != c.cfg.NodeID {
		c.trans.Remember(m.PeerAddr)
		c.trans.Advertise(m.PeerAddr, m.PeerStream)
	}
	c.signal(c.events)
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	c := (*Cluster)(e)
	c.mu.Lock()
	gone, known := c.members[n.Name]
	delete(c.members, n.Name)
	// memberlist v0.6 does not tell a leave from a death in the Node it
	// passes; a node that leaves gracefully always drains first, so its
	// last gossiped state says which it was.
	m, err := DecodeMeta(n.Meta)
	graceful := err == nil && m.State == Draining
	if graceful {
		c.left[n.Name] = time.Now()
	} else {
		c.dead[n.Name] = time.Now()
	}
	if n.Name != c.cfg.NodeID {
		c.gone[n.Name] = goneMember{addr: n.Address(), since: time.Now(), graceful: graceful}
	}
	c.mu.Unlock()
	// Nothing keeps dialling a member that is gone (issue 23): its ask
	// queue and connections close and asks waiting on it fail now.
	if c.trans != nil && known && n.Name != c.cfg.NodeID {
		c.trans.Forget(gone.meta.PeerAddr)
	}
	c.log.Info("member gone", "node_id", n.Name, "graceful", graceful)
	c.signal(c.events)
}
