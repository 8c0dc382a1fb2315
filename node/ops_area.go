package node

import (
	"github.com/trustd/trustd/node/ops"
	api "github.com/trustd/trustd/platform/http"
)

// newOps is the node's own admin area: cluster membership and leave, the
// cluster-wide request summary over the transport's counters (k), backup
// and restore of the store.
func (n *Node) newOps(k *kernelBridge) []api.Area {
	return ops.Areas(ops.Deps{Cluster: n.cluster, Peers: n.cluster, Counters: k, Snapshots: n.store, NodeID: n.cfg.NodeID})
}
