// Package api is the branding profiles' HTTP adapter (spec 4.13): the
// profiles' admin operations with their logo upload, and the public logo
// and stylesheet the widget and hosted pages link. It decodes,
// authenticates admins through the transport's Call, calls console/branding/ and
// encodes; validation, logo normalisation and the public lookup are
// console/branding/'s (see its DESIGN.md).
package api

import (
	"github.com/trustd/trustd/console/branding"
	kernel "github.com/trustd/trustd/platform/http"
)

// AreaBranding names the area, which places it in the contract documents.
const AreaBranding = "branding"

// Areas are the branding operations, for the transport's route table.
// Branding keeps no module state: its routes read and change the catalog
// through the call.
func Areas() []kernel.Area {
	return []kernel.Area{{Name: AreaBranding, Routes: routes(), Errors: branding.Errors}}
}
