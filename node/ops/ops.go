// Package ops is the admin adapter of the node's own operations: cluster
// membership, ring ownership and graceful leave, the cluster-wide request
// summary, and backup and restore of the replicated state. They span the
// cluster, persistence and the transport's own counters, so the adapter
// sits with the assembly that owns all three (node/) rather than under
// any one of them. It shapes their answers for the contract and decides
// nothing: platform/cluster/, platform/persistence/ and platform/cluster/summary do the work.
package ops

import (
	"time"

	"github.com/trustd/trustd/platform/cluster/summary"
	kernel "github.com/trustd/trustd/platform/http"
)

// The names of the node's operation areas, which place them in the
// contract documents.
const (
	AreaCluster   = "node/cluster"
	AreaSnapshots = "node/snapshots"
)

// Counters are this node's answer counters by module (the transport's,
// http.Server.LocalMetrics).
type Counters interface {
	LocalMetrics() summary.NodeMetrics
}

// Deps are what the node's operations need, built by node/.
type Deps struct {
	// Cluster serves membership and leave; nil answers them as
	// unavailable. Peers, when set, are asked for their counters.
	Cluster ClusterControl
	Peers   summary.Peers
	// Counters are this node's own; bound before the first request.
	Counters Counters
	// Snapshots takes and restores backups; nil answers them as
	// unavailable.
	Snapshots Snapshots
	NodeID    string
	// Now is the time source; default time.Now.
	Now func() time.Time
}

// Areas are the node's admin operations.
func Areas(d Deps) []kernel.Area {
	if d.Now == nil {
		d.Now = time.Now
	}
	return []kernel.Area{
		{Name: AreaCluster, Routes: clusterAPI{d}.routes()},
		{Name: AreaSnapshots, Routes: snapshotAPI{d.Snapshots}.routes()},
	}
}
