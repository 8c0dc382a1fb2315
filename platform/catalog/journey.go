package catalog

import (
	"fmt"
	"maps"
	"time"
)

// Journeys (spec 2.7, 4.8): a workspace defines named journeys (which
// step-up method, which assurance, which consent), and each start of one
// opens a short-lived session. Definitions and sessions live here, in
// Raft: a session is high-value and low-rate (a person completes it), its
// transitions must be compare-and-set across the cluster, and the
// research note (D1) asks for journey sessions and proofs to go through
// Raft rather than partitioned markers. Caps keep a tenant from growing
// the catalog: MaxJourneysPerWorkspace definitions, and at most
// MaxJourneySessionsPerWorkspace session records, each pruned
// JourneySessionRetention after it expired. The logic of the states is in
// journeys/; these commands only store, cap and compare versions.

// Caps and retention of journeys.
const (
	MaxJourneysPerWorkspace        = 64
	MaxJourneySessionsPerWorkspace = 20_000
	JourneySessionRetention        = 10 * time.Minute
)

// ErrJourneySessionsFull is returned when a workspace holds as many live
// journey sessions as allowed.
var ErrJourneySessionsFull = fmt.Errorf("%w: the workspace has the most live journey sessions allowed", ErrConflict)

// JourneyConsent is what a journey asks the person to accept.
type JourneyConsent struct {
	Required bool   `json:"required"`
	Version  string `json:"version"`
}

// JourneyRequirements are what a journey's proof establishes.
type JourneyRequirements struct {
	Identity         bool `json:"identity"`
	Liveness         bool `json:"liveness"`
	Authorization    bool `json:"authorization"`
	OperationBinding bool `json:"operation_binding"`
}

// JourneyEscalation turns the method into a stronger one when the risk of
// the subject (the service's own, raised by the caller's hints) is high
// or medium. Empty methods leave the method as defined.
type JourneyEscalation struct {
	Enabled          bool   `json:"enabled"`
	HighRiskMethod   string `json:"high_risk_method"`
	MediumRiskMethod string `json:"medium_risk_method"`
	// ReviewOnHighRisk opens the journey escalated (assisted review) for a
	// high-risk start instead of only changing the method.
	ReviewOnHighRisk bool `json:"review_on_high_risk"`
}

// Journey is one journey definition of a workspace; Key is unique in it.
type Journey struct {
	WorkspaceID            string              `json:"workspace_id"`
	Key                    string              `json:"key"`
	Name                   string              `json:"name"`
	Method                 string              `json:"method"`
	RequestedAssurance     string              `json:"requested_assurance"`
	Consent                JourneyConsent      `json:"consent"`
	PolicyVersion          int                 `json:"policy_version"`
	Requirements           JourneyRequirements `json:"requirements"`
	SessionLifetimeSeconds int                 `json:"session_lifetime_seconds"`
	Escalation             JourneyEscalation   `json:"escalation"`
	CreatedAt              time.Time           `json:"created_at"`
	UpdatedAt              time.Time           `json:"updated_at"`
}

func journeyID(workspaceID, key string) string { return workspaceID + "/" + key }

// Journey returns a workspace's journey called key, or nil.
func (c *Catalog) Journey(workspaceID, key string) *Journey {
	return c.Journeys[journeyID(workspaceID, key)]
}

// JourneysOf lists a workspace's journeys (unordered).
func (c *Catalog) JourneysOf(workspaceID string) []*Journey {
	var out []*Journey
	for _, j := range c.Journeys {
		if j.WorkspaceID == workspaceID {
			out = append(out, j)
		}
	}
	return out
}

// PutJourney creates a journey or replaces the one of the same key. The
// policy version is the stored one plus one, set here so every change,
// whoever proposes it, increments it.
type PutJourney struct {
	Journey Journey `json:"journey"`
}

