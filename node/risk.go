package node

import (
	"fmt"
	"time"

	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/risk/account"
	riskapi "github.com/trustd/trustd/risk/api"
	"github.com/trustd/trustd/risk/apiprotection"
	"github.com/trustd/trustd/risk/messaging"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/verify"
)

// newRisk builds the risk area's modules, wires them together and returns
// the area's routes and the risk signals journeys escalate on: trust
// decisions and journeys rest on Account Defence's observations as well as
// the trust counters. hv is the verify module (newVerify): its live keys
// check step-up proofs and its exchange takes widget tokens.
func (n *Node) newRisk(hv *verify.Module) ([]api.Area, trust.SignalSource, error) {
	now := time.Now
	acc := account.New(n.router, n.store, now)
	signals := trust.WithAccount(trust.ActorSignals{Router: n.router}, acc)
	tr, err := trust.New(n.router, signals, now)
	if err != nil {
		return nil, nil, fmt.Errorf("node: trust module: %w", err)
	}
	sealer := messaging.NewSealer(n.cfg.ClusterKey)
	areas := riskapi.Areas(riskapi.Deps{
		Trust: tr, Account: acc, APIProtection: apiprotection.New(n.router, now),
		Passwords: n.passwords, Messaging: messaging.New(n.router, sealer, now), MessagingSealer: sealer,
		ProofKeys: liveKeys{hv}, Widgets: trustWidgets{hv}, NodeID: n.cfg.NodeID,
	})
	return areas, signals, nil
}
