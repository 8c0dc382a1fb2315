// Package api is the signed webhooks' HTTP adapter (spec 6): the admin
// operations of a workspace's endpoints, outbox, delivery log, redelivery
// and alerts. It decodes, authenticates admins through the transport's
// Call, calls events.Outbox and encodes; delivery, sealing, signing and
// retries are platform/events/'s, and node/ builds the outbox and runs its loop.
package api

import (
	"github.com/trustd/trustd/platform/events"
	kernel "github.com/trustd/trustd/platform/http"
)

// Deps are what the webhook routes call, built by node/.
type Deps struct {
	// Outbox is the signed-webhooks module; nil answers its operations as
	// unavailable.
	Outbox *events.Outbox
}

// AreaEvents names the area, which places it in the contract documents.
const AreaEvents = "events"

type eventsAPI struct{ o *events.Outbox }

// Areas are the webhooks' operations, for the transport's route table.
func Areas(d Deps) []kernel.Area {
	return []kernel.Area{{Name: AreaEvents, Routes: eventsAPI{d.Outbox}.routes(), Errors: events.Codes()}}
}
