package actors

// Assessments: the server-side record of one successful verification,
// named by an assessment id (a UUID handed to the customer's backend). The
// trust API, edge pre-clearance and detection feedback look it up; it
// expires with its TTL and is never a verification token itself.

// Assessment is one successful verification.
type Assessment struct {
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

type assessmentTable struct {
	m map[string]Assessment
}

func newAssessmentTable() *assessmentTable { return &assessmentTable{m: make(map[string]Assessment)} }

func (t *assessmentTable) Sweep(now int64) {
	for id, a := range t.m {
		if a.Expires <= now {
			delete(t.m, id)
		}
	}
}

// PutAssessment stores A under A.ID until A.Expires.
type PutAssessment struct {
	A Assessment
}

// Apply implements Op.
func (o *PutAssessment) Apply(st *State) {
	Slot(st, KindAssessment, newAssessmentTable).m[o.A.ID] = o.A
}

// GetAssessment finds the unexpired assessment ID.
type GetAssessment struct {
	ID string

	A     Assessment
	Found bool
}

// Apply implements Op.
func (o *GetAssessment) Apply(st *State) {
	a, ok := Slot(st, KindAssessment, newAssessmentTable).m[o.ID]
	o.Found = ok && a.Expires > st.Now
	if o.Found {
		o.A = a
	} else {
		o.A = Assessment{}
	}
}
