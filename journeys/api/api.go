// Package api is the journeys area's HTTP adapter: the journey
// definitions' admin operations, the server-side operations (start,
// siteverify, status, escalate, and their mobile variants), and the
// person's page with its assets and calls, authenticated by the person's
// capability (header X-Service-Journey-Token), never a secret. It decodes,
// authenticates through the transport's Call, calls journeys/ and encodes;
// states, bindings and proofs live in journeys/ (see its DESIGN.md), and
// node/ builds and wires the module.
package api

import (
	"github.com/trustd/trustd/journeys"
	kernel "github.com/trustd/trustd/platform/http"
)

// Deps are what the journeys routes need, built by node/.
type Deps struct {
	Journeys *journeys.Module
	// BaseURL is the public address the person's endpoint is built on.
	BaseURL string
}

// AreaJourneys names the journeys area, which places it in the contract
// documents.
const AreaJourneys = "journeys"

type journeysAPI struct {
	m       *journeys.Module
	baseURL string
}

// Areas are the journeys area's operations, for the transport's route
// table.
func Areas(d Deps) []kernel.Area {
	x := journeysAPI{m: d.Journeys, baseURL: d.BaseURL}
	return []kernel.Area{{Name: AreaJourneys, Routes: x.routes(), Errors: journeys.Errors}}
}
