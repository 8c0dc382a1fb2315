package node

import (
	"time"

	"github.com/trustd/trustd/agents"
	agentsapi "github.com/trustd/trustd/agents/api"
	api "github.com/trustd/trustd/platform/http"
)

// newAgents builds Agent Trust over the router (nonces, behaviour
// counters, stored decisions) and the Raft store (agents, approvals), its
// secrets sealed under the cluster key, and returns its routes.
func (n *Node) newAgents() []api.Area {
	m := agents.New(agents.Config{SealKey: n.cfg.ClusterKey}, n.router, n.store, time.Now)
	return agentsapi.Areas(agentsapi.Deps{Agents: m})
}
