package http

import (
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
)

// The cluster-wide request summary behind the console's overview charts.
// Each node counts its own answers (running totals since it started, by
// the operation's module — its route tag — and answer class); the admin
// operation getClusterMetrics asks every live member for its totals over
// the peer channel (the cluster-key-authenticated listener that carries
// asks; extension operation "metrics-summary") and adds them up. A member
// that does not answer is listed with its error and left out of the sum.

const (
	classOK     = iota // 1xx to 3xx
	classClient        // 4xx other than 429
	classLimit         // 429: throttled or rate limited
	classServer        // 5xx
	numClasses
)

func classOf(status int) int {
	switch {
	case status == 429:
		return classLimit
	case status >= 500:
		return classServer
	case status >= 400:
		return classClient
	}
	return classOK
}

// ModuleCounts are running totals of one module's answers.
type ModuleCounts struct {
	Module       string `json:"module" required:"true" doc:"The operations' tag in the contract (Rate limiting, Human verification, Admin, …)."`
	Requests     uint64 `json:"requests" required:"true" doc:"Every answer."`
	ClientErrors uint64 `json:"client_errors" required:"true" doc:"4xx answers other than 429."`
	Throttled    uint64 `json:"throttled" required:"true" doc:"429 answers (throttled, rate limited)."`
	ServerErrors uint64 `json:"server_errors" required:"true" doc:"5xx answers."`
	// Decisions counts the outcomes the answers carried (most decisions
	// are 200 answers: a throttled check, a failed siteverify, a block).
	Decisions map[string]uint64 `json:"decisions,omitempty" doc:"Decisions the module's answers carried, by outcome: allow, throttle, reject, deny, block, challenge, verify, review, delay, approval_required, verified, rejected, success (siteverify), failure, other."`
}

// addDecisions adds counts into m's decisions.
func (m *ModuleCounts) addDecisions(from map[string]uint64) {
	for k, n := range from {
		if n == 0 {
			continue
		}
		if m.Decisions == nil {
			m.Decisions = map[string]uint64{}
		}
		m.Decisions[k] += n
	}
}

// NodeMetrics is one member's totals since it started.
type NodeMetrics struct {
	NodeID  string         `json:"node_id" required:"true"`
	Error   string         `json:"error,omitempty" doc:"Why the member's totals are missing (it did not answer)."`
	Modules []ModuleCounts `json:"modules" required:"true"`
}

// ClusterMetrics is getClusterMetrics' answer.
type ClusterMetrics struct {
	At       time.Time      `json:"at" required:"true"`
	Members  int            `json:"members" required:"true" doc:"Live members asked."`
	Answered int            `json:"answered" required:"true" doc:"Members whose totals are in total."`
	Total    []ModuleCounts `json:"total" required:"true" doc:"Sums over the members that answered, by module; running totals since each node started (a restarted node starts again from zero)."`
	Nodes    []NodeMetrics  `json:"nodes" required:"true"`
}

// peerExtension is the cluster's peer channel extension (cluster.Cluster).
type peerExtension interface {
	HandlePeer(name string, h cluster.PeerHandler)
	CallPeer(nodeID, name string, body []byte, timeout time.Duration) ([]byte, error)
	Members() []cluster.Meta
}

// localMetrics is this node's totals by module.
func (s *Server) localMetrics() NodeMetrics {
	by := map[string]*ModuleCounts{}
	for i, r := range s.table.routes {
		c := &s.metrics.classes[i]
		ok, cl, lim, srv := c[classOK].Load(), c[classClient].Load(), c[classLimit].Load(), c[classServer].Load()
		if ok+cl+lim+srv == 0 {
			continue
		}
		tag := r.Tag
		if tag == "" {
			tag = "Other"
		}
		m := by[tag]
		if m == nil {
			m = &ModuleCounts{Module: tag}
			by[tag] = m
		}
		m.Requests += ok + cl + lim + srv
		m.ClientErrors += cl
		m.Throttled += lim
		m.ServerErrors += srv
		for o := 1; o < numOutcomes; o++ {
			if n := s.metrics.outcomes[i][o].Load(); n > 0 {
				m.addDecisions(map[string]uint64{outcomeNames[o]: n})
			}
		}
	}
	out := NodeMetrics{NodeID: s.cfg.NodeID, Modules: []ModuleCounts{}}
	for _, m := range by {
		out.Modules = append(out.Modules, *m)
	}
	sort.Slice(out.Modules, func(i, j int) bool { return out.Modules[i].Module < out.Modules[j].Module })
	return out
}

