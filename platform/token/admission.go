package token

// AdmissionPrefix starts every dependency admission token.
const AdmissionPrefix = "admit_"

// Admission is what an admission token says: one call to a dependency,
// admitted for whom, bound to the keyed hash of its context, until when.
// Its ID is consumed once when the call's outcome is reported.
type Admission struct {
	KeyID        string
	ID           string
	WorkspaceID  string
	AppID        string
	DependencyID string
	Context      [16]byte
	// ExpiresMs is Unix milliseconds.
	ExpiresMs int64
}

// Sign returns the admission's text under k.
func (a *Admission) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 192)}
	w.str(k.ID)
	w.u8(1)
	w.str(a.ID)
	w.str(a.WorkspaceID)
	w.str(a.AppID)
	w.str(a.DependencyID)
	w.fixed(a.Context[:])
	w.varint(a.ExpiresMs)
	return seal(k, AdmissionPrefix, w.b)
}

// DecodeAdmission verifies and parses an admission; expiry and binding
// are the caller's.
func DecodeAdmission(text string, keys Lookup) (Admission, error) {
	r, kid, err := open(text, AdmissionPrefix, keys, nil)
	if err != nil {
		return Admission{}, err
	}
	a := Admission{KeyID: kid}
	if r.u8() != 1 {
		return Admission{}, ErrMalformed
	}
	a.ID = r.str(64)
	a.WorkspaceID = r.str(64)
	a.AppID = r.str(64)
	a.DependencyID = r.str(64)
	r.fixed(a.Context[:])
	a.ExpiresMs = r.varint()
	if !r.done() {
		return Admission{}, ErrMalformed
	}
	return a, nil
}
