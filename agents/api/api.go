// Package api is Agent Trust's HTTP adapter: the agent registry's and the
// approval queue's admin operations, and the two signed agent operations
// (POST /agents/decision, POST /agents/approval/status). It decodes the
// request into an agents.Message, authenticates admins through the
// transport's Call, calls agents.Module and encodes; every decision is the
// module's (see agents/DESIGN.md), and node/ constructs it.
package api

import (
	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// Deps are what the agent routes call, built by node/.
type Deps struct {
	Agents *agents.Module
}

// AreaAgents names the area, which places it in the contract documents.
const AreaAgents = "agents"

type agentsAPI struct {
	m     *agents.Module
	admin *kernel.Resource[catalog.Agent, AgentInput, AgentView, AgentList]
}

// Areas are Agent Trust's operations, for the transport's route table.
func Areas(d Deps) []kernel.Area {
	x := agentsAPI{m: d.Agents}
	x.admin = x.agentAdmin()
	return []kernel.Area{{Name: AreaAgents, Routes: x.routes(), Errors: agents.Errors, Schemes: schemes}}
}
