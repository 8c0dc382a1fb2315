// Package api is the identity area's HTTP adapter: document screening
// (POST /documents/verify, GET /documents/supported), identity
// verification sessions, the hosted capture page with its assets and
// continuation calls, and the review queue's admin operations. It decodes,
// authenticates through the transport's Call, calls identity/documents and
// identity/session, and encodes; it decides nothing and constructs no
// module (node/ does).
package api

import (
	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/session"
	kernel "github.com/trustd/trustd/platform/http"
)

// Deps are the modules the identity routes call, built by node/.
type Deps struct {
	Sessions *session.Module
	Screener *documents.Screener
	// BaseURL is the public address the hosted page's URL is built on.
	BaseURL string
}

// The names of the identity areas, which place them in the contract
// documents.
const (
	AreaDocuments = "identity/documents"
	AreaSessions  = "identity/sessions"
)

type identityAPI struct {
	idv     *session.Module
	docs    *documents.Screener
	baseURL string
}

// Areas are the identity area's operations, for the transport's route
// table.
func Areas(d Deps) []kernel.Area {
	x := identityAPI{idv: d.Sessions, docs: d.Screener, baseURL: d.BaseURL}
	return []kernel.Area{
		{Name: AreaDocuments, Routes: x.documentRoutes(), Errors: documents.Errors},
		{Name: AreaSessions, Routes: x.identityRoutes(), Errors: session.Errors,
			Schemes: map[kernel.Auth]string{kernel.AuthHosted: hostedTokenDoc}},
	}
}

// hostedTokenDoc describes the hosted_token scheme, which the hosted
// capture pages' operations verify, for the contract (kernel.Area.Schemes).
const hostedTokenDoc = "The hosted capability of one identity session: given to the browser in the hosted URL's fragment, removed from the address bar by the page at once."
