package trust

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
)

// Errors of orchestration and receipts.
var (
	// ErrUnknownAssessment is verification's code in this module's words
	// (the code is declared once, by verify).
	ErrUnknownAssessment = verify.ErrUnknownAssessment.Detail("no successful verification of this workspace has this assessment_id (or it expired)")
	ErrAssessmentUsed    = errcode.New("assessment-already-orchestrated", errcode.Conflict, "this assessment already produced a decision receipt; a verification backs one operation")
	ErrContextMismatch   = errcode.New("assessment-context-mismatch", errcode.Conflict, "the verification was bound to another action, subject or operation reference")
	ErrNoReceiptKey      = errcode.New("receipt-key-unavailable", errcode.Unavailable, "the cluster has no receipt signing key yet; rotate one with purpose receipt")
)

// ReceiptTTL is a receipt's lifetime: long enough for the customer's
// backend to commit the operation, short enough that a leaked receipt
// soon stops working.
const ReceiptTTL = 5 * time.Minute

// ReceiptIssuer is the iss claim of every receipt.
const ReceiptIssuer = "trustd"

// Claims is a decision receipt's payload (JWT claims, RFC 7519, plus ours).
type Claims struct {
	Issuer             string `json:"iss"`
	Audience           string `json:"aud"`
	Subject            string `json:"sub"`
	ID                 string `json:"jti"`
	IssuedAt           int64  `json:"iat"`
	NotBefore          int64  `json:"nbf"`
	Expires            int64  `json:"exp"`
	Action             string `json:"action"`
	OperationReference string `json:"operation_reference"`
	Decision           string `json:"decision"`
	AssuranceLevel     string `json:"assurance_level"`
	Method             string `json:"method"`
	AssessmentID       string `json:"assessment_id"`
}

// OrchestrateRequest is POST /trust/orchestrate after decoding.
type OrchestrateRequest struct {
	AssessmentID       string
	SubjectID          string
	Action             string
	OperationReference string
	// ReceiptAlg names the receipt's JWS alg: token.AlgEd25519 (RFC 9864,
	// the default when empty) or token.AlgEdDSA for a verifier whose JOSE
	// library predates RFC 9864.
	ReceiptAlg string
}

// Validate checks the fields.
func (r OrchestrateRequest) Validate() error {
	switch {
	case uuid.Validate(r.AssessmentID) != nil:
		return ErrInvalidRequest.With("assessment_id: a UUID from a successful siteverify")
	case !ident.Valid(r.SubjectID):
		return ErrInvalidRequest.With("subject_id: required, 1 to %d bytes of UTF-8 without control characters", ident.MaxLen)
	case !ident.Action(r.Action):
		return ErrInvalidRequest.With("action: required, 1 to 64 of A-Z a-z 0-9 _ - . /")
	case r.OperationReference == "" || len(r.OperationReference) > 128 || !ident.Printable(r.OperationReference):
		return ErrInvalidRequest.With("operation_reference: required, 1 to 128 printable ASCII characters")
	case r.ReceiptAlg != "" && r.ReceiptAlg != token.AlgEd25519 && r.ReceiptAlg != token.AlgEdDSA:
		return ErrInvalidRequest.With("receipt_alg: Ed25519 (the default) or EdDSA")
	}
	return nil
}

// OrchestrateResult is a decision for one operation, with a signed receipt
// when the decision is allow.
type OrchestrateResult struct {
	DecisionResult
	AssuranceLevel Level
	Receipt        string
	Claims         *Claims
}

// ReceiptAlgs are the JWS alg names receipts are signed under, the default
// first; the JWKS lists each key once per name.
var ReceiptAlgs = []string{token.AlgEd25519, token.AlgEdDSA}

// ReceiptKeys finds the receipt keys of a catalog version.
type ReceiptKeys struct{ Cat *catalog.Catalog }

