package catalog

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"time"
)

// What journeys keep about a subject between sessions: passkey public
// keys (device_authorization) and a sealed face template
// (facial_enrollment, read by facial_authorization). Both are keyed by the
// subject's keyed hash; a subject holds at most MaxPasskeysPerSubject
// passkeys and one template, a workspace at most MaxPasskeysPerWorkspace
// and MaxFaceTemplatesPerWorkspace; templates lapse FaceTemplateRetention
// after enrollment, and both are deleted per subject on request.

// Caps and retention of journey credentials.
const (
	MaxPasskeysPerSubject        = 10
	MaxPasskeysPerWorkspace      = 100_000
	MaxFaceTemplatesPerWorkspace = 100_000
	FaceTemplateRetention        = 365 * 24 * time.Hour
	maxPasskeyBytes              = 1024
	maxFaceTemplateBytes         = 8192
)

// Passkey is one WebAuthn credential: public key material only.
type Passkey struct {
	CredentialID   []byte    `json:"credential_id"`
	PublicKey      []byte    `json:"public_key"`
	AAGUID         []byte    `json:"aaguid"`
	SignCount      uint32    `json:"sign_count"`
	BackupEligible bool      `json:"backup_eligible"`
	BackupState    bool      `json:"backup_state"`
	CreatedAt      time.Time `json:"created_at"`
	LastUsedAt     time.Time `json:"last_used_at"`
}

// WorkspacePasskeys are a workspace's passkeys by subject hash, then
// credential id (hex).
type WorkspacePasskeys struct {
	Count    int                            `json:"count"`
	Subjects map[string]map[string]*Passkey `json:"subjects"`
}

// PasskeysOf returns a subject's passkeys (unordered).
func (c *Catalog) PasskeysOf(workspaceID, subjectHash string) []*Passkey {
	w := c.Passkeys[workspaceID]
	if w == nil {
		return nil
	}
	out := make([]*Passkey, 0, len(w.Subjects[subjectHash]))
	for _, p := range w.Subjects[subjectHash] {
		out = append(out, p)
	}
	return out
}

func (tx *Tx) passkeysOf(workspaceID, subjectHash string) (*WorkspacePasskeys, map[string]*Passkey) {
	all := Writable(tx, "passkeys", &tx.next.Passkeys)
	wkey := "passkeys/" + workspaceID
	if !tx.cloned[wkey] {
		nw := &WorkspacePasskeys{}
		if w := all[workspaceID]; w != nil {
			nw.Count, nw.Subjects = w.Count, maps.Clone(w.Subjects)
		}
		if nw.Subjects == nil {
			nw.Subjects = map[string]map[string]*Passkey{}
		}
		all[workspaceID] = nw
		tx.cloned[wkey] = true
	}
	w := all[workspaceID]
	skey := wkey + "/" + subjectHash
	if !tx.cloned[skey] {
		w.Subjects[subjectHash] = maps.Clone(w.Subjects[subjectHash])
		if w.Subjects[subjectHash] == nil {
			w.Subjects[subjectHash] = map[string]*Passkey{}
		}
		tx.cloned[skey] = true
	}
	return w, w.Subjects[subjectHash]
}

// PutPasskey registers a passkey for a subject, or records a use of one:
// a use must carry a sign count above the stored one unless both are zero
// (authenticators that do not count), so a cloned authenticator's
// replayed counter is refused here, at apply time, cluster-wide.
type PutPasskey struct {
	WorkspaceID string  `json:"workspace_id"`
	SubjectHash string  `json:"subject_hash"`
	Passkey     Passkey `json:"passkey"`
	// Use: the passkey must exist (an assertion), else it must not (a
	// registration).
	Use bool `json:"use"`
}

// ErrPasskeyCounter is a sign count that did not increase.
var ErrPasskeyCounter = fmt.Errorf("%w: the passkey's sign count did not increase", ErrConflict)

