package trust

import (
	"encoding/hex"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
)

// Error codes of /trust/siteverify (the error-codes array, HTTP 200)
// besides the family's shared ones (errcode.CodeInvalidResponse, …).
const (
	CodeIdentityRequired    = "identity-not-verified"
	CodeLivenessRequired    = "liveness-not-verified"
	CodeOperationNotBound   = "operation-not-bound"
	CodeStaleAuthentication = "stale-authentication"
)

// SiteverifyCodes lists every error code /trust/siteverify can answer,
// for the contract.
var SiteverifyCodes = []string{errcode.CodeInvalidResponse, errcode.CodeTimeoutOrDuplicate, errcode.CodeActionMismatch, errcode.CodeInsufficient,
	CodeIdentityRequired, CodeLivenessRequired, CodeOperationNotBound, errcode.CodeOperationMismatch, CodeStaleAuthentication,
	errcode.CodeRemoteIPMismatch, errcode.CodeLowScore}

// DefaultMaxAge bounds how long ago the person completed the step-up
// (RFC 9470 max_age) when the request names no max_age_seconds.
const DefaultMaxAge = 10 * time.Minute

// SiteverifyRequest is POST /trust/siteverify after decoding.
type SiteverifyRequest struct {
	Response                string
	Action                  string
	ExpectedAssurance       string
	RequireIdentity         bool
	RequireLiveness         bool
	RequireOperationBinding bool
	OperationReference      string
	MaxAgeSeconds           int64
}

// Validate checks the fields.
func (r SiteverifyRequest) Validate() error {
	switch {
	case r.Action != "" && !ident.Action(r.Action):
		return ErrInvalidRequest.With("action: 1 to 64 of A-Z a-z 0-9 _ - . /")
	case len(r.OperationReference) > 128 || !ident.Printable(r.OperationReference):
		return ErrInvalidRequest.With("operation_reference: at most 128 printable ASCII characters")
	case r.RequireOperationBinding && r.OperationReference == "":
		return ErrInvalidRequest.With("operation_reference: required with require_operation_binding")
	case r.MaxAgeSeconds < 0 || r.MaxAgeSeconds > 86400:
		return ErrInvalidRequest.With("max_age_seconds: 0 to 86400")
	}
	if _, ok := ParseLevel(r.ExpectedAssurance); !ok {
		return ErrInvalidRequest.With("expected_assurance: none, document_only, standard or high")
	}
	return nil
}

// Achieved is what a proof establishes, whatever issued it.
type Achieved struct {
	Method                          string
	Assurance                       Level
	Identity, Liveness, DeviceBound bool
	// OperationBound: the proof carries an operation binding; Operation
	// is that binding.
	OperationBound bool
	Operation      [16]byte
	Action         string
	// AuthTime is when the step-up was completed (zero: unknown).
	AuthTime time.Time
}

// Check returns the error codes of a proof that achieved a against req at
// now (empty: it satisfies every requirement). operation is the binding
// of req.OperationReference under the caller's workspace key.
func Check(req SiteverifyRequest, a Achieved, operation [16]byte, now time.Time) []string {
	codes := []string{}
	want, _ := ParseLevel(req.ExpectedAssurance)
	if req.Action != "" && a.Action != "" && req.Action != a.Action {
		codes = append(codes, errcode.CodeActionMismatch)
	}
	if !a.Assurance.Satisfies(want) {
		codes = append(codes, errcode.CodeInsufficient)
	}
	if req.RequireIdentity && !a.Identity {
		codes = append(codes, CodeIdentityRequired)
	}
	if req.RequireLiveness && !a.Liveness {
		codes = append(codes, CodeLivenessRequired)
	}
	switch {
	case req.OperationReference != "" && a.OperationBound && a.Operation != operation:
		codes = append(codes, errcode.CodeOperationMismatch)
	case req.RequireOperationBinding && !a.OperationBound:
		codes = append(codes, CodeOperationNotBound)
	}
	maxAge := DefaultMaxAge
	if req.MaxAgeSeconds > 0 {
		maxAge = time.Duration(req.MaxAgeSeconds) * time.Second
	}
	if want > LevelNone && (a.AuthTime.IsZero() || now.Sub(a.AuthTime) > maxAge) {
		codes = append(codes, CodeStaleAuthentication)
	}
	return codes
}

// ProofResult is the outcome of one proof exchange.
type ProofResult struct {
	Known        bool // the proof is ours and the caller's: echo what it achieved
	Achieved     Achieved
	Codes        []string
	AssessmentID string
}

