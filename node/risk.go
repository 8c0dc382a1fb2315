package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/trustd/trustd/catalog"
	api "github.com/trustd/trustd/http"
	"github.com/trustd/trustd/risk/account"
	riskapi "github.com/trustd/trustd/risk/api"
	"github.com/trustd/trustd/risk/apiprotection"
	"github.com/trustd/trustd/risk/messaging"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/token"
	"github.com/trustd/trustd/verify"
)

// newRisk builds the risk area's modules, wires them together and returns
// the area's routes and the risk signals journeys escalate on: trust
// decisions and journeys rest on Account Defence's observations as well as
// the trust counters. hv is the verify module, which http.New still
// builds: it is read only when a request comes, after New returned.
func (n *Node) newRisk(hv *verifyBridge) ([]api.Area, trust.SignalSource, error) {
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
		ProofKeys: hv, Widgets: hv, NodeID: n.cfg.NodeID,
	})
	return areas, signals, nil
}

// verifyBridge lends the verify module's live keys and its token exchange
// to the Trust API and journeys (step-up proofs are signed with the live
// keys; a widget token is exchanged as /siteverify exchanges it).
type verifyBridge struct {
	hv      *verify.Module
	scratch sync.Pool // []byte token scratch of verify.Siteverify
}

// Signer is the live key that signs step-up proofs (journeys).
func (b *verifyBridge) Signer(cat *catalog.Catalog) *token.Key {
	return b.hv.Signer(cat, catalog.KeyLive)
}

// Verifier is the live key keyID, to check a step-up proof.
func (b *verifyBridge) Verifier(cat *catalog.Catalog, keyID string) *token.Key {
	return b.hv.Verifier(cat, catalog.KeyLive, keyID)
}

func (b *verifyBridge) ExchangeWidget(cat *catalog.Catalog, site *catalog.Site, response, action string) (trust.WidgetToken, error) {
	buf, _ := b.scratch.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
		*buf = make([]byte, 512)
	}
	defer b.scratch.Put(buf)
	q := verify.Request{Response: []byte(response), Action: []byte(action)}
	v, err := b.hv.Siteverify(cat, site, &q, *buf)
	if err != nil || !v.Known {
		return trust.WidgetToken{}, err
	}
	return trust.WidgetToken{Known: true, Action: v.Token.Action, Issued: time.Unix(v.Token.Issued, 0), Codes: v.CodeNames([]string{}),
		Spent: v.Codes&verify.CodeTimeoutOrDuplicate != 0, AssessmentID: v.AssessmentID}, nil
}