func (*PutPasskey) Kind() string { return "passkey.put" }
func (c *PutPasskey) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.WorkspaceID)
	}
	p := c.Passkey
	if c.SubjectHash == "" || len(p.CredentialID) == 0 || len(p.CredentialID) > maxPasskeyBytes || len(p.PublicKey) > maxPasskeyBytes || len(p.AAGUID) > 16 {
		return nil, fmt.Errorf("%w: a passkey needs a subject, a credential id and a public key within limits", ErrConflict)
	}
	id := hex.EncodeToString(p.CredentialID)
	if cur := tx.next.Passkeys[c.WorkspaceID]; cur != nil && !c.Use {
		// A credential id is registered once in a workspace.
		for _, keys := range cur.Subjects {
			if keys[id] != nil {
				return nil, fmt.Errorf("%w: the credential is registered", ErrConflict)
			}
		}
	}
	w, keys := tx.passkeysOf(c.WorkspaceID, c.SubjectHash)
	cur := keys[id]
	switch {
	case c.Use && cur == nil:
		return nil, fmt.Errorf("%w: passkey", ErrNotFound)
	case c.Use:
		if !bytes.Equal(cur.PublicKey, p.PublicKey) {
			return nil, fmt.Errorf("%w: the passkey's public key cannot change", ErrConflict)
		}
		if (p.SignCount != 0 || cur.SignCount != 0) && p.SignCount <= cur.SignCount {
			return nil, ErrPasskeyCounter
		}
		n := *cur
		n.SignCount, n.LastUsedAt, n.BackupState = p.SignCount, p.LastUsedAt, p.BackupState
		keys[id] = &n
		return &n, nil
	}
	if len(keys) >= MaxPasskeysPerSubject {
		return nil, fmt.Errorf("%w: the subject has %d passkeys, the most allowed", ErrConflict, len(keys))
	}
	if w.Count >= MaxPasskeysPerWorkspace {
		return nil, fmt.Errorf("%w: the workspace has %d passkeys, the most allowed", ErrConflict, w.Count)
	}
	w.Count++
	keys[id] = &p
	return &p, nil
}

// FaceTemplate is a subject's enrolled face: the sealed template (the
// only thing authorization compares with), never an image.
type FaceTemplate struct {
	Sealed     []byte    `json:"sealed"`
	EnrolledAt time.Time `json:"enrolled_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// FaceTemplate returns a subject's live template, or nil.
func (c *Catalog) FaceTemplate(workspaceID, subjectHash string, now time.Time) *FaceTemplate {
	t := c.JourneyFaces[workspaceID][subjectHash]
	if t == nil || !now.Before(t.ExpiresAt) {
		return nil
	}
	return t
}

// PutFaceTemplate enrols (or re-enrols) a subject's face.
type PutFaceTemplate struct {
	WorkspaceID string       `json:"workspace_id"`
	SubjectHash string       `json:"subject_hash"`
	Template    FaceTemplate `json:"template"`
}

func (*PutFaceTemplate) Kind() string { return "face_template.put" }
func (c *PutFaceTemplate) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.WorkspaceID)
	}
	if c.SubjectHash == "" || len(c.Template.Sealed) == 0 || len(c.Template.Sealed) > maxFaceTemplateBytes {
		return nil, fmt.Errorf("%w: a face template needs a subject and a sealed template of at most %d bytes", ErrConflict, maxFaceTemplateBytes)
	}
	all := Writable(tx, "journey_faces", &tx.next.JourneyFaces)
	w := maps.Clone(all[c.WorkspaceID])
	if w == nil {
		w = map[string]*FaceTemplate{}
	}
	if _, exists := w[c.SubjectHash]; !exists && len(w) >= MaxFaceTemplatesPerWorkspace {
		for s, t := range w {
			if !c.Template.EnrolledAt.Before(t.ExpiresAt) {
				delete(w, s)
			}
		}
		if len(w) >= MaxFaceTemplatesPerWorkspace {
			return nil, fmt.Errorf("%w: the workspace has %d face templates, the most allowed", ErrConflict, len(w))
		}
	}
	t := c.Template
	w[c.SubjectHash] = &t
	all[c.WorkspaceID] = w
	return &t, nil
}

// DeleteSubjectCredentials deletes a subject's face template and passkeys.
type DeleteSubjectCredentials struct {
	WorkspaceID string `json:"workspace_id"`
	SubjectHash string `json:"subject_hash"`
}

func (*DeleteSubjectCredentials) Kind() string { return "journey_subject.delete" }
func (c *DeleteSubjectCredentials) Apply(tx *Tx) (any, error) {
	n := 0
	if t := tx.next.JourneyFaces[c.WorkspaceID]; t[c.SubjectHash] != nil {
		all := Writable(tx, "journey_faces", &tx.next.JourneyFaces)
		w := maps.Clone(t)
		delete(w, c.SubjectHash)
		all[c.WorkspaceID] = w
		n++
	}
	if w := tx.next.Passkeys[c.WorkspaceID]; w != nil && len(w.Subjects[c.SubjectHash]) > 0 {
		nw, keys := tx.passkeysOf(c.WorkspaceID, c.SubjectHash)
		nw.Count -= len(keys)
		n += len(keys)
		delete(nw.Subjects, c.SubjectHash)
	}
	return n, nil
}
