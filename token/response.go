package token

// Prefixes of response tokens. A sandbox token never verifies as a live
// one and the other way round: the prefix is under the MAC and the two are
// signed with keys of different purposes.
const (
	LivePrefix    = "tv1_"
	SandboxPrefix = "sbx1_"
)

// Mode is the challenge mode that produced a token, as one byte.
type Mode byte

// The challenge modes; their names are the catalog's.
const (
	ModeCheckbox Mode = 1 + iota
	ModeVisual
	ModeScoreBased
	ModeScoreEnforced
)

var modeNames = [...]string{"", "checkbox", "visual", "score_based", "score_enforced"}

// String is the mode's wire name.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return ""
}

// ParseMode returns the Mode called name, or 0.
func ParseMode(name string) Mode {
	for i, n := range modeNames {
		if i > 0 && n == name {
			return Mode(i)
		}
	}
	return 0
}

// Limits of bound strings.
const (
	MaxHostname = 253
	MaxAction   = 64
	MaxCData    = 255
	MaxVariant  = 32
	MaxSiteID   = 64
)

// Response is a response token: what the widget gets after solving a
// challenge and the customer's backend exchanges at /siteverify.
type Response struct {
	KeyID    string
	ID       [16]byte
	SiteID   string
	Hostname string
	Action   string
	CData    string
	// IPHash is the keyed hash of the client IP; HasIP is false for
	// tokens bound to no address (sandbox scenarios).
	IPHash  [16]byte
	HasIP   bool
	Mode    Mode
	Variant string
	// Score is the human score in thousandths, 0 to 1000.
	Score uint16
	// Reasons is the bit set of score reasons (package humanscore).
	Reasons uint32
	// Issued and Expires are Unix seconds.
	Issued, Expires int64
	// Scenario is the sandbox scenario that made the token; 0 for live.
	Scenario byte
}

const responseVersion = 1

// Sign returns the token's text under k with prefix (LivePrefix or
// SandboxPrefix); KeyID is taken from k.
func (t *Response) Sign(k *Key, prefix string) string {
	w := writer{b: make([]byte, 0, 160)}
	w.str(k.ID)
	w.u8(responseVersion)
	w.fixed(t.ID[:])
	w.str(t.SiteID)
	w.str(t.Hostname)
	w.str(t.Action)
	w.str(t.CData)
	w.flag(t.HasIP)
	w.fixed(t.IPHash[:])
	w.u8(byte(t.Mode))
	w.str(t.Variant)
	w.uvarint(uint64(t.Score))
	w.uvarint(uint64(t.Reasons))
	w.varint(t.Issued)
	w.varint(t.Expires)
	w.u8(t.Scenario)
	return seal(k, prefix, w.b)
}

// DecodeResponse verifies text (signature, prefix, shape) and parses it.
// It does not check expiry: a caller answers an expired token differently
// from a forged one. scratch, when large enough, is used for base64
// decoding so a pooled buffer saves an allocation.
func DecodeResponse(text, prefix string, keys Lookup, scratch []byte) (Response, error) {
	r, kid, err := open(text, prefix, keys, scratch)
	if err != nil {
		return Response{}, err
	}
	t := Response{KeyID: kid}
	if r.u8() != responseVersion {
		return Response{}, ErrMalformed
	}
	r.fixed(t.ID[:])
	t.SiteID = r.str(MaxSiteID)
	t.Hostname = r.str(MaxHostname)
	t.Action = r.str(MaxAction)
	t.CData = r.str(MaxCData)
	t.HasIP = r.flag()
	r.fixed(t.IPHash[:])
	t.Mode = Mode(r.u8())
	t.Variant = r.str(MaxVariant)
	score := r.uvarint()
	reasons := r.uvarint()
	t.Issued = r.varint()
	t.Expires = r.varint()
	t.Scenario = r.u8()
	if !r.done() || score > 1000 || reasons > 0xffffffff || t.Mode.String() == "" {
		return Response{}, ErrMalformed
	}
	t.Score, t.Reasons = uint16(score), uint32(reasons)
	return t, nil
}
