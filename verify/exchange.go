package verify

import (
	"strings"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// Exchanged is a widget response token consumed for another product
// module (the Trust API's /trust/siteverify, a journey's
// human_verification step, the console's login form): the /siteverify
// verdict and what the token carried. What the exchange proves is the
// consumer's rule (risk/trust.WidgetProof for the Trust API).
type Exchanged struct {
	// Known: a token of ours for the site; the fields below Codes are its
	// content, empty otherwise.
	Known bool
	// Success is the /siteverify decision (Verdict.Success).
	Success bool
	// Codes are the /siteverify error codes; empty on success.
	Codes []string
	// Spent is the exchange's timeout-or-duplicate: the token was used
	// or expired.
	Spent bool
	// Action and Issued are the token's bound action and issue time.
	Action string
	Issued time.Time
	// CData is the customer data bound at challenge time.
	CData string
	// AssessmentID is the verification the exchange kept ("" when it
	// failed).
	AssessmentID string
}

// Exchange consumes a live widget response token of site exactly as POST
// /siteverify does: the same decoding and checks (q's action and
// remoteip, when set, must be the token's) and the same cluster-wide
// single-use marker, so a token exchanged here is a duplicate at
// /siteverify and the other way round. It is the one exchange every
// consumer outside /siteverify goes through. A non-nil error means the
// token's owner did not answer; the token is then untouched.
func (m *Module) Exchange(cat *catalog.Catalog, site *catalog.Site, q *Request) (Exchanged, error) {
	buf, _ := m.scratch.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, 512)
		buf = &b
	}
	defer m.scratch.Put(buf)
	v, err := m.Siteverify(cat, site, q, *buf)
	if err != nil {
		return Exchanged{}, err
	}
	out := Exchanged{Known: v.Known, Success: v.Success(), Codes: v.CodeNames([]string{})}
	if v.Known {
		// The decoded strings may point into the scratch buffer.
		out.Spent = v.Codes&CodeTimeoutOrDuplicate != 0
		out.Action, out.CData = strings.Clone(v.Token.Action), strings.Clone(v.Token.CData)
		out.Issued = time.Unix(v.Token.Issued, 0)
		out.AssessmentID = v.AssessmentID
	}
	return out, nil
}

// ExchangeToken consumes a live widget response token of site siteID,
// which must belong to workspaceID, through Exchange. remoteIP, when not
// empty, must be the address the token is bound to (a mismatch is
// remoteip-mismatch, a failure, never only a signal). An unknown site, a
// site of another workspace or a sandbox site recognises no token
// (invalid-input-response) and consumes nothing.
func (m *Module) ExchangeToken(cat *catalog.Catalog, workspaceID, siteID, response, remoteIP string) (Exchanged, error) {
	site := cat.Sites[siteID]
	if site == nil || site.WorkspaceID != workspaceID || site.Sandbox() || response == "" {
		return Exchanged{Codes: []string{codeNames[0]}}, nil
	}
	return m.Exchange(cat, site, &Request{Response: []byte(response), RemoteIP: []byte(remoteIP)})
}
