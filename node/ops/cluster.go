package ops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/summary"
	kernel "github.com/trustd/trustd/platform/http"
)

// The cluster admin API: who is in the cluster, who owns what, who leads
// Raft, and a graceful leave. The cluster package does the work; this file
// only shapes it for the contract.

// ClusterControl is what the admin API needs of the cluster.
type ClusterControl interface {
	Status(ctx context.Context, timeout time.Duration) cluster.Status
	RequestLeave(nodeID string) error
}

// ClusterNode is one node in GET /admin/v1/cluster.
type ClusterNode struct {
	NodeID         string  `json:"node_id" required:"true"`
	APIAddr        string  `json:"api_addr" required:"true" doc:"Address of the node's API listener (empty for a failed node)."`
	PeerAddr       string  `json:"peer_addr" required:"true" doc:"Address of the node's cluster-internal forwarding listener."`
	RaftAddr       string  `json:"raft_addr" required:"true"`
	State          string  `json:"state" required:"true" enum:"joining|ready|draining|failed" doc:"Only ready nodes own partitions; failed: a Raft member gossip no longer sees."`
	RaftRole       string  `json:"raft_role" required:"true" enum:"leader|voter|nonvoter|none"`
	Self           bool    `json:"self" required:"true" doc:"This is the node that answered."`
	Partitions     int     `json:"partitions" required:"true" doc:"Partitions (of 1024) the node owns in the answering node's ring."`
	OwnershipShare float64 `json:"ownership_share" required:"true" doc:"Partitions as a fraction of all, 0 to 1."`
	Health         string  `json:"health" required:"true" enum:"ok|unreachable" doc:"Whether the node answered a status probe within 500 ms."`
	LastIndex      uint64  `json:"last_index" required:"true" doc:"Last Raft log index the node holds."`
	AppliedIndex   uint64  `json:"applied_index" required:"true" doc:"Last Raft log index the node applied."`
	RingEpoch      uint64  `json:"ring_epoch" required:"true" doc:"Epoch of the node's ring."`
}

// ClusterStatus is the answer of GET /admin/v1/cluster. Ownership is as
// the answering node (the one with self true) sees it.
type ClusterStatus struct {
	Leader string        `json:"leader" required:"true" doc:"Node id of the Raft leader; empty during an election."`
	Nodes  []ClusterNode `json:"nodes" required:"true"`
}

// LeaveInput names the node to take out of the cluster.
type LeaveInput struct {
	NodeID string `json:"node_id,omitempty" doc:"Node to leave; default the node that receives the request."`
}

// LeaveResult acknowledges a leave that has started.
type LeaveResult struct {
	NodeID string `json:"node_id" required:"true"`
	State  string `json:"state" required:"true" enum:"draining" doc:"The node drains, hands its partitions over, then leaves gossip and Raft and stops."`
}

func (x clusterAPI) routes() []kernel.Route {
	a := []kernel.Auth{kernel.AuthAdmin}
	return []kernel.Route{
		{Method: "GET", Path: "/cluster/metrics", Admin: true, ID: "getClusterMetrics", Tag: "Admin", Auth: a,
			Summary: "Answers by module and class (ok, client errors, throttled, server errors), running totals of every live member asked over the peer channel, and their sum.",
			Result:  &summary.ClusterMetrics{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(func(c *kernel.Call) { c.OK(x.clusterMetrics()) })},
		{Method: "GET", Path: "/cluster", Admin: true, ID: "getCluster", Tag: "Admin", Auth: a,
			Summary: "Members, ring ownership, Raft roles, leader, log indexes and health of every node.",
			Result:  &ClusterStatus{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(x.status)},
		{Method: "POST", Path: "/cluster/leave", Admin: true, ID: "leaveCluster", Tag: "Admin", Auth: a,
			Summary: "Make a node leave gracefully: drain, hand its partitions over, leave gossip and Raft, stop.",
			Body:    &LeaveInput{}, Status: 202, Result: &LeaveResult{}, Errors: append(kernel.AdminErrors(), kernel.ErrConflict), Handle: kernel.AdminOnly(x.leave)},
	}
}

func (x clusterAPI) status(c *kernel.Call) {
	if x.d.Cluster == nil {
		c.Fail(kernel.ErrUnavailable, "this node runs without cluster membership")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st := x.d.Cluster.Status(ctx, 500*time.Millisecond)
	out := ClusterStatus{Leader: st.Leader, Nodes: make([]ClusterNode, 0, len(st.Nodes))}
	for _, n := range st.Nodes {
		out.Nodes = append(out.Nodes, ClusterNode{NodeID: n.NodeID, APIAddr: n.APIAddr, PeerAddr: n.PeerAddr, RaftAddr: n.RaftAddr,
			State: n.State, RaftRole: n.RaftRole, Self: n.NodeID == st.NodeID, Partitions: n.Partitions,
			OwnershipShare: float64(n.Partitions) / cluster.Partitions, Health: n.Health,
			LastIndex: n.LastIndex, AppliedIndex: n.AppliedIndex, RingEpoch: n.RingEpoch})
	}
	c.OK(&out)
}

func (x clusterAPI) leave(c *kernel.Call) {
	var in LeaveInput
	if len(c.Ctx.Request.Body()) > 0 && !c.Decode(&in) {
		return
	}
	if x.d.Cluster == nil {
		c.Fail(kernel.ErrUnavailable, "this node runs without cluster membership")
		return
	}
	id := in.NodeID
	if id == "" {
		id = x.d.NodeID
	}
	switch err := x.d.Cluster.RequestLeave(id); {
	case errors.Is(err, cluster.ErrUnknownNode):
		c.Fail(kernel.ErrNotFound, err.Error())
	case errors.Is(err, cluster.ErrLeaving):
		c.Fail(kernel.ErrConflict, "node "+id+" is already leaving")
	case errors.Is(err, cluster.ErrLastMember):
		c.Fail(kernel.ErrConflict, "node "+id+" is the cluster's only member and cannot leave it; stop it instead")
	case err != nil:
		c.Fail(kernel.ErrUnavailable, err.Error())
	default:
		c.OK(&LeaveResult{NodeID: id, State: "draining"})
	}
}

// clusterAPI serves the cluster operations.
type clusterAPI struct{ d Deps }

// clusterMetrics asks every live member for its totals (at most 2 s each,
// in parallel) and adds up those that answered.
func (x clusterAPI) clusterMetrics() *summary.ClusterMetrics {
	nodes := []summary.NodeMetrics{x.d.Counters.LocalMetrics()}
	if x.d.Peers != nil {
		summary.AskMembers(x.d.Peers, x.d.NodeID, "metrics-summary", nil, 2*time.Second, func(id string, b []byte, err error) {
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
	}
	return summary.Sum(x.d.Now().UTC(), nodes)
}
