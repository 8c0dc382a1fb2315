package actors

// Verification records: the server-side record of one successful human
// verification or trust proof, under its verification id (a UUID handed to
// the customer's backend, which the public API calls assessment_id). The
// trust API, edge pre-clearance and detection feedback look it up; it
// expires with its TTL and is never a verification token itself. Records
// are stored by the Redeem that consumes the token (Redeem.Record), in the
// token's partition, which the verification id names.
//
// In this package "assessment" means only an API Protection assessment
// (apiprotection.go, KindAssessment, the assessment.* ops); this file's
// records are verifications (KindVerification, verification.get).

import (
	"crypto/rand"
	"encoding/hex"
)

// Verification is one successful human verification, kept under its
// verification id.
type Verification struct {
	ID            string
	WorkspaceID   string
	SiteID        string
	Hostname      string
	Action        string
	ChallengeType string
	// Score is in thousandths; Reasons the verify/score bit set.
	Score   uint16
	Reasons uint32
	// VerifiedAt and Expires are Unix ns.
	VerifiedAt int64
	Expires    int64

	// Trust API proofs (risk/trust) only; zero for widget verifications:
	// the step-up method, its assurance rank, the binding bits and the
	// keyed hashes of the subject and operation the proof was bound to.
	Method        string
	Assurance     uint8
	Bindings      uint32
	SubjectHash   [16]byte
	OperationHash [16]byte
}

type verificationTable struct {
	m map[string]Verification
}

func newVerificationTable() *verificationTable {
	return &verificationTable{m: make(map[string]Verification)}
}

func (t *verificationTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(a Verification) bool {
		return a.Expires <= now
	})
}

// GetVerification finds the unexpired verification ID.
//
//actors:wire verification.get GetVerification GetVerificationResult
type GetVerification struct {
	ID string `wire:"op"`

	A     Verification `wire:"result" wirename:"Verification" wireenc:"verificationPB(&$)" wiredec:"verificationOf"`
	Found bool         `wire:"result"`
}

// Apply implements Op.
func (o *GetVerification) Apply(st *State) {
	a, ok := Slot(st, KindVerification, newVerificationTable).m[o.ID]
	o.Found = ok && a.Expires > st.Now
	if o.Found {
		o.A = a
	} else {
		o.A = Verification{}
	}
}

// NewVerificationID returns a random verification id (UUID form) that routes
// to partition p: its last three hex digits carry p, the other 110 random
// bits keep it unguessable. Storing the verification with the token's
// single-use marker needs both in one partition.
func NewVerificationID(p int) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	b[14] = b[14]&0xf0 | byte(p>>8)&0x0f
	b[15] = byte(p)
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// VerificationPartition is the partition a verification id made by
// NewVerificationID routes to; ok is false for anything else.
func VerificationPartition(id string, partitions int) (p int, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return 0, false
	}
	var tail [2]byte
	if _, err := hex.Decode(tail[:], []byte(id[32:36])); err != nil {
		return 0, false
	}
	p = int(tail[0]&0x0f)<<8 | int(tail[1])
	return p, p < partitions
}
