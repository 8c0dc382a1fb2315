package http

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/trustd/trustd/cluster/summary"
)

// The cluster-wide request summary behind the console's overview charts:
// this node's answer counters by module (its route table's tags), served
// to peers as extension operation "metrics-summary"; package
// cluster/summary adds the members' totals up.

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

// localMetrics is this node's totals by module.
func (s *Server) localMetrics() summary.NodeMetrics {
	var counts []summary.ModuleCounts
	for i, r := range s.table.routes {
		c := &s.metrics.classes[i]
		ok, cl, lim, srv := c[classOK].Load(), c[classClient].Load(), c[classLimit].Load(), c[classServer].Load()
		if ok+cl+lim+srv == 0 {
			continue
		}
		m := summary.ModuleCounts{Module: cmp.Or(r.Tag, "Other"), Requests: ok + cl + lim + srv,
			ClientErrors: cl, Throttled: lim, ServerErrors: srv}
		for o := 1; o < numOutcomes; o++ {
			m.AddDecision(outcomeNames[o], s.metrics.outcomes[i][o].Load())
		}
		counts = append(counts, m)
	}
	return summary.NodeMetrics{NodeID: s.cfg.NodeID, Modules: summary.ByModule(counts)}
}

// registerMetricsPeer serves this node's totals to its peers.
func (s *Server) registerMetricsPeer() {
	if px, ok := s.cfg.Cluster.(summary.Peers); ok {
		px.HandlePeer("metrics-summary", func([]byte) ([]byte, error) { return json.Marshal(s.localMetrics()) })
	}
}

// askMembers runs the extension operation name on every other live
// member (summary.AskMembers, at most 2 s each); a node outside a cluster
// asks no one.
func (s *Server) askMembers(name string, body []byte, each func(id string, answer []byte, err error)) {
	if px, ok := s.cfg.Cluster.(summary.Peers); ok {
		summary.AskMembers(px, s.cfg.NodeID, name, body, 2*time.Second, each)
	}
}

// clusterMetrics asks every live member for its totals (at most 2 s each,
// in parallel) and adds up those that answered.
func (s *Server) clusterMetrics() *summary.ClusterMetrics {
	nodes := []summary.NodeMetrics{s.localMetrics()}
	s.askMembers("metrics-summary", nil, func(id string, b []byte, err error) {
		nm := summary.NodeMetrics{NodeID: id, Modules: []summary.ModuleCounts{}}
		if err == nil {
			err = json.Unmarshal(b, &nm)
			nm.NodeID = id
		}
		if err != nil {
			nm = summary.NodeMetrics{NodeID: id, Error: err.Error(), Modules: []summary.ModuleCounts{}}
		}
		nodes = append(nodes, nm)
	})
	return summary.Sum(s.clock().UTC(), nodes)
}
