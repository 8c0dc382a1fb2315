package actors

// API Protection state (spec 4.5): request velocity per subject, device
// and route; idempotency keys with the fingerprint of the payload first
// sent under them; kept assessments, which the rate-limit check reads for
// adaptive cost and feedback annotates; and the latest feedback label of a
// subject. Every entry expires, and the Sweeper forgets it then. Keys are
// built by the caller from keyed hashes, never raw identifiers.

// velocityTable holds fixed-window request counters.
type velocityTable struct {
	m map[string]*velocityEntry
}

type velocityEntry struct {
	start, end int64
	count      int64
}

func newVelocityTable() *velocityTable { return &velocityTable{m: make(map[string]*velocityEntry)} }

// Sweep drops counters whose window is over.
func (t *velocityTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(e *velocityEntry) bool {
		return e.end <= now
	})
}

// CountHit counts one request for Key in a window of WindowNs aligned to
// multiples of WindowNs since the Unix epoch, and reports the count so far
// (including this one) and when the window ends. With Peek it counts
// nothing and reports the current window's count (0 when none).
//
//actors:wire velocity.count_hit CountHit CountHitResult
type CountHit struct {
	Key      string `wire:"op"`
	WindowNs int64  `wire:"op"`
	Peek     bool   `wire:"op"`

	Count int64 `wire:"result"`
	EndNs int64 `wire:"result"`
}

// Apply implements Op.
func (o *CountHit) Apply(st *State) {
	if o.WindowNs <= 0 {
		o.Count, o.EndNs = 0, st.Now
		return
	}
	t := Slot(st, KindVelocity, newVelocityTable)
	e := t.m[o.Key]
	start := st.Now - st.Now%o.WindowNs
	if o.Peek {
		o.Count, o.EndNs = 0, start+o.WindowNs
		if e != nil && e.start >= start && e.end > st.Now {
			o.Count, o.EndNs = e.count, e.end
		}
		return
	}
	if e == nil {
		if !st.Room(KindVelocity, len(t.m)) {
			return
		}
		e = &velocityEntry{}
		t.m[o.Key] = e
	}
	if start > e.start || e.end == 0 {
		e.start, e.end, e.count = start, start+o.WindowNs, 0
	}
	e.count++
	o.Count, o.EndNs = e.count, e.end
}

// idempotencyTable remembers the payload fingerprint first seen under an
// idempotency key.
type idempotencyTable struct {
	m map[string]idempotencyEntry
}

type idempotencyEntry struct {
	fingerprint [32]byte
	expires     int64
}

func newIdempotencyTable() *idempotencyTable {
	return &idempotencyTable{m: make(map[string]idempotencyEntry)}
}

// Sweep drops expired keys.
func (t *idempotencyTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(e idempotencyEntry) bool {
		return e.expires <= now
	})
}

// Idempotency outcomes.
const (
	IdempotencyFirst    = iota // the key was new
	IdempotencyReplay          // same key, same fingerprint: a retry
	IdempotencyMismatch        // same key, another payload
)

// ClaimIdempotency records Fingerprint under Key until Expires, unless the
// key is already held, and reports which case it was. The first
// fingerprint stays; a mismatch does not replace it.
//
//actors:wire idempotency.claim ClaimIdempotency ClaimIdempotencyResult
type ClaimIdempotency struct {
	Key         string   `wire:"op"`
	Fingerprint [32]byte `wire:"op" wireenc:"$[:]" wiredec:"fingerprintOf"`
	Expires     int64    `wire:"op"`

	Outcome int `wire:"result"`
}

// Apply implements Op.
func (o *ClaimIdempotency) Apply(st *State) {
	t := Slot(st, KindIdempotency, newIdempotencyTable)
	if e, ok := t.m[o.Key]; ok && e.expires > st.Now {
		if e.fingerprint == o.Fingerprint {
			o.Outcome = IdempotencyReplay
		} else {
			o.Outcome = IdempotencyMismatch
		}
		return
	}
	if _, ok := t.m[o.Key]; !ok && !st.Room(KindIdempotency, len(t.m)) {
		return
	}
	t.m[o.Key] = idempotencyEntry{fingerprint: o.Fingerprint, expires: o.Expires}
	o.Outcome = IdempotencyFirst
}

// Assessment is a kept API Protection assessment.
type Assessment struct {
	ID          string
	WorkspaceID string
	// AppID is the site or mobile app the assessment was made for, or ""
	// when a workspace credential asked.
	AppID      string
	PolicyID   string
	Risk       float64
	CreatedNs  int64
	ExpiresNs  int64
	SubjectKey string // the reputation key of the subject, or ""
	DeviceKey  string // the reputation key of the device, or "" (Account Defence)

	Feedback AssessmentFeedback
}

