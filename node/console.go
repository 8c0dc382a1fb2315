package node

import (
	"sync/atomic"

	consoleapi "github.com/trustd/trustd/console/api"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster/summary"
	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify"
)

// newConsole builds the console area: its pages and console-user admin
// over the transport (bound through k once http.New has built it), the
// node's store and router, and the verify module's siteverify for the
// login widget (hv).
func (n *Node) newConsole(base string, k *kernelBridge, hv *verify.Module) []api.Area {
	return consoleapi.Areas(consoleapi.Deps{Kernel: k, Human: consoleHuman{hv}, Store: n.store, Router: n.router,
		BaseURL: base, NodeID: n.cfg.NodeID, Version: api.ContractVersion + "+" + api.Build,
		Dev: n.cfg.Dev, SiteID: n.cfg.ConsoleSiteID, DemoSite: n.demoSite})
}

// kernelBridge lends the transport's admin runner, token check and audit
// ring to the console, and its answer counters to node/ops; the server is
// set right after http.New, before the node serves its first request.
type kernelBridge struct{ s atomic.Pointer[api.Server] }

func (k *kernelBridge) CheckAdminToken(tok string) bool { return k.s.Load().CheckAdminToken(tok) }

func (k *kernelBridge) RunAdmin(actor, method, path string, body []byte) (int, []byte) {
	return k.s.Load().RunAdmin(actor, method, path, body)
}

func (k *kernelBridge) Audit(e catalog.AuditEntry) { k.s.Load().Audit(e) }

func (k *kernelBridge) LocalMetrics() summary.NodeMetrics { return k.s.Load().LocalMetrics() }
