package persistence

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// ErrNotLeader is returned by Apply on a node that is not the Raft leader
// and has no way to forward the write.
var ErrNotLeader = errors.New("persistence: not the raft leader")

// ErrClosed is returned by Apply after Close.
var ErrClosed = errors.New("persistence: store closed")

// ErrStopForced is returned by Close when Raft did not stop within
// Config.CloseTimeout: Close returned anyway (logged), leaving Raft's
// stuck goroutines behind.
var ErrStopForced = errors.New("persistence: raft did not stop in time; stop forced")

// Config configures a Store.
type Config struct {
	DataDir string
	NodeID  string
	// BindAddr is where Raft listens; AdvertiseAddr what peers dial (empty:
	// BindAddr).
	BindAddr      string
	AdvertiseAddr string
	// Bootstrap makes a node with no Raft state start a new cluster with
	// itself as the only voter.
	Bootstrap bool
	// Fast shortens Raft timeouts, for tests on loopback.
	Fast   bool
	Logger *slog.Logger
	// LogOutput receives Raft's own log lines (nil: discarded below warn).
	LogOutput io.Writer
	// ServerTLS and ClientTLS, when set, put Raft on mutual TLS: the
	// listener demands a client certificate of the cluster CA and dials
	// present this node's (see platform/cluster/mtls). Without them Raft speaks
	// plain TCP, which node.Start allows only on loopback.
	ServerTLS, ClientTLS *tls.Config
	// CloseTimeout bounds Close (default 10s): a Raft that has not shut
	// down by then is left behind and Close returns ErrStopForced.
	CloseTimeout time.Duration

	// maxRPCsInFlight overrides the Raft transport's (1: no pipelined
	// replication; see newRaftTransport). Benchmarks only.
	maxRPCsInFlight int
}

// Forwarder carries an encoded batch of commands from a follower to the
// Raft leader, which appends it to the log. The cluster's peer transport
// implements it; without one a follower answers ErrNotLeader.
type Forwarder interface {
	ForwardApply(ctx context.Context, batch []byte) error
}

// forwardTimeout bounds a forwarded write from submission to the moment
// this node's FSM applied it.
const forwardTimeout = 10 * time.Second

// Store is a node's Raft group member and its catalog.
type Store struct {
	fwd     atomic.Pointer[Forwarder]
	seq     atomic.Uint64
	cfg     Config
	raft    *raft.Raft
	fsm     *fsm
	logs    *raftboltdb.BoltStore
	trans   *raft.NetworkTransport
	applyCh chan *pending
	done    chan struct{}
	log     *slog.Logger
}

type pending struct {
	cmd  *raftpb.Command
	done chan result
}

// Open starts the Raft node in cfg.DataDir, creating it when new.
func Open(cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("persistence: create %s: %w", dir, err)
	}
	// Data dirs made by older versions held world-readable snapshots.
	if err := tighten(dir); err != nil {
		return nil, fmt.Errorf("persistence: restrict %s to its owner: %w", dir, err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	out := cfg.LogOutput
	if out == nil {
		out = io.Discard
	}
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: out})
	if cfg.Fast {
		rc.HeartbeatTimeout = 300 * time.Millisecond
		rc.ElectionTimeout = 300 * time.Millisecond
		rc.LeaderLeaseTimeout = 150 * time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
	}
	rc.SnapshotThreshold = 4096

	logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("persistence: open log store: %w", err)
	}
	fileSnaps, err := raft.NewFileSnapshotStore(dir, 3, out)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("persistence: open snapshot store: %w", err)
	}
	snaps := privateSnapshots{FileSnapshotStore: fileSnaps, dir: filepath.Join(dir, "snapshots")}
	_ = tighten(snaps.dir)
	adv := cfg.AdvertiseAddr
	if adv == "" {
		adv = cfg.BindAddr
	}
	advAddr, err := net.ResolveTCPAddr("tcp", adv)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("persistence: raft advertise address %q: %w", adv, err)
	}
	var advertise net.Addr
	if advAddr.Port != 0 { // bound to :0 (tests): advertise what the listener got
		advertise = advAddr
	}
	trans, err := newRaftTransport(cfg, advertise, out)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("persistence: raft transport on %s: %w", cfg.BindAddr, err)
	}
	f := newFSM(cfg.NodeID, cfg.Logger)
	r, err := raft.NewRaft(rc, f, logs, logs, snaps, trans)
	if err != nil {
		trans.Close()
		logs.Close()
		return nil, fmt.Errorf("persistence: start raft: %w", err)
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 10 * time.Second
	}
	s := &Store{cfg: cfg, raft: r, fsm: f, logs: logs, trans: trans,
		applyCh: make(chan *pending, 1024), done: make(chan struct{}), log: cfg.Logger}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(logs, logs, snaps)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("persistence: inspect raft state: %w", err)
		}
		if !has {
			boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}}
			if err := r.BootstrapCluster(boot).Error(); err != nil {
				s.Close()
				return nil, fmt.Errorf("persistence: bootstrap: %w", err)
			}
		}
	}
	// Forwarded batches are matched to their callers by (origin, seq); a
	// clock-based start keeps a restarted node's numbers clear of the
	// entries it forwarded before, which the FSM replays.
	s.seq.Store(uint64(time.Now().UnixNano()))
	go s.batchLoop()
	return s, nil
}

