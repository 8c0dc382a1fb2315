package token

// Journey session tokens. A journey start hands the customer's backend a
// session token (JourneySessionPrefix), which it presents once at
// /journeys/siteverify, and an endpoint carrying the person's capability
// (JourneyPersonPrefix), with which the person's browser completes the
// method. Both name the same session; the prefix is under the MAC, so a
// capability never verifies as a session token (the browser never holds
// what the backend exchanges) and neither verifies as any other token.
const (
	JourneySessionPrefix = "tjs1_"
	JourneyPersonPrefix  = "tjp1_"
)

// Journey is a journey session reference: the state lives in the catalog
// under ID; the token only names it, for whom and until when.
type Journey struct {
	KeyID       string
	ID          [16]byte
	WorkspaceID string
	// Expires is Unix seconds.
	Expires int64
}

func journeyPrefix(person bool) string {
	if person {
		return JourneyPersonPrefix
	}
	return JourneySessionPrefix
}

// Sign returns the session token (person false) or the person's
// capability (person true) under k.
func (j *Journey) Sign(k *Key, person bool) string {
	w := writer{b: make([]byte, 0, 96)}
	w.str(k.ID)
	w.u8(1)
	w.fixed(j.ID[:])
	w.str(j.WorkspaceID)
	w.varint(j.Expires)
	return seal(k, journeyPrefix(person), w.b)
}

// DecodeJourney verifies and parses a session token or capability; the
// caller checks expiry and the session's state.
func DecodeJourney(text string, person bool, keys Lookup) (Journey, error) {
	r, kid, err := open(text, journeyPrefix(person), keys, nil)
	if err != nil {
		return Journey{}, err
	}
	j := Journey{KeyID: kid}
	if r.u8() != 1 {
		return Journey{}, ErrMalformed
	}
	r.fixed(j.ID[:])
	j.WorkspaceID = r.str(MaxProofWorkspace)
	j.Expires = r.varint()
	if !r.done() {
		return Journey{}, ErrMalformed
	}
	return j, nil
}
