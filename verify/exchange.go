package verify

import (
	"strings"

	"github.com/trustd/trustd/catalog"
)

// Exchanged is a widget response token consumed for another product
// module (a journey's human_verification step): the /siteverify verdict
// and the cdata the token carries.
type Exchanged struct {
	// Success is the /siteverify decision (Verdict.Success).
	Success bool
	// CData is the customer data bound at challenge time ("" when the
	// token was not recognised).
	CData string
	// Codes are the /siteverify error codes; empty on success.
	Codes []string
}

// ExchangeToken consumes a live widget response token of site siteID,
// which must belong to workspaceID, exactly as POST /siteverify does:
// the same decoding and checks, and the same cluster-wide single-use
// marker, so a token exchanged here is a duplicate at /siteverify and the
// other way round. remoteIP, when not empty, must be the address the
// token is bound to (a mismatch is remoteip-mismatch, a failure, never
// only a signal). An unknown site, a site of another workspace or a
// sandbox site recognises no token (invalid-input-response) and consumes
// nothing. A non-nil error means the token's owner did not answer; the
// token is then untouched.
func (m *Module) ExchangeToken(cat *catalog.Catalog, workspaceID, siteID, response, remoteIP string) (Exchanged, error) {
	site := cat.Sites[siteID]
	if site == nil || site.WorkspaceID != workspaceID || site.Sandbox() || response == "" {
		return Exchanged{Codes: []string{codeNames[0]}}, nil
	}
	q := Request{Response: []byte(response), RemoteIP: []byte(remoteIP)}
	v, err := m.Siteverify(cat, site, &q, make([]byte, 512))
	if err != nil {
		return Exchanged{}, err
	}
	out := Exchanged{Success: v.Success(), Codes: v.CodeNames([]string{})}
	if v.Known {
		// The decoded strings may point into the scratch buffer.
		out.CData = strings.Clone(v.Token.CData)
	}
	return out, nil
}