// Success reports a proof that satisfied every requirement.
func (r ProofResult) Success() bool { return r.Known && len(r.Codes) == 0 }

// proofSkew keeps a consumed proof's marker past its expiry, so a node
// with a slow clock never accepts it again (research §3.4, D3).
const proofSkew = 30 * time.Second

// VerificationTTL is how long a successful proof's assessment stays
// referable by /trust/orchestrate.
const VerificationTTL = 24 * time.Hour

// VerifyProof exchanges a step-up proof once: it checks the MAC (keys
// finds a live key by id), the workspace and expiry without touching
// state, then consumes the proof's single-use marker (replicated to the
// partition's replica before the answer, like response tokens) whatever
// the requirement checks say (spec 3.1), and stores the assessment only
// on success, in the same op.
func (m *Module) VerifyProof(who Caller, siteID string, req SiteverifyRequest, keys token.Lookup) (ProofResult, error) {
	ws := who.Workspace
	p, err := token.DecodeProof(req.Response, keys)
	if err != nil || p.WorkspaceID != ws.ID {
		return ProofResult{Codes: []string{errcode.CodeInvalidResponse}}, nil
	}
	a := Achieved{Method: p.Method, Assurance: Level(min(p.Assurance, uint8(LevelHigh))), Identity: p.Identity, Liveness: p.Liveness,
		DeviceBound: p.DeviceBound, OperationBound: p.HasOperation, Operation: p.OperationHash, Action: p.Action}
	if p.AuthTime > 0 {
		a.AuthTime = time.Unix(p.AuthTime, 0)
	}
	res := ProofResult{Known: true, Achieved: a}
	now := m.now()
	if now.Unix() >= p.Expires {
		res.Codes = []string{errcode.CodeTimeoutOrDuplicate}
		return res, nil
	}
	res.Codes = Check(req, a, OperationBinding(ws.ScopeKey, req.OperationReference), now)
	op := &actors.Redeem{ID: actors.SpaceProof + hex.EncodeToString(p.ID[:]), Expires: time.Unix(p.Expires, 0).Add(proofSkew).UnixNano()}
	if len(res.Codes) == 0 {
		res.AssessmentID = actors.NewVerificationID(cluster.Partition(op.ID))
		var bindings uint32
		for i, b := range []bool{p.Identity, p.Liveness, p.DeviceBound, p.HasOperation, p.HasSubject} {
			if b {
				bindings |= 1 << i
			}
		}
		op.Record = &actors.Verification{ID: res.AssessmentID, WorkspaceID: ws.ID, SiteID: siteID, Action: p.Action,
			ChallengeType: "proof", VerifiedAt: now.UnixNano(), Expires: now.Add(VerificationTTL).UnixNano(),
			Method: p.Method, Assurance: uint8(a.Assurance), Bindings: bindings, SubjectHash: p.SubjectHash, OperationHash: p.OperationHash}
	}
	op.Outcome = actors.Outcome{Ref: res.AssessmentID, At: now.UnixNano()}
	if err := m.ask.Ask(op.ID, op); err != nil {
		return ProofResult{}, err
	}
	if !op.First {
		res.Codes, res.AssessmentID = []string{errcode.CodeTimeoutOrDuplicate}, ""
		return res, nil
	}
	if len(res.Codes) > 0 && p.HasSubject {
		// A failed proof of a known subject is a failed attempt.
		_ = m.ask.Ask(failuresKeyBinding(ws.ID, p.SubjectHash), &actors.CountHit{Key: failuresKeyBinding(ws.ID, p.SubjectHash), WindowNs: int64(SignalWindow)})
	}
	return res, nil
}

// Binding bits of a proof's Verification.
const (
	BindIdentity uint32 = 1 << iota
	BindLiveness
	BindDevice
	BindOperation
	BindSubject
)

// FailureKey is the actor key under which a subject's failed step-up
// attempts are counted (a CountHit in SignalWindow), for issuers that
// fail an attempt outside /trust/siteverify (journeys); binding is the
// subject's SubjectBinding.
func FailureKey(ws string, binding [16]byte) string { return failuresKeyBinding(ws, binding) }

// failuresKeyBinding counts a subject's failed attempts under its 16-byte
// binding, the first half of its SubjectHash: proofs carry only that.
func failuresKeyBinding(ws string, b [16]byte) string {
	return actors.SpaceTrustFailures + ws + "/" + hex.EncodeToString(b[:])
}
