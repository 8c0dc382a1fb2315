package actors

// Assessments: the server-side record of one successful verification,
// named by an assessment id (a UUID handed to the customer's backend). The
// trust API, edge pre-clearance and detection feedback look it up; it
// expires with its TTL and is never a verification token itself.

// Verification is one successful human verification, kept under its
// assessment id.
type Verification struct {
	ID            string
	WorkspaceID   string
	SiteID        string
	Hostname      string
	Action        string
	ChallengeType string
	// Score is in thousandths; Reasons the humanscore bit set.
	Score   uint16
	Reasons uint32
	// VerifiedAt and Expires are Unix ns.
	VerifiedAt int64
	Expires    int64
}

type verificationTable struct {
	m map[string]Verification
}

func newVerificationTable() *verificationTable {
	return &verificationTable{m: make(map[string]Verification)}
}

func (t *verificationTable) Sweep(now int64, budget int) {
	for id, a := range t.m {
		if budget--; budget == 0 {
			return
		}
		if a.Expires <= now {
			delete(t.m, id)
		}
	}
}

// PutVerification stores A under A.ID until A.Expires.
type PutVerification struct {
	A Verification
}

// Apply implements Op.
func (o *PutVerification) Apply(st *State) {
	Slot(st, KindVerification, newVerificationTable).m[o.A.ID] = o.A
}

// GetVerification finds the unexpired assessment ID.
type GetVerification struct {
	ID string

	A     Verification
	Found bool
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
