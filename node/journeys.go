package node

import (
	"context"
	"time"

	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/journeys"
	journeysapi "github.com/trustd/trustd/journeys/api"
	"github.com/trustd/trustd/platform/catalog"
	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/verify"
)

// Journeys is the node's journeys module, where the review queue, the
// human-verification verdict and the face engine are wired.
func (n *Node) Journeys() *journeys.Module { return n.journeys }

// newJourneys builds the journeys module over the verify module's live
// signing keys and the same risk signals as trust decisions, and its
// routes. The review
// queue, the widget exchange and the face checks are wired once the
// modules they come from exist (wireJourneys).
func (n *Node) newJourneys(base string, hv *verify.Module, signals trust.SignalSource) []api.Area {
	n.journeys = journeys.New(n.store, n.router, liveKeys{hv}, signals, time.Now).
		WithFace(nil, nil, token.NewSealer(n.cfg.ClusterKey, "journey-face-template")).
		WithPasskeys(base)
	return journeysapi.Areas(journeysapi.Deps{Journeys: n.journeys, BaseURL: base})
}

// journeyHuman is the human_verification verdict of journeys: the widget
// token exchanged through the verify module's one exchange (same checks
// and cluster-wide single-use marker as /siteverify).
type journeyHuman struct {
	hv  *verify.Module
	cat func() *catalog.Catalog
}

func (h journeyHuman) VerifyHuman(_ context.Context, workspaceID, siteID, response, remoteIP string) (journeys.HumanVerdict, error) {
	x, err := h.hv.ExchangeToken(h.cat(), workspaceID, siteID, response, remoteIP)
	if err != nil {
		return journeys.HumanVerdict{}, err
	}
	return journeys.HumanVerdict{Success: x.Success, CData: x.CData, Codes: x.Codes}, nil
}

// journeyMatchFunc adapts an identity session matcher (the configured
// FaceMatch) to journeys.Matcher.
type journeyMatchFunc session.Matcher

func (f journeyMatchFunc) Match(a, b []float32) (bool, error) {
	_, same := f(a, b)
	return same, nil
}
