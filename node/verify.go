package node

import (
	"time"

	"github.com/trustd/trustd/platform/catalog"
	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/verify"
	verifyapi "github.com/trustd/trustd/verify/api"
)

// newVerify builds the human-verification module and its routes. The
// node lends the module to the areas that rest on it: the Trust API
// (proof keys, widget exchange: liveKeys, trustWidgets), journeys (signing
// keys, the human_verification verdict: journeyHuman) and the console's
// login form (consoleHuman).
func (n *Node) newVerify() (*verify.Module, []api.Area) {
	hv := verify.New(n.router, n.store, time.Now, verify.Config{Dev: n.cfg.Dev})
	return hv, verifyapi.Areas(verifyapi.Deps{Verify: hv, Dev: n.cfg.Dev, DemoSite: n.demoSite, Log: n.cfg.Logger})
}

// liveKeys are the verify module's live signing keys: journeys sign
// step-up proofs with them, the Trust API checks those proofs.
type liveKeys struct{ hv *verify.Module }

// Signer is the live key that signs step-up proofs (journeys).
func (k liveKeys) Signer(cat *catalog.Catalog) *token.Key { return k.hv.Signer(cat, catalog.KeyLive) }

// Verifier is the live key keyID, to check a step-up proof.
func (k liveKeys) Verifier(cat *catalog.Catalog, keyID string) *token.Key {
	return k.hv.Verifier(cat, catalog.KeyLive, keyID)
}

// trustWidgets exchanges a widget token for /trust/siteverify through the
// verify module's one exchange; risk/trust.WidgetProof decides what it
// proves.
type trustWidgets struct{ hv *verify.Module }

func (w trustWidgets) ExchangeWidget(cat *catalog.Catalog, site *catalog.Site, response, action string) (trust.WidgetToken, error) {
	x, err := w.hv.Exchange(cat, site, &verify.Request{Response: []byte(response), Action: []byte(action)})
	if err != nil || !x.Known {
		return trust.WidgetToken{}, err
	}
	return trust.WidgetToken{Known: true, Action: x.Action, Issued: x.Issued, Codes: x.Codes, Spent: x.Spent, AssessmentID: x.AssessmentID}, nil
}

// consoleHuman is the console login's human check (console/api.Human):
// the widget token exchanged through the verify module's one exchange.
type consoleHuman struct{ hv *verify.Module }

func (h consoleHuman) VerifyHuman(cat *catalog.Catalog, site *catalog.Site, response, remoteIP, action string) (bool, error) {
	x, err := h.hv.Exchange(cat, site, &verify.Request{Response: []byte(response), RemoteIP: []byte(remoteIP), Action: []byte(action)})
	return x.Success, err
}
