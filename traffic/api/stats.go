package api

import (
	"encoding/json"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/summary"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// A policy's counters: each node counts the checks it served; with
// scope=cluster the answering node asks every other live member for its
// own over the authenticated peer channel (extension operation
// PeerPolicyStats) and adds them up.

// PeerPolicyStats is the peer operation that answers this node's counters
// of a policy (the body is its id; an unknown one answers zero counters).
const PeerPolicyStats = "policy-stats"

// statsAPI answers a policy's counters.
type statsAPI struct {
	m     *ratecheck.Module
	node  string
	peers summary.Peers
}

// HandlePeers serves this node's policy counters to the other members;
// node/ calls it once with the cluster and the catalog.
func HandlePeers(d Deps, cat func() *catalog.Catalog) {
	if d.Peers == nil {
		return
	}
	st := statsAPI{m: d.RateCheck, node: d.NodeID}
	d.Peers.HandlePeer(PeerPolicyStats, cluster.PeerHandler(func(id []byte) ([]byte, error) {
		return json.Marshal(st.local(cat(), string(id)))
	}))
}

func (a statsAPI) rateLimitPolicyStats(c *kernel.Call) {
	p := rateLimitPolicies.Find(c)
	if p == nil {
		return
	}
	switch scope := string(c.Ctx.QueryArgs().Peek("scope")); scope {
	case "", "node":
		c.OK(a.local(c.Catalog(), p.ID))
	case "cluster":
		c.OK(a.cluster(c.Catalog(), p.ID))
	default:
		c.Fail(kernel.ErrInvalidField, "scope: node or cluster")
	}
}

// local are this node's counters of a policy.
func (a statsAPI) local(cat *catalog.Catalog, id string) *RateLimitPolicyStats {
	out := &RateLimitPolicyStats{PolicyID: id, Node: a.node}
	if st, ok := a.m.PolicyStats(cat, id); ok {
		out.Since = st.Since
		out.Matched, out.Allowed, out.Throttled, out.Rejected = st.Matched, st.Allowed, st.Throttled, st.Rejected
		out.ObservedWouldThrottle, out.ObservedWouldReject = st.ObservedWouldThrottle, st.ObservedWouldReject
		out.DegradedFailOpen, out.DegradedFailClosed = st.DegradedFailOpen, st.DegradedFailClosed
	}
	return out
}

// cluster sums a policy's counters over the members that answer (at most
// 2 s each, in parallel); a node outside a cluster asks no one.
func (a statsAPI) cluster(cat *catalog.Catalog, id string) *RateLimitPolicyStats {
	out := a.local(cat, id)
	out.Node, out.Members, out.Answered = "cluster", 1, 1
	if a.peers == nil {
		return out
	}
	summary.AskMembers(a.peers, a.node, PeerPolicyStats, []byte(id), 2*time.Second, func(_ string, b []byte, err error) {
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