// registerMetricsPeer serves this node's totals to its peers.
func (s *Server) registerMetricsPeer() {
	if px, ok := s.cfg.Cluster.(peerExtension); ok {
		px.HandlePeer("metrics-summary", func([]byte) ([]byte, error) { return json.Marshal(s.localMetrics()) })
		// The body is a policy id; an unknown one answers zero counters.
		px.HandlePeer("policy-stats", func(id []byte) ([]byte, error) {
			return json.Marshal(s.localPolicyStats(s.store.Catalog(), string(id)))
		})
	}
}

// askMembers runs the extension operation name on every live member but
// this node (at most 2 s each, in parallel) and hands each answer, or the
// member's error, to each (called under a lock, one at a time).
func (s *Server) askMembers(name string, body []byte, each func(id string, answer []byte, err error)) {
	px, ok := s.cfg.Cluster.(peerExtension)
	if !ok {
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range px.Members() {
		if m.ID == s.cfg.NodeID {
			continue
		}
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			b, err := px.CallPeer(id, name, body, 2*time.Second)
			mu.Lock()
			defer mu.Unlock()
			each(id, b, err)
		}(m.ID)
	}
	wg.Wait()
}

// clusterPolicyStats sums a policy's counters over the members that answer.
func (s *Server) clusterPolicyStats(cat *catalog.Catalog, id string) *RateLimitPolicyStats {
	out := s.localPolicyStats(cat, id)
	out.Node, out.Members, out.Answered = "cluster", 1, 1
	s.askMembers("policy-stats", []byte(id), func(_ string, b []byte, err error) {
		out.Members++
		var st RateLimitPolicyStats
		if err != nil || json.Unmarshal(b, &st) != nil || st.PolicyID != id {
			return
		}
		out.Answered++
		if !st.Since.IsZero() && (out.Since.IsZero() || st.Since.Before(out.Since)) {
			out.Since = st.Since
		}
		out.Matched += st.Matched
		out.Allowed += st.Allowed
		out.Throttled += st.Throttled
		out.Rejected += st.Rejected
		out.ObservedWouldThrottle += st.ObservedWouldThrottle
		out.ObservedWouldReject += st.ObservedWouldReject
		out.DegradedFailOpen += st.DegradedFailOpen
		out.DegradedFailClosed += st.DegradedFailClosed
	})
	return out
}

// clusterMetrics asks every live member for its totals (at most 2 s each,
// in parallel) and adds up those that answered.
func (s *Server) clusterMetrics() *ClusterMetrics {
	nodes := []NodeMetrics{s.localMetrics()}
	s.askMembers("metrics-summary", nil, func(id string, b []byte, err error) {
		nm := NodeMetrics{NodeID: id, Modules: []ModuleCounts{}}
		if err == nil {
			err = json.Unmarshal(b, &nm)
			nm.NodeID = id
		}
		if err != nil {
			nm = NodeMetrics{NodeID: id, Error: err.Error(), Modules: []ModuleCounts{}}
		}
		nodes = append(nodes, nm)
	})
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	out := &ClusterMetrics{At: s.clock().UTC(), Members: len(nodes), Nodes: nodes, Total: []ModuleCounts{}}
	sum := map[string]*ModuleCounts{}
	for _, n := range nodes {
		if n.Error != "" {
			continue
		}
		out.Answered++
		for _, m := range n.Modules {
			t := sum[m.Module]
			if t == nil {
				t = &ModuleCounts{Module: m.Module}
				sum[m.Module] = t
			}
			t.Requests += m.Requests
			t.ClientErrors += m.ClientErrors
			t.Throttled += m.Throttled
			t.ServerErrors += m.ServerErrors
			t.addDecisions(m.Decisions)
		}
	}
	for _, t := range sum {
		out.Total = append(out.Total, *t)
	}
	sort.Slice(out.Total, func(i, j int) bool { return out.Total[i].Module < out.Total[j].Module })
	return out
}
