package node

import (
	"context"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/journeys"
	"github.com/trustd/trustd/verify"
)

// Journeys is the node's journeys module, where the review queue, the
// human-verification verdict and the face engine are wired.
func (n *Node) Journeys() *journeys.Module { return n.api.Journeys() }

// journeyHuman is the human_verification verdict of journeys: the widget
// token exchanged through the verify module exactly as /siteverify
// exchanges it (same checks, same cluster-wide single-use marker).
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
