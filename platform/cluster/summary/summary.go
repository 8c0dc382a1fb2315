// Package summary adds up the members' request totals for the cluster-wide
// overview (getClusterMetrics) and asks every live member for a summary
// over the peer channel.
//
// Each node counts its own answers (running totals since it started, by
// the operation's module — its route tag — and answer class); a node asks
// every live member for its totals over the peer channel (the
// cluster-key-authenticated listener that carries asks; extension
// operations) and adds them up. A member that does not answer is listed
// with its error and left out of the sum.
package summary

import (
	"sort"
	"sync"
	"time"

	"github.com/trustd/trustd/platform/cluster"
)

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

// AddDecision adds n answers that carried outcome.
func (m *ModuleCounts) AddDecision(outcome string, n uint64) {
	if n == 0 {
		return
	}
	if m.Decisions == nil {
		m.Decisions = map[string]uint64{}
	}
	m.Decisions[outcome] += n
}

// Add adds o's totals (its module is not checked) into m.
func (m *ModuleCounts) Add(o ModuleCounts) {
	m.Requests += o.Requests
	m.ClientErrors += o.ClientErrors
	m.Throttled += o.Throttled
	m.ServerErrors += o.ServerErrors
	for k, n := range o.Decisions {
		m.AddDecision(k, n)
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

// ByModule merges counts of equal modules, sorted by module name.
func ByModule(counts []ModuleCounts) []ModuleCounts {
	sum := map[string]*ModuleCounts{}
	for _, m := range counts {
		t := sum[m.Module]
		if t == nil {
			t = &ModuleCounts{Module: m.Module}
			sum[m.Module] = t
		}
		t.Add(m)
	}
	out := make([]ModuleCounts, 0, len(sum))
	for _, t := range sum {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Module < out[j].Module })
	return out
}

// Sum is the cluster's answer at at: the members sorted by id, and the
// totals by module of those that answered (no Error).
func Sum(at time.Time, nodes []NodeMetrics) *ClusterMetrics {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	out := &ClusterMetrics{At: at, Members: len(nodes), Nodes: nodes}
	var all []ModuleCounts
	for _, n := range nodes {
		if n.Error != "" {
			continue
		}
		out.Answered++
		all = append(all, n.Modules...)
	}
	out.Total = ByModule(all)
	return out
}

// Peers is the cluster's peer channel extension (cluster.Cluster).
type Peers interface {
	HandlePeer(name string, h cluster.PeerHandler)
	CallPeer(nodeID, name string, body []byte, timeout time.Duration) ([]byte, error)
	Members() []cluster.Meta
}

// AskMembers runs the extension operation name on every live member but
// self (at most timeout each, in parallel) and hands each answer, or the
// member's error, to each (one call at a time).
func AskMembers(px Peers, self, name string, body []byte, timeout time.Duration, each func(id string, answer []byte, err error)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range px.Members() {
		if m.ID == self {
			continue
		}
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			b, err := px.CallPeer(id, name, body, timeout)
			mu.Lock()
			defer mu.Unlock()
			each(id, b, err)
		}(m.ID)
	}
	wg.Wait()
}
