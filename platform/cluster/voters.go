package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

// Voter admission: only members vote. Gossip cannot tell a member from a
// stranger (memberlist has no TLS; the cluster key alone is not
// membership), so the leader admits a gossip member to Raft only after it
// verified, over mutual TLS, that the listeners at the member's gossiped
// peer and Raft addresses present certificates of the cluster CA naming
// the member's id (probeMember). A verified member enters as a non-voter
// and is promoted only once it has caught up with the log (isCaughtUp),
// as Consul's autopilot does, so neither a stranger nor a node that never
// receives the log ever makes the quorum larger. A server this leader has
// had in its configuration for CatchUpBound without ever seeing it caught
// up, and that is not a live verified member, is removed: a ghost that
// an older version admitted, or a voter that died before this leader
// could see it (it comes back through admission when it returns).
//
// planVoters is the decision, pure and table-tested; admitVoters (run by
// the leader's reconcile) gathers its inputs, applies its changes and
// runs the probes, one goroutine per member at most, so a stranger that
// never answers never holds up the reconcile loop.

// Admission bounds.
const (
	// CatchUpBound is how long a server may sit in the configuration
	// without this leader ever seeing it caught up before it is removed
	// (unless it is a live, verified member).
	CatchUpBound = 30 * time.Second
	// MaxTrailing is how far (in log entries) behind the leader's commit
	// index a follower may be and still count as caught up (Consul's
	// MaxTrailingLogs is 250).
	MaxTrailing = 256
	// probeTimeout bounds one probe of a member (both handshakes and the
	// status request).
	probeTimeout = 2 * time.Second
	// probeEvery spaces the probes of one member while it needs them
	// (unverified, or not yet caught up); probeRetry after a failure.
	probeEvery = 500 * time.Millisecond
	probeRetry = 2 * time.Second
	// leaderGap: a reconcile that follows the previous one by more than
	// this is a new leadership (or a long stall), whose knowledge of who
	// caught up starts afresh.
	leaderGap = 3 * time.Second
)

// voterView is everything planVoters decides from.
type voterView struct {
	Self    string
	Servers []raft.Server // the Raft configuration
	// Members are the live gossip members by id.
	Members map[string]Meta
	// Verified holds the ids whose listeners at their current gossiped
	// addresses presented a certificate naming them.
	Verified map[string]bool
	// CaughtUp holds the servers this leader has seen caught up.
	CaughtUp map[string]bool
	// Since is when this leader first saw each server in the configuration.
	Since     map[string]time.Time
	Now       time.Time
	MaxVoters int
	Bound     time.Duration
}

// changeKind is a Raft configuration change.
type changeKind int

const (
	addNonvoter changeKind = iota + 1
	promote
	updateAddr // a server's gossiped Raft address changed; suffrage kept
	remove
)

func (k changeKind) String() string {
	switch k {
	case addNonvoter:
		return "add-nonvoter"
	case promote:
		return "promote"
	case updateAddr:
		return "update-address"
	case remove:
		return "remove"
	}
	return fmt.Sprintf("change-%d", int(k))
}

// voterChange is one change planVoters asks for.
type voterChange struct {
	Kind  changeKind
	ID    string
	Addr  raft.ServerAddress
	Voter bool // for updateAddr: the server's suffrage
}