// newRaftTransport opens Raft's network transport, over mutual TLS when
// configured, with pipelined replication off (MaxRPCsInFlight 1).
//
// Pipelining is what wedged a graceful leave for 30 minutes (issue 23):
// with a follower that stalls or answers Success=false, hashicorp/raft's
// pipelineReplicate can park in netPipeline.AppendEntries, which it alone
// would close, so Raft's shutdown never completes (hashicorp/raft issue
// 612; Grafana Pyroscope turned pipelining off for the same symptom). The
// writes this group carries are configuration-sized and packed into
// batches (batchLoop), so the round trip per batch pipelining would hide
// is not where their throughput comes from; measured in DESIGN.md.
func newRaftTransport(cfg Config, advertise net.Addr, logOut io.Writer) (*raft.NetworkTransport, error) {
	inFlight := cfg.maxRPCsInFlight
	if inFlight <= 0 {
		inFlight = 1
	}
	tc := &raft.NetworkTransportConfig{MaxPool: 3, Timeout: 10 * time.Second, MaxRPCsInFlight: inFlight,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "raft-net", Output: logOut, Level: hclog.DefaultLevel})}
	if cfg.ServerTLS != nil {
		stream, err := newTLSStream(cfg.BindAddr, advertise, cfg.ServerTLS, cfg.ClientTLS)
		if err != nil {
			return nil, err
		}
		tc.Stream = stream
		return raft.NewNetworkTransportWithConfig(tc), nil
	}
	return raft.NewTCPTransportWithConfig(cfg.BindAddr, advertise, tc)
}

// SetForwarder installs the way writes on a follower reach the leader.
// The cluster is built after the store (it needs the Raft node), hence a
// setter rather than a constructor parameter.
func (s *Store) SetForwarder(f Forwarder) { s.fwd.Store(&f) }

