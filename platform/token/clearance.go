package token

// ClearancePrefix starts every edge pre-clearance.
const ClearancePrefix = "clr1_"

// Clearance lets a reverse proxy admit requests without a new challenge:
// issued after a successful verification, short-lived, reusable until it
// expires, and bound to a site plus any of host, action, path, subject and
// device. Subject and device travel only as keyed hashes.
type Clearance struct {
	KeyID        string
	ID           [16]byte
	SiteID       string
	AssessmentID string
	Host         string
	Action       string
	Path         string
	HasSubject   bool
	SubjectHash  [16]byte
	HasDevice    bool
	DeviceHash   [16]byte
	// Issued and Expires are Unix seconds.
	Issued, Expires int64
}

// MaxPath bounds a bound path.
const MaxPath = 512

// Sign returns the clearance's text under k.
func (c *Clearance) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 192)}
	w.str(k.ID)
	w.u8(1)
	w.fixed(c.ID[:])
	w.str(c.SiteID)
	w.str(c.AssessmentID)
	w.str(c.Host)
	w.str(c.Action)
	w.str(c.Path)
	w.flag(c.HasSubject)
	w.fixed(c.SubjectHash[:])
	w.flag(c.HasDevice)
	w.fixed(c.DeviceHash[:])
	w.varint(c.Issued)
	w.varint(c.Expires)
	return seal(k, ClearancePrefix, w.b)
}

// DecodeClearance verifies and parses a clearance; expiry is the caller's.
func DecodeClearance(text string, keys Lookup) (Clearance, error) {
	r, kid, err := open(text, ClearancePrefix, keys, nil)
	if err != nil {
		return Clearance{}, err
	}
	c := Clearance{KeyID: kid}
	if r.u8() != 1 {
		return Clearance{}, ErrMalformed
	}
	r.fixed(c.ID[:])
	c.SiteID = r.str(MaxSiteID)
	c.AssessmentID = r.str(64)
	c.Host = r.str(MaxHostname)
	c.Action = r.str(MaxAction)
	c.Path = r.str(MaxPath)
	c.HasSubject = r.flag()
	r.fixed(c.SubjectHash[:])
	c.HasDevice = r.flag()
	r.fixed(c.DeviceHash[:])
	c.Issued = r.varint()
	c.Expires = r.varint()
	if !r.done() {
		return Clearance{}, ErrMalformed
	}
	return c, nil
}
