package trust

import (
	"crypto/rand"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
)

// ProofInput is what a completed step-up establishes, as its issuer
// (identity verification, journeys) knows it.
type ProofInput struct {
	Method                          string
	Assurance                       Level
	Identity, Liveness, DeviceBound bool
	// SubjectID and OperationReference, when set, are bound as keyed
	// hashes under the workspace's scope key.
	SubjectID, OperationReference string
	Action                        string
	AuthTime                      time.Time
	TTL                           time.Duration
	// ID, when not zero, is the proof's id (an issuer that must know it,
	// such as a journey session, draws it); else a random one.
	ID [16]byte
	// SubjectBinding and OperationBinding, when set, are bindings already
	// computed (SubjectBinding, OperationBinding) by an issuer that keeps
	// only hashes; they apply when SubjectID or OperationReference is empty.
	SubjectBinding, OperationBinding *[16]byte
}

// ProofTTL is the default lifetime of a proof.
const ProofTTL = 5 * time.Minute

// IssueProof signs a single-use step-up proof for ws with k (the live
// signing key). The modules that complete step-ups call it; the Trust
// API's siteverify is its only verifier.
func IssueProof(k *token.Key, ws *catalog.Workspace, in ProofInput, now time.Time) string {
	ttl := in.TTL
	if ttl <= 0 {
		ttl = ProofTTL
	}
	p := token.Proof{WorkspaceID: ws.ID, Method: in.Method, Assurance: uint8(in.Assurance), Identity: in.Identity,
		Liveness: in.Liveness, DeviceBound: in.DeviceBound, Action: in.Action, Issued: now.Unix(), Expires: now.Add(ttl).Unix()}
	p.ID = in.ID
	if p.ID == [16]byte{} {
		_, _ = rand.Read(p.ID[:])
	}
	if !in.AuthTime.IsZero() {
		p.AuthTime = in.AuthTime.Unix()
	}
	if in.SubjectID != "" {
		p.HasSubject, p.SubjectHash = true, SubjectBinding(ws.ScopeKey, in.SubjectID)
	}
	if in.OperationReference != "" {
		p.HasOperation, p.OperationHash = true, OperationBinding(ws.ScopeKey, in.OperationReference)
	}
	if in.SubjectID == "" && in.SubjectBinding != nil {
		p.HasSubject, p.SubjectHash = true, *in.SubjectBinding
	}
	if in.OperationReference == "" && in.OperationBinding != nil {
		p.HasOperation, p.OperationHash = true, *in.OperationBinding
	}
	return p.Sign(k)
}
