// Package api is human verification's HTTP adapter: the routes, contract
// bodies and error vocabulary of the widget's challenge protocol,
// /siteverify and its drop-in dialects, the sandbox, edge pre-clearance,
// detection feedback, the widget's files and the --dev demo. It decodes,
// authenticates through the transport's Call, calls the verify module and
// encodes; it decides nothing (the decisions are package verify's) and
// constructs no module (node/ builds the verify module and hands it in).
package api

import (
	"log/slog"
	"sync"

	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify"
)

// Deps are what the verify routes call, built by node/.
type Deps struct {
	Verify *verify.Module
	// Dev serves the --dev demo page and its backend.
	Dev bool
	// DemoSite returns the dev site's key and secret for the demo page;
	// empty strings until the dev workspace is seeded (nil: never).
	DemoSite func() (siteKey, secret string)
	// Log takes the widget bundle's sizes at start (nil: discarded).
	Log *slog.Logger
}

// The names of the verify areas, which place them in the contract
// documents: the widget's files (and the demo) sit apart from the
// verification operations.
const (
	AreaWidget = "verify/widget"
	AreaVerify = "verify"
)

// Errors is the error vocabulary of the verification operations, in the
// contract's order: the module's codes with the shared
// invalid-app-identity of its mobile feedback before the edge's.
var Errors = []*errcode.Code{verify.ErrInvalidSitekey, verify.ErrInvalidOrigin, verify.ErrInvalidChallenge, verify.ErrChallengeExpired,
	verify.ErrChallengeUsed, verify.ErrInvalidSolution, verify.ErrUnknownAssessment, errcode.ErrInvalidAppIdentity, verify.ErrClearanceRequired}

// Areas are human verification's operations, for the transport's route
// table.
func Areas(d Deps) []kernel.Area {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	a := &verifyAPI{m: d.Verify}
	a.bufs.New = func() any { return new(svBuf) }
	return []kernel.Area{
		{Name: AreaWidget, Routes: widgetRoutes(d)},
		{Name: AreaVerify, Routes: a.routes(), Errors: Errors},
	}
}

// verifyAPI is the verification operations over the module.
type verifyAPI struct {
	m    *verify.Module
	bufs sync.Pool // *svBuf of the siteverify operations
}

func (a *verifyAPI) routes() []kernel.Route {
	var rs []kernel.Route
	rs = append(rs, a.challengeRoutes()...)
	rs = append(rs, a.siteverifyRoutes()...)
	rs = append(rs, a.sandboxRoutes()...)
	rs = append(rs, a.edgeRoutes()...)
	rs = append(rs, a.feedbackRoutes()...)
	return rs
}