// ApplyBatch appends an encoded batch that a follower forwarded to this
// node, the leader, and returns its log index once committed. The batch
// is checked to decode, so nothing undecodable enters the log.
func (s *Store) ApplyBatch(data []byte, timeout time.Duration) (uint64, error) {
	var b raftpb.Batch
	if err := gproto.Unmarshal(data, &b); err != nil {
		return 0, fmt.Errorf("persistence: undecodable forwarded batch: %w", err)
	}
	if err := checkFormat("forwarded batch", b.Format, LogFormat); err != nil {
		// Refused before it enters the log: this leader would halt on it.
		s.fsm.refused.entries.Add(1)
		s.log.Error("persistence: refused a forwarded batch written in a newer format; upgrade this node",
			"format", b.Format, "reads_up_to", LogFormat, "origin", b.Origin)
		return 0, err
	}
	f := s.raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// Catalog returns the newest applied catalog. It never blocks.
func (s *Store) Catalog() *catalog.Catalog { return s.fsm.cur.Load() }

// RaftAddr is the address peers reach this node's Raft on.
func (s *Store) RaftAddr() string { return string(s.trans.LocalAddr()) }

// WaitReady blocks until a leader is known and this node has applied every
// entry that was in its log when it started, or ctx ends.
//
// Raft's AppliedIndex moves when an entry is handed to the FSM goroutine,
// not when the FSM has applied it, so the wait is also for the catalog to
// reach the last command entry of that log: before it does, a restarted
// node would serve a catalog that lacks its newest writes.
func (s *Store) WaitReady(ctx context.Context) error {
	target := s.raft.LastIndex()
	want := s.lastCommandAtOrBefore(target)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		addr, _ := s.raft.LeaderWithID()
		applied := s.fsm.cur.Load().Index >= want || s.fsm.halted.Load() != nil
		if addr != "" && s.raft.AppliedIndex() >= target && applied {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("persistence: not ready: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// lastCommandAtOrBefore is the index of the last command entry (the ones
// the FSM applies; configuration and no-op entries are Raft's own) at or
// before index, or 0 when there is none in the log's last maxReadyScan
// entries (then a snapshot holds what there is).
func (s *Store) lastCommandAtOrBefore(index uint64) uint64 {
	first, err := s.logs.FirstIndex()
	if err != nil {
		return 0
	}
	for i := index; i >= max(first, 1) && index-i < maxReadyScan; i-- {
		var l raft.Log
		if s.logs.GetLog(i, &l) != nil {
			return 0
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}

// maxReadyScan bounds lastCommandAtOrBefore's walk back through the log.
const maxReadyScan = 4096

// Ready reports whether a leader is known and the catalog is loaded, and
// this node has not halted on an entry of a newer format (format.go).
func (s *Store) Ready() bool {
	if s.fsm.halted.Load() != nil {
		return false
	}
	addr, _ := s.raft.LeaderWithID()
	return addr != "" && s.fsm.cur.Load().Index > 0
}

// IsLeader reports whether this node is the Raft leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Raft exposes the Raft node to the cluster package (membership changes,
// leader address). Handlers never use it.
func (s *Store) Raft() *raft.Raft { return s.raft }

// Apply replicates cmd and returns its result once committed and applied
// on this node. Concurrent calls are packed into one log entry.
func (s *Store) Apply(ctx context.Context, cmd catalog.Command) (any, error) {
	body, err := catalog.Encode(cmd)
	if err != nil {
		return nil, fmt.Errorf("persistence: encode %s: %w", cmd.Kind(), err)
	}
	p := &pending{cmd: &raftpb.Command{Kind: cmd.Kind(), Body: body}, done: make(chan result, 1)}
	select {
	case s.applyCh <- p:
	case <-s.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-p.done:
		return r.value, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// batchLoop packs whatever is waiting into one Batch per log entry. It
// does not wait for a commit before sending the next batch: Raft keeps
// their order and pipelines them, which is where write throughput comes
// from.
func (s *Store) batchLoop() {
	const maxBatch = 256
	for {
		var first *pending
		select {
		case first = <-s.applyCh:
		case <-s.done:
			return
		}
		batch := []*pending{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case p := <-s.applyCh:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		s.submit(batch)
	}
}

func (s *Store) submit(batch []*pending) {
	fail := func(err error) {
		for _, p := range batch {
			p.done <- result{err: err}
		}
	}
	leader := s.raft.State() == raft.Leader
	fwd := s.fwd.Load()
	if !leader && fwd == nil {
		fail(ErrNotLeader)
		return
	}
	b := &raftpb.Batch{Commands: make([]*raftpb.Command, len(batch)), Format: LogFormat}
	for i, p := range batch {
		b.Commands[i] = p.cmd
	}
	if !leader {
		b.Origin, b.Seq = s.cfg.NodeID, s.seq.Add(1)
	}
	data, err := gproto.Marshal(b)
	if err != nil {
		fail(fmt.Errorf("persistence: encode batch: %w", err))
		return
	}
	if !leader {
		s.forward(*fwd, b.Seq, data, batch)
		return
	}
	f := s.raft.Apply(data, 10*time.Second)
	go func() {
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				err = errors.Join(ErrNotLeader, err)
			}
			fail(fmt.Errorf("persistence: apply: %w", err))
			return
		}
		rs, _ := f.Response().([]result)
		for i, p := range batch {
			if i < len(rs) {
				p.done <- rs[i]
			} else {
				p.done <- rs[0]
			}
		}
	}()
}

// forward sends a batch to the leader. The results come from this node's
// own FSM when it applies the entry (every FSM computes the same results),
// which also makes the write visible here before the caller is answered.
func (s *Store) forward(fwd Forwarder, seq uint64, data []byte, batch []*pending) {
	delivered := s.fsm.await(seq, batch)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
		defer cancel()
		err := fwd.ForwardApply(ctx, data)
		if err == nil {
			select {
			case <-delivered:
				return
			case <-ctx.Done():
				err = fmt.Errorf("persistence: forwarded write not applied here in time: %w", ctx.Err())
			case <-s.done:
				err = ErrClosed
			}
		}
		if waiting := s.fsm.abandon(seq); waiting != nil {
			for _, p := range waiting {
				p.done <- result{err: errors.Join(ErrNotLeader, err)}
			}
		}
	}()
}

// Stats is what operators see of the Raft node.
type Stats struct {
	State       string `json:"state"`
	Leader      string `json:"leader"`
	LeaderID    string `json:"leader_id"`
	LastIndex   uint64 `json:"last_index"`
	Applied     uint64 `json:"applied_index"`
	CatalogAt   uint64 `json:"catalog_index"`
	Term        string `json:"term"`
	NumPeers    string `json:"num_peers"`
	LastContact string `json:"last_contact"`
}

// Refused counts what this node refused for its format (format.go).
func (s *Store) Refused() Refusals { return s.fsm.refused.load() }

// Halted is the refusal that froze this node's state (format.go), or nil.
func (s *Store) Halted() error {
	if h := s.fsm.halted.Load(); h != nil {
		return *h
	}
	return nil
}

// Stats reports the Raft state.
func (s *Store) Stats() Stats {
	addr, id := s.raft.LeaderWithID()
	st := s.raft.Stats()
	return Stats{
		State: s.raft.State().String(), Leader: string(addr), LeaderID: string(id),
		LastIndex: s.raft.LastIndex(), Applied: s.raft.AppliedIndex(), CatalogAt: s.Catalog().Index,
		Term: st["term"], NumPeers: st["num_peers"], LastContact: st["last_contact"],
	}
}

// Close snapshots the state, stops Raft and closes the stores, within
// Config.CloseTimeout. It is safe to call more than once.
//
// The Raft transport is closed before Raft's shutdown is waited for (as
// Consul and InfluxDB do), so replication goroutines blocked on a peer's
// connection fail instead of holding the shutdown. Should Raft still not
// stop within the bound, Close logs it, leaves it behind and returns
// ErrStopForced: a node's stop never waits for ever (issue 23: a graceful
// leave hung 30 minutes in Raft's waitShutdown).
func (s *Store) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	start := time.Now()
	deadline := start.Add(s.cfg.CloseTimeout)
	var errs []error
	// The snapshot on close only shortens the next start's log replay;
	// every committed entry is in the log already. Raft refuses it while
	// a configuration change is unapplied (as right after this node left
	// the cluster), which is no reason to fail a clean stop. It gets half
	// the bound: a Raft too stuck to snapshot is too stuck to wait for.
	if s.raft.State() != raft.Shutdown && s.raft.AppliedIndex() > 0 {
		ok, err := within(s.cfg.CloseTimeout/2, s.raft.Snapshot().Error)
		switch {
		case !ok:
			s.log.Warn("persistence: no snapshot on close within its bound; the next start replays the log", "bound", s.cfg.CloseTimeout/2)
		case err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot):
			s.log.Info("persistence: no snapshot on close; the next start replays the log", "reason", err)
		}
	}
	s.trans.CloseStreams()
	if err := s.trans.Close(); err != nil {
		errs = append(errs, err)
	}
	shutdown := s.raft.Shutdown()
	ok, err := within(time.Until(deadline), shutdown.Error)
	if !ok {
		s.log.Error("persistence: raft did not stop within the close bound; stop forced, its goroutines left behind",
			"bound", s.cfg.CloseTimeout, "waited", time.Since(start).Round(time.Millisecond))
		errs = append(errs, fmt.Errorf("%w (after %v)", ErrStopForced, s.cfg.CloseTimeout))
	} else if err != nil {
		errs = append(errs, err)
	}
	// The log store is closed even after a forced stop, so the data dir's
	// lock is released (a stuck Raft holds no bolt transaction while it
	// waits on the network); bounded all the same.
	if ok, err := within(max(time.Until(deadline), time.Second), s.logs.Close); !ok {
		s.log.Error("persistence: the raft log store did not close in time")
		errs = append(errs, fmt.Errorf("%w: log store still open", ErrStopForced))
	} else if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// within runs f and waits up to d for its error; ok is false when f had
// not returned by then (it goes on running).
func within(d time.Duration, f func() error) (ok bool, err error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case err := <-done:
		return true, err
	case <-t.C:
		return false, nil
	}
}