// planVoters returns the configuration changes that admission asks for,
// in a deterministic order: removals, then address updates, additions and
// promotions by id.
func planVoters(v voterView) []voterChange {
	var out []voterChange
	inConfig := map[string]raft.Server{}
	voters := 0
	for _, s := range v.Servers {
		inConfig[string(s.ID)] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	ids := make([]string, 0, len(v.Servers))
	for _, s := range v.Servers {
		ids = append(ids, string(s.ID))
	}
	slices.Sort(ids)
	removed := map[string]bool{}
	for _, id := range ids {
		if id == v.Self || v.CaughtUp[id] {
			continue
		}
		since, ok := v.Since[id]
		if !ok || v.Now.Sub(since) < v.Bound {
			continue
		}
		if _, live := v.Members[id]; live && v.Verified[id] {
			continue // a member that is slow to catch up stays (a non-voter it does not count)
		}
		out = append(out, voterChange{Kind: remove, ID: id})
		removed[id] = true
		if inConfig[id].Suffrage == raft.Voter {
			voters--
		}
	}
	live := make([]string, 0, len(v.Members))
	for id := range v.Members {
		live = append(live, id)
	}
	slices.Sort(live)
	for _, id := range live {
		m := v.Members[id]
		if id == v.Self || removed[id] || m.RaftAddr == "" || m.State == Draining || !v.Verified[id] {
			continue
		}
		addr := raft.ServerAddress(m.RaftAddr)
		s, known := inConfig[id]
		switch {
		case !known:
			out = append(out, voterChange{Kind: addNonvoter, ID: id, Addr: addr})
		case s.Address != addr:
			out = append(out, voterChange{Kind: updateAddr, ID: id, Addr: addr, Voter: s.Suffrage == raft.Voter})
		case s.Suffrage != raft.Voter && v.CaughtUp[id] && voters < v.MaxVoters:
			out = append(out, voterChange{Kind: promote, ID: id, Addr: addr})
			voters++
		}
	}
	return out
}

// isCaughtUp reports whether a follower whose last log index is last has
// caught up: it holds the entry that added it (addIndex, 0 when this
// leader did not add it), has received something, and trails the commit
// index the leader had when it asked by at most MaxTrailing entries.
func isCaughtUp(last, addIndex, commit uint64) bool {
	return last > 0 && last >= addIndex && last+MaxTrailing >= commit
}

// voterState is the leader's admission bookkeeping (zero value ready).
type voterState struct {
	mu       sync.Mutex
	lastRun  time.Time
	since    map[string]time.Time
	caughtUp map[string]bool
	added    map[string]uint64 // log index of the change that added a server (this leader's)
	// verified maps an id to the "peer raft" addresses it was verified at.
	verified map[string]string
	probing  map[string]bool
	next     map[string]time.Time // no probe of the id before then
	warned   map[string]bool      // a failed probe of the id was logged at warn level
	bound    time.Duration        // CatchUpBound unless set (SetCatchUpBound)
}

// SetCatchUpBound replaces CatchUpBound on this node (tests that must not
// wait 30 s for a ghost to go).
func (c *Cluster) SetCatchUpBound(d time.Duration) {
	c.voters.mu.Lock()
	c.voters.bound = d
	c.voters.mu.Unlock()
}

func (s *voterState) init() {
	if s.since == nil {
		s.since, s.caughtUp, s.added = map[string]time.Time{}, map[string]bool{}, map[string]uint64{}
		s.verified, s.probing, s.next = map[string]string{}, map[string]bool{}, map[string]time.Time{}
		s.warned = map[string]bool{}
	}
}

func addrKey(m Meta) string { return m.PeerAddr + " " + m.RaftAddr }

// admitVoters runs voter admission once on the leader: servers is the
// Raft configuration, alive the live gossip members by id.
func (c *Cluster) admitVoters(r *raft.Raft, servers []raft.Server, alive map[string]Meta) {
	s := &c.voters
	now := time.Now()
	s.mu.Lock()
	s.init()
	if now.Sub(s.lastRun) > leaderGap {
		clear(s.since)
		clear(s.caughtUp)
		clear(s.added)
	}
	s.lastRun = now
	inConfig := map[string]bool{}
	for _, sv := range servers {
		id := string(sv.ID)
		inConfig[id] = true
		if _, ok := s.since[id]; !ok {
			s.since[id] = now
		}
	}
	for id := range s.since {
		if !inConfig[id] {
			delete(s.since, id)
			delete(s.caughtUp, id)
			delete(s.added, id)
		}
	}
	for id := range s.next {
		if _, ok := alive[id]; !ok && !s.probing[id] {
			delete(s.next, id)
			delete(s.warned, id)
		}
	}
	verified := map[string]bool{}
	for id, at := range s.verified {
		if m, ok := alive[id]; ok && addrKey(m) == at {
			verified[id] = true
		} else if !s.probing[id] {
			delete(s.verified, id)
		}
	}
	view := voterView{Self: c.cfg.NodeID, Servers: servers, Members: alive, Verified: verified,
		CaughtUp: maps.Clone(s.caughtUp), Since: maps.Clone(s.since), Now: now, MaxVoters: MaxVoters, Bound: CatchUpBound}
	if s.bound > 0 {
		view.Bound = s.bound
	}
	s.mu.Unlock()

	const timeout = 5 * time.Second
	for _, ch := range planVoters(view) {
		var f raft.IndexFuture
		switch {
		case ch.Kind == addNonvoter, ch.Kind == updateAddr && !ch.Voter:
			f = r.AddNonvoter(raft.ServerID(ch.ID), ch.Addr, 0, timeout)
		case ch.Kind == promote, ch.Kind == updateAddr:
			f = r.AddVoter(raft.ServerID(ch.ID), ch.Addr, 0, timeout)
		case ch.Kind == remove:
			f = r.RemoveServer(raft.ServerID(ch.ID), 0, timeout)
		}
		err := f.Error()
		if err == nil && ch.Kind == addNonvoter {
			s.mu.Lock()
			s.added[ch.ID] = f.Index()
			s.mu.Unlock()
		}
		c.logChange(ch.Kind.String(), ch.ID, err)
	}

	// Probe the members that need it: unverified ones, and servers not yet
	// seen caught up.
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, m := range alive {
		if id == c.cfg.NodeID || m.PeerAddr == "" || m.RaftAddr == "" || m.State == Draining || s.probing[id] || now.Before(s.next[id]) {
			continue
		}
		if verified[id] && (!inConfig[id] || s.caughtUp[id]) {
			continue // verified and either about to be added or caught up
		}
		s.probing[id] = true
		addIndex := s.added[id]
		commit := r.CommitIndex()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			last, err := c.probeMember(m, probeTimeout)
			s.mu.Lock()
			delete(s.probing, id)
			if err != nil {
				s.next[id] = time.Now().Add(probeRetry)
				delete(s.verified, id)
				level := slog.LevelDebug // a stranger is retried every probeRetry: warn once
				if !s.warned[id] {
					s.warned[id], level = true, slog.LevelWarn
				}
				s.mu.Unlock()
				c.log.Log(context.Background(), level, "member not admitted to raft: its listeners did not prove its id",
					"node_id", id, "peer", m.PeerAddr, "raft", m.RaftAddr, "err", err)
				return
			}
			delete(s.warned, id)
			s.next[id] = time.Now().Add(probeEvery)
			s.verified[id] = addrKey(m)
			if _, tracked := s.since[id]; tracked && isCaughtUp(last, addIndex, commit) {
				s.caughtUp[id] = true
			}
			s.mu.Unlock()
			c.signal(c.recon)
		}()
	}
}