func (*PutJourney) Kind() string { return "journey.put" }
func (c *PutJourney) Apply(tx *Tx) (any, error) {
	j := c.Journey
	if _, ok := tx.next.Workspaces[j.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, j.WorkspaceID)
	}
	if j.Key == "" || len(j.Key) > 64 || len(j.Name) > 128 || len(j.Consent.Version) > 64 {
		return nil, fmt.Errorf("%w: journey fields over their limits", ErrConflict)
	}
	id := journeyID(j.WorkspaceID, j.Key)
	cur, exists := tx.next.Journeys[id]
	if !exists {
		n := 0
		for _, o := range tx.next.Journeys {
			if o.WorkspaceID == j.WorkspaceID {
				n++
			}
		}
		if n >= MaxJourneysPerWorkspace {
			return nil, fmt.Errorf("%w: the workspace has %d journeys, the most allowed", ErrConflict, n)
		}
		j.PolicyVersion = 1
		j.CreatedAt = j.UpdatedAt
	} else {
		j.PolicyVersion = cur.PolicyVersion + 1
		j.CreatedAt = cur.CreatedAt
	}
	Writable(tx, "journeys", &tx.next.Journeys)[id] = &j
	return &j, nil
}

// DeleteJourney removes a journey definition (its open sessions run out).
type DeleteJourney struct {
	WorkspaceID string `json:"workspace_id"`
	Key         string `json:"key"`
}

func (*DeleteJourney) Kind() string { return "journey.delete" }
func (c *DeleteJourney) Apply(tx *Tx) (any, error) {
	id := journeyID(c.WorkspaceID, c.Key)
	if _, ok := tx.next.Journeys[id]; !ok {
		return nil, fmt.Errorf("%w: journey %s", ErrNotFound, c.Key)
	}
	delete(Writable(tx, "journeys", &tx.next.Journeys), id)
	return nil, nil
}