// Signer returns the key that signs receipts at now, or nil.
func (k ReceiptKeys) Signer(now time.Time) (ed25519.PrivateKey, string) {
	sk := k.Cat.SigningKeyAt(catalog.KeyReceipt, now)
	if sk == nil || len(sk.Secret) != ed25519.SeedSize {
		return nil, ""
	}
	return ed25519.NewKeyFromSeed(sk.Secret), sk.ID
}

// Public returns the public key of id, or nil.
func (k ReceiptKeys) Public(id string) ed25519.PublicKey {
	sk := k.Cat.KeyByID(catalog.KeyReceipt, id)
	if sk == nil || len(sk.Secret) != ed25519.SeedSize {
		return nil
	}
	return ed25519.NewKeyFromSeed(sk.Secret).Public().(ed25519.PublicKey)
}

// All lists every unretired receipt key's id and public key.
func (k ReceiptKeys) All() (ids []string, pubs []ed25519.PublicKey) {
	for _, sk := range k.Cat.Keys {
		if sk.Purpose == catalog.KeyReceipt && !sk.Retired && len(sk.Secret) == ed25519.SeedSize {
			ids = append(ids, sk.ID)
			pubs = append(pubs, ed25519.NewKeyFromSeed(sk.Secret).Public().(ed25519.PublicKey))
		}
	}
	return ids, pubs
}

// Orchestrate combines a successful verification with the subject's
// signals and the workspace's rules into a decision for one operation,
// and signs a receipt when the decision is allow. A verification backs
// one receipt: the first allow consumes it cluster-wide.
func (m *Module) Orchestrate(cat *catalog.Catalog, who Caller, req OrchestrateRequest) (OrchestrateResult, error) {
	if err := req.Validate(); err != nil {
		return OrchestrateResult{}, err
	}
	ws := who.Workspace
	get := &actors.GetVerification{ID: req.AssessmentID}
	p, ok := actors.VerificationPartition(req.AssessmentID, cluster.Partitions)
	if !ok {
		return OrchestrateResult{}, ErrUnknownAssessment
	}
	if err := m.ask.AskPartition(p, get); err != nil {
		return OrchestrateResult{}, err
	}
	v := get.A
	if !get.Found || v.WorkspaceID != ws.ID {
		return OrchestrateResult{}, ErrUnknownAssessment
	}
	if v.Action != "" && v.Action != req.Action {
		return OrchestrateResult{}, ErrContextMismatch.With("the verification was for another action")
	}
	if v.Bindings&BindSubject != 0 && v.SubjectHash != SubjectBinding(ws.ScopeKey, req.SubjectID) {
		return OrchestrateResult{}, ErrContextMismatch.With("the verification was for another subject")
	}
	if v.Bindings&BindOperation != 0 && v.OperationHash != OperationBinding(ws.ScopeKey, req.OperationReference) {
		return OrchestrateResult{}, ErrContextMismatch.With("the verification was for another operation")
	}
	achieved := Level(min(v.Assurance, uint8(LevelHigh)))
	method := v.Method
	if method == "" {
		method = MethodHuman
	}
	subject := SubjectHash(ws.ScopeKey, req.SubjectID)
	d, err := m.evaluate(cat, who, DecisionRequest{Action: req.Action, SubjectID: req.SubjectID}, subject, false)
	if err != nil {
		return OrchestrateResult{}, err
	}
	// The proof discharges a step-up it is strong enough for; it never
	// discharges review or block.
	if d.Decision == Verify && achieved.Satisfies(d.RequestedAssurance) {
		d.Decision = Allow
	}
	now := m.now()
	res := OrchestrateResult{DecisionResult: DecisionResult{DecisionID: uuid.NewString(), Decision: d}, AssuranceLevel: achieved}
	rec := actors.Assessment{ID: res.DecisionID, WorkspaceID: ws.ID, AppID: who.AppID, PolicyID: "trust/" + d.Decision, Risk: d.Risk.Score,
		CreatedNs: now.UnixNano(), ExpiresNs: now.Add(decisionTTL).UnixNano(), SubjectKey: repKey(ws.ID, subject)}
	if d.Decision != Allow {
		if err := m.ask.Ask(decisionRecordKey(res.DecisionID), &actors.PutAssessment{Assessment: rec}); err != nil {
			return OrchestrateResult{}, err
		}
		return res, nil
	}
	priv, kid := ReceiptKeys{Cat: cat}.Signer(now)
	if priv == nil {
		return OrchestrateResult{}, ErrNoReceiptKey
	}
	used := &actors.Consume{ID: orchestratedKey(req.AssessmentID), Expires: v.Expires + int64(proofSkew)}
	if err := m.ask.Ask(used.ID, used); err != nil {
		return OrchestrateResult{}, err
	}
	if !used.First {
		return OrchestrateResult{}, ErrAssessmentUsed
	}
	if err := m.ask.Ask(decisionRecordKey(res.DecisionID), &actors.PutAssessment{Assessment: rec}); err != nil {
		return OrchestrateResult{}, err
	}
	c := &Claims{Issuer: ReceiptIssuer, Audience: ws.ID, Subject: subject, ID: res.DecisionID, IssuedAt: now.Unix(), NotBefore: now.Unix(),
		Expires: now.Add(ReceiptTTL).Unix(), Action: req.Action, OperationReference: req.OperationReference, Decision: d.Decision,
		AssuranceLevel: achieved.String(), Method: method, AssessmentID: req.AssessmentID}
	payload, err := json.Marshal(c)
	if err != nil {
		return OrchestrateResult{}, err
	}
	res.Receipt, res.Claims = token.SignJWS(priv, kid, req.ReceiptAlg, payload), c
	return res, nil
}