// probeMember proves that the listeners at m's gossiped Raft and peer
// addresses belong to node m.ID: each presents, in a mutual-TLS
// handshake, a certificate of the cluster CA naming m.ID, and the peer
// listener's status answer names it too. It returns the member's last
// Raft log index. Without TLS (tests of this package only: a node always
// has it) the status answer over the token-authenticated transport is all
// it checks.
func (c *Cluster) probeMember(m Meta, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	cfg := c.trans.tls
	if cfg == nil {
		st, err := c.peerStatus(m.PeerAddr, timeout)
		if err != nil {
			return 0, err
		}
		if st.Id != m.ID {
			return 0, fmt.Errorf("the peer at %s is %q, not %q", m.PeerAddr, st.Id, m.ID)
		}
		return st.LastIndex, nil
	}
	raftConn, err := dialMember(m.RaftAddr, m.ID, cfg, deadline)
	if err != nil {
		return 0, fmt.Errorf("raft address: %w", err)
	}
	raftConn.Close()
	conn, err := dialMember(m.PeerAddr, m.ID, cfg, deadline)
	if err != nil {
		return 0, fmt.Errorf("peer address: %w", err)
	}
	defer conn.Close()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(pathStatus)
	req.Header.SetHost(m.PeerAddr)
	req.Header.Set(peerTokenHeader, c.token)
	req.Header.Set(peerNodeHeader, c.cfg.NodeID)
	req.SetConnectionClose()
	w := bufio.NewWriter(conn)
	if err := req.Write(w); err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := resp.Read(bufio.NewReader(conn)); err != nil {
		return 0, err
	}
	if sc := resp.StatusCode(); sc != fasthttp.StatusOK {
		return 0, fmt.Errorf("%w: status probe: %d %s", ErrPeerRefused, sc, resp.Body())
	}
	st, err := c.formats.decodeStatus(resp.Body(), c.log)
	if err != nil {
		return 0, err
	}
	if st.Id != m.ID {
		return 0, fmt.Errorf("the peer at %s answers as %q, not %q", m.PeerAddr, st.Id, m.ID)
	}
	return st.LastIndex, nil
}

// dialMember opens a mutual-TLS connection to addr and checks that the
// certificate it presents (already verified to chain to the cluster CA by
// cfg) names node id.
func dialMember(addr, id string, cfg *tls.Config, deadline time.Time) (*tls.Conn, error) {
	d := &net.Dialer{Deadline: deadline}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, cfg)
	_ = conn.SetDeadline(deadline)
	if err := conn.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	cs := conn.ConnectionState()
	if got := mtls.PeerNodeID(&cs); got != id {
		conn.Close()
		return nil, fmt.Errorf("the certificate at %s names %q, not %q", addr, got, id)
	}
	return conn, nil
}
