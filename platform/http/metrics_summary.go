package http

import (
	"cmp"
	"encoding/json"

	"github.com/trustd/trustd/platform/cluster/summary"
)

// The cluster-wide request summary behind the console's overview charts:
// this node's answer counters by module (its route table's tags), served
// to peers as extension operation "metrics-summary"; node/ops asks the
// members and package platform/cluster/summary adds their totals up.

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

// LocalMetrics is this node's totals by module (node/ops adds up the
// cluster's).
func (s *Server) LocalMetrics() summary.NodeMetrics {
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
		px.HandlePeer("metrics-summary", func([]byte) ([]byte, error) { return json.Marshal(s.LocalMetrics()) })
	}
}