// Receipt verification codes (the error-codes array, HTTP 200).
const (
	CodeInvalidReceipt    = "invalid-receipt"
	CodeUnknownReceiptKey = "unknown-receipt-key"
	CodeReceiptExpired    = "receipt-expired"
	CodeWrongWorkspace    = "workspace-mismatch"
)

// ReceiptCodes lists every code of /trust/receipts/verify.
var ReceiptCodes = []string{CodeInvalidReceipt, CodeUnknownReceiptKey, CodeReceiptExpired, CodeWrongWorkspace,
	errcode.CodeActionMismatch, errcode.CodeOperationMismatch, errcode.CodeSubjectMismatch}

// VerifyReceiptRequest is POST /trust/receipts/verify after decoding.
type VerifyReceiptRequest struct {
	Receipt            string
	Action             string
	OperationReference string
	SubjectID          string
}

// VerifyReceipt checks a receipt's signature, lifetime, workspace and,
// when given, its action, operation reference and subject. Claims is
// returned only when the signature verified.
func (m *Module) VerifyReceipt(cat *catalog.Catalog, who Caller, req VerifyReceiptRequest) (*Claims, []string) {
	payload, _, err := token.VerifyJWS(req.Receipt, ReceiptKeys{Cat: cat}.Public)
	if errors.Is(err, token.ErrReceiptKey) {
		return nil, []string{CodeUnknownReceiptKey}
	}
	var c Claims
	if err != nil || json.Unmarshal(payload, &c) != nil || c.Issuer != ReceiptIssuer {
		return nil, []string{CodeInvalidReceipt}
	}
	codes := []string{}
	now := m.now().Unix()
	if now >= c.Expires || now < c.NotBefore-30 {
		codes = append(codes, CodeReceiptExpired)
	}
	if c.Audience != who.Workspace.ID {
		return nil, []string{CodeWrongWorkspace}
	}
	if req.Action != "" && req.Action != c.Action {
		codes = append(codes, errcode.CodeActionMismatch)
	}
	if req.OperationReference != "" && req.OperationReference != c.OperationReference {
		codes = append(codes, errcode.CodeOperationMismatch)
	}
	if req.SubjectID != "" && SubjectHash(who.Workspace.ScopeKey, req.SubjectID) != c.Subject {
		codes = append(codes, errcode.CodeSubjectMismatch)
	}
	return &c, codes
}