// JourneySession is one started journey. Subject and operation are keyed
// hashes (hex) under the workspace's ScopeKey; Version counts transitions
// and is what TransitionJourneySession compares.
type JourneySession struct {
	ID                 string              `json:"session_id"`
	WorkspaceID        string              `json:"workspace_id"`
	AppID              string              `json:"app_id"`
	Channel            string              `json:"channel"`
	JourneyKey         string              `json:"journey_key"`
	PolicyVersion      int                 `json:"policy_version"`
	Method             string              `json:"method"`
	DefinedMethod      string              `json:"defined_method"`
	RequestedAssurance string              `json:"requested_assurance"`
	Requirements       JourneyRequirements `json:"requirements"`
	Consent            JourneyConsent      `json:"consent"`
	SubjectHash        string              `json:"subject_hash"`
	OperationHash      string              `json:"operation_hash"`
	Action             string              `json:"action"`
	RiskLevel          string              `json:"risk_level"`
	Status             string              `json:"status"`
	Version            int                 `json:"version"`
	Attempts           int                 `json:"attempts"`
	FailedAttempts     int                 `json:"failed_attempts"`
	// ProofID is the hex id of the proof of the last successful attempt;
	// ProofAssurance and the flags are what it achieved.
	ProofID        string `json:"proof_id,omitempty"`
	ProofAssurance string `json:"proof_assurance,omitempty"`
	ProofLiveness  bool   `json:"proof_liveness,omitempty"`
	ProofIdentity  bool   `json:"proof_identity,omitempty"`
	LastError      string `json:"last_error,omitempty"`
	// MethodState is the method's state of the open attempt (a liveness
	// challenge, a WebAuthn ceremony), opaque here, at most 4 KiB.
	MethodState   []byte    `json:"method_state,omitempty"`
	CaseReference string    `json:"case_reference,omitempty"`
	Consumed      bool      `json:"consumed"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// WorkspaceJourneySessions are one workspace's sessions by id.
type WorkspaceJourneySessions struct {
	Sessions map[string]*JourneySession `json:"sessions"`
}

// JourneySession returns a workspace's session, or nil.
func (c *Catalog) JourneySession(workspaceID, id string) *JourneySession {
	if w := c.JourneySessions[workspaceID]; w != nil {
		return w.Sessions[id]
	}
	return nil
}

// JourneySessionCount is how many session records a workspace holds.
func (c *Catalog) JourneySessionCount(workspaceID string) int {
	if w := c.JourneySessions[workspaceID]; w != nil {
		return len(w.Sessions)
	}
	return 0
}

func (tx *Tx) journeySessionsOf(workspaceID string) *WorkspaceJourneySessions {
	all := Writable(tx, "journey_sessions", &tx.next.JourneySessions)
	key := "journey_sessions/" + workspaceID
	if !tx.cloned[key] {
		nw := &WorkspaceJourneySessions{}
		if w := all[workspaceID]; w != nil {
			nw.Sessions = maps.Clone(w.Sessions)
		}
		if nw.Sessions == nil {
			nw.Sessions = map[string]*JourneySession{}
		}
		all[workspaceID] = nw
		tx.cloned[key] = true
	}
	return all[workspaceID]
}

// CreateJourneySession stores a new session, pruning the workspace's
// sessions that expired more than JourneySessionRetention before At.
type CreateJourneySession struct {
	Session JourneySession `json:"session"`
	At      time.Time      `json:"at"`
}

func (*CreateJourneySession) Kind() string { return "journey_session.create" }
func (c *CreateJourneySession) Apply(tx *Tx) (any, error) {
	s := c.Session
	if _, ok := tx.next.Workspaces[s.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, s.WorkspaceID)
	}
	if s.ID == "" || len(s.ID) > 64 {
		return nil, fmt.Errorf("%w: a journey session needs an id", ErrConflict)
	}
	w := tx.journeySessionsOf(s.WorkspaceID)
	if _, dup := w.Sessions[s.ID]; dup {
		return nil, fmt.Errorf("%w: journey session %s exists", ErrConflict, s.ID)
	}
	if len(w.Sessions) >= MaxJourneySessionsPerWorkspace/2 {
		cut := c.At.Add(-JourneySessionRetention)
		for id, o := range w.Sessions {
			if o.ExpiresAt.Before(cut) {
				delete(w.Sessions, id)
			}
		}
	}
	if len(w.Sessions) >= MaxJourneySessionsPerWorkspace {
		return nil, ErrJourneySessionsFull
	}
	s.Version = 1
	w.Sessions[s.ID] = &s
	return &s, nil
}

// TransitionJourneySession replaces a session with Next when the stored
// one is still at Next.Version-1 (compare-and-set); otherwise ErrConflict,
// and the proposer re-reads and decides again.
type TransitionJourneySession struct {
	Next JourneySession `json:"next"`
}

// ErrJourneySessionChanged is the compare-and-set failure.
var ErrJourneySessionChanged = fmt.Errorf("%w: the journey session changed", ErrConflict)

func (*TransitionJourneySession) Kind() string { return "journey_session.transition" }
func (c *TransitionJourneySession) Apply(tx *Tx) (any, error) {
	n := c.Next
	cur := tx.next.JourneySession(n.WorkspaceID, n.ID)
	if cur == nil {
		return nil, fmt.Errorf("%w: journey session %s", ErrNotFound, n.ID)
	}
	if len(n.MethodState) > 4096 {
		return nil, fmt.Errorf("%w: journey method state over 4 KiB", ErrConflict)
	}
	if cur.Version != n.Version-1 || cur.SubjectHash != n.SubjectHash || cur.JourneyKey != n.JourneyKey {
		return nil, ErrJourneySessionChanged
	}
	tx.journeySessionsOf(n.WorkspaceID).Sessions[n.ID] = &n
	return &n, nil
}

func deleteJourneysOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "journeys", &tx.next.Journeys, workspaceID, func(j *Journey) string { return j.WorkspaceID })
	if _, ok := tx.next.JourneySessions[workspaceID]; ok {
		delete(Writable(tx, "journey_sessions", &tx.next.JourneySessions), workspaceID)
	}
	if _, ok := tx.next.JourneyFaces[workspaceID]; ok {
		delete(Writable(tx, "journey_faces", &tx.next.JourneyFaces), workspaceID)
	}
	if _, ok := tx.next.Passkeys[workspaceID]; ok {
		delete(Writable(tx, "passkeys", &tx.next.Passkeys), workspaceID)
	}
}

// ReadJourneySession changes nothing: applied through Raft, it returns the
// session as of its place in the log, so a node whose catalog lags (the
// person completed the method through another node a moment ago) reads
// what the leader committed. journeys/ uses it only when the local copy
// cannot decide.
type ReadJourneySession struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"session_id"`
}

func (*ReadJourneySession) Kind() string { return "journey_session.read" }
func (c *ReadJourneySession) Apply(tx *Tx) (any, error) {
	s := tx.next.JourneySession(c.WorkspaceID, c.ID)
	if s == nil {
		return nil, fmt.Errorf("%w: journey session %s", ErrNotFound, c.ID)
	}
	cp := *s
	return &cp, nil
}