// AssessmentFeedback is the latest label given to an assessment.
type AssessmentFeedback struct {
	ID     string
	Label  string
	Reason string
	AtNs   int64
}

type assessmentTable struct {
	m map[string]*Assessment
}

func newAssessmentTable() *assessmentTable { return &assessmentTable{m: make(map[string]*Assessment)} }

// Sweep drops expired assessments.
func (t *assessmentTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(a *Assessment) bool {
		return a.ExpiresNs <= now
	})
}

// PutAssessment keeps an assessment until its ExpiresNs.
//
//actors:wire assessment.put Assessment
type PutAssessment struct {
	Assessment Assessment `wire:"op,whole" wireenc:"assessmentPB(&$)" wiredec:"assessmentOf"`
}

// Apply implements Op.
func (o *PutAssessment) Apply(st *State) {
	a := o.Assessment
	t := Slot(st, KindAssessment, newAssessmentTable)
	if _, ok := t.m[a.ID]; !ok && !st.Room(KindAssessment, len(t.m)) {
		return
	}
	t.m[a.ID] = &a
}

// GetAssessment reads a kept assessment by id.
//
//actors:wire assessment.get GetAssessment GetAssessmentResult
type GetAssessment struct {
	ID string `wire:"op"`

	Found      bool       `wire:"result"`
	Assessment Assessment `wire:"result" wireenc:"assessmentPB(&$)" wiredec:"assessmentOf"`
}

// Apply implements Op.
func (o *GetAssessment) Apply(st *State) {
	a := Slot(st, KindAssessment, newAssessmentTable).m[o.ID]
	o.Found = a != nil && a.ExpiresNs > st.Now
	if o.Found {
		o.Assessment = *a
	}
}

// AnnotateAssessment labels an assessment of WorkspaceID. An exact retry
// (same label and reason) within DedupNs of the first answers with the
// first feedback's id and Duplicate set, so a client retry never counts
// twice; another label replaces the previous one.
//
//actors:wire assessment.annotate AnnotateAssessment AnnotateAssessmentResult
type AnnotateAssessment struct {
	ID          string `wire:"op"`
	WorkspaceID string `wire:"op"`
	FeedbackID  string `wire:"op"`
	Label       string `wire:"op"`
	Reason      string `wire:"op"`
	DedupNs     int64  `wire:"op"`

	Found      bool   `wire:"result"`
	Duplicate  bool   `wire:"result"`
	SubjectKey string `wire:"result"`
}

// Apply implements Op.
func (o *AnnotateAssessment) Apply(st *State) {
	a := Slot(st, KindAssessment, newAssessmentTable).m[o.ID]
	o.Found = a != nil && a.ExpiresNs > st.Now && a.WorkspaceID == o.WorkspaceID
	if !o.Found {
		return
	}
	o.SubjectKey = a.SubjectKey
	f := &a.Feedback
	if f.ID != "" && f.Label == o.Label && f.Reason == o.Reason && st.Now-f.AtNs < o.DedupNs {
		o.FeedbackID, o.Duplicate = f.ID, true
		return
	}
	*f = AssessmentFeedback{ID: o.FeedbackID, Label: o.Label, Reason: o.Reason, AtNs: st.Now}
}

// reputationTable holds the latest feedback label given to a subject.
type reputationTable struct {
	m map[string]reputationEntry
}

type reputationEntry struct {
	label   string
	expires int64
}

func newReputationTable() *reputationTable {
	return &reputationTable{m: make(map[string]reputationEntry)}
}

// Sweep drops expired labels.
func (t *reputationTable) Sweep(now int64, budget int) {
	sweep(t.m, budget, func(e reputationEntry) bool {
		return e.expires <= now
	})
}

// LabelSubject records Label for Key until Expires.
//
//actors:wire reputation.label LabelSubject
type LabelSubject struct {
	Key     string `wire:"op"`
	Label   string `wire:"op"`
	Expires int64  `wire:"op"`
}

// Apply implements Op.
func (o *LabelSubject) Apply(st *State) {
	t := Slot(st, KindReputation, newReputationTable)
	if _, ok := t.m[o.Key]; !ok && !st.Room(KindReputation, len(t.m)) {
		return
	}
	t.m[o.Key] = reputationEntry{label: o.Label, expires: o.Expires}
}

// SubjectLabel reads the label of Key, or "".
//
//actors:wire reputation.get SubjectLabel SubjectLabelResult
type SubjectLabel struct {
	Key string `wire:"op"`

	Label string `wire:"result"`
}

// Apply implements Op.
func (o *SubjectLabel) Apply(st *State) {
	e, ok := Slot(st, KindReputation, newReputationTable).m[o.Key]
	o.Label = ""
	if ok && e.expires > st.Now {
		o.Label = e.label
	}
}
