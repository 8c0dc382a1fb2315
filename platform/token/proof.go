package token

// ProofPrefix starts every step-up proof token. A proof is what a
// completed step-up (identity verification, a journey, a device
// authorisation) hands the customer's browser or app, and the customer's
// backend exchanges once at /trust/siteverify. The prefix is under the MAC,
// so a proof never verifies as a response token, a lease or a clearance,
// and none of those verifies as a proof.
const ProofPrefix = "tp1_"

const proofVersion = 1

// Limits of a proof's strings.
const (
	MaxProofMethod    = 64
	MaxProofWorkspace = 64
)

// Proof is a single-use step-up proof. Its bindings are keyed hashes
// (Key.Hash16 with the labels "subject" and "operation") so the token
// never carries the subject id or the operation reference.
type Proof struct {
	KeyID       string
	ID          [16]byte
	WorkspaceID string
	// Method names how the proof was obtained (facial_authorization,
	// document_verification, device_authorization…).
	Method string
	// Assurance is the rank achieved on the ladder of risk/trust.
	Assurance                       uint8
	Identity, Liveness, DeviceBound bool
	HasSubject                      bool
	SubjectHash                     [16]byte
	HasOperation                    bool
	OperationHash                   [16]byte
	Action                          string
	// AuthTime is when the person completed the step-up; Issued and
	// Expires bound the token. Unix seconds.
	AuthTime, Issued, Expires int64
}

// Sign returns the proof's text under k; KeyID is taken from k.
func (p *Proof) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 160)}
	w.str(k.ID)
	w.u8(proofVersion)
	w.fixed(p.ID[:])
	w.str(p.WorkspaceID)
	w.str(p.Method)
	w.u8(p.Assurance)
	w.flag(p.Identity)
	w.flag(p.Liveness)
	w.flag(p.DeviceBound)
	w.flag(p.HasSubject)
	w.fixed(p.SubjectHash[:])
	w.flag(p.HasOperation)
	w.fixed(p.OperationHash[:])
	w.str(p.Action)
	w.varint(p.AuthTime)
	w.varint(p.Issued)
	w.varint(p.Expires)
	return seal(k, ProofPrefix, w.b)
}

// DecodeProof verifies text (prefix, key, MAC, shape) and parses it. It
// checks no time: the caller owns the clock.
func DecodeProof(text string, keys Lookup) (Proof, error) {
	r, kid, err := open(text, ProofPrefix, keys, nil)
	if err != nil {
		return Proof{}, err
	}
	p := Proof{KeyID: kid}
	if r.u8() != proofVersion {
		return Proof{}, ErrMalformed
	}
	r.fixed(p.ID[:])
	p.WorkspaceID = r.str(MaxProofWorkspace)
	p.Method = r.str(MaxProofMethod)
	p.Assurance = r.u8()
	p.Identity = r.flag()
	p.Liveness = r.flag()
	p.DeviceBound = r.flag()
	p.HasSubject = r.flag()
	r.fixed(p.SubjectHash[:])
	p.HasOperation = r.flag()
	r.fixed(p.OperationHash[:])
	p.Action = r.str(MaxAction)
	p.AuthTime = r.varint()
	p.Issued = r.varint()
	p.Expires = r.varint()
	if !r.done() {
		return Proof{}, ErrMalformed
	}
	return p, nil
}
