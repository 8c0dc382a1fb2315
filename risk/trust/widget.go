package trust

import (
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

// AuthorizationCapable is the one statement of what may back an
// authorization: a proof bound to an identity and to an operation. The
// Trust API's siteverify and the journeys' both answer it.
func AuthorizationCapable(identityBound, operationBound bool) bool {
	return identityBound && operationBound
}

// AuthorizationCapable reports whether what a proof achieved can back an
// authorization.
func (a Achieved) AuthorizationCapable() bool {
	return AuthorizationCapable(a.Identity, a.OperationBound)
}

// WidgetToken is what exchanging a human-verification response token told
// (the verify module's /siteverify path, one single-use marker per token,
// so a token exchanged at either endpoint is spent at both).
type WidgetToken struct {
	// Known: a token of ours for the calling site; the rest is its content.
	Known  bool
	Action string
	Issued time.Time
	// Codes are the exchange's /siteverify error codes; Spent is its
	// timeout-or-duplicate (the token was used or expired).
	Codes []string
	Spent bool
	// AssessmentID is the verification the exchange kept.
	AssessmentID string
}

// WidgetProof decides what a widget response token proves against req at
// now: presence at its issue time, assurance none. The exchange's own
// failures keep their /siteverify codes (it checked the action); the
// trust requirements are applied here to a token that was not spent. When
// only the trust requirements fail, the verification the exchange kept is
// never handed out: its id is dropped and the record expires with its TTL.
func WidgetProof(req SiteverifyRequest, w WidgetToken, now time.Time) ProofResult {
	if !w.Known {
		return ProofResult{Codes: []string{errcode.CodeInvalidResponse}}
	}
	a := Achieved{Method: MethodHuman, Assurance: LevelNone, Action: w.Action, AuthTime: w.Issued}
	res := ProofResult{Known: true, Achieved: a, Codes: append([]string{}, w.Codes...)}
	if !w.Spent {
		req.Action = ""
		res.Codes = append(res.Codes, Check(req, a, [16]byte{}, now)...)
	}
	if len(res.Codes) == 0 {
		res.AssessmentID = w.AssessmentID
	}
	return res
}
