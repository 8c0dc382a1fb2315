package token

import "unsafe"

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
	// Reasons is the bit set of score reasons (package verify/score).
	Reasons uint32
	// Issued and Expires are Unix seconds.
	Issued, Expires int64
	// Scenario is the sandbox scenario that made the token; 0 for live.
	Scenario byte
}

// Versions of the response token. Version 2 seals everything but the key
// id and the token id: the score, reasons, bindings and times are
// AES-GCM ciphertext, so a client (or a bot) learns nothing from its own
// token, as with Turnstile's opaque tokens. Version 1 (signed, readable)
// is still accepted so tokens issued by older nodes of a cluster being
// upgraded verify until they expire.
const (
	responseVersionSigned = 1
	responseVersion       = 2
)

// Sign returns the token's text under k with prefix (LivePrefix or
// SandboxPrefix); KeyID is taken from k.
func (t *Response) Sign(k *Key, prefix string) string {
	w := writer{b: make([]byte, 0, 192)}
	w.str(k.ID)
	w.u8(responseVersion)
	w.fixed(t.ID[:])
	head := len(w.b)
	t.appendBody(&w)
	// The token id is random and unique per token: its first 12 bytes are
	// the GCM nonce; the clear header is the additional data.
	body := append([]byte(nil), w.b[head:]...)
	w.b = k.aead.Seal(w.b[:head], t.ID[:12], body, w.b[:head])
	return seal(k, prefix, w.b)
}

func (t *Response) appendBody(w *writer) {
	w.str(t.SiteID)
	w.str(t.Hostname)
	w.str(t.Action)
	w.str(t.CData)
	w.flag(t.HasIP)
	w.fixed(t.IPHash[:])
	w.u8(byte(t.Mode))
	w.str(t.Variant)
	// The verdict has one width whatever it says (see verdictWidth).
	w.uvarintWidth(uint64(t.Score), scoreWidth)
	w.uvarintWidth(uint64(t.Reasons), reasonsWidth)
	w.varint(t.Issued)
	w.varint(t.Expires)
	w.u8(t.Scenario)
}

// The sealed body holds the score and the reason set as varints padded to
// a fixed width: the longest either can take (a score up to 1000 needs 2
// bytes, a 32-bit reason set 5). With minimal varints a scripted client's
// token, whose reasons carry high bits, was longer than a browser's, and
// a bot operator read its verdict from the length. Now every verdict
// seals to one length; what still varies (site id, hostname, action,
// cdata, variant) is what the client itself sent or chose. The padded
// form is an ordinary varint to every reader, so nodes of the earlier
// build verify these tokens and tokens of that build verify here: no
// version change, no trailing padding an earlier reader would refuse.
const (
	scoreWidth   = 2
	reasonsWidth = 5
)

// gcmNonce is the nonce size of the sealing AEAD: the first bytes of the
// token's id.
const gcmNonce = 12

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
	switch r.u8() {
	case responseVersionSigned:
		r.fixed(t.ID[:])
	case responseVersion:
		r.fixed(t.ID[:])
		if r.bad {
			return Response{}, ErrMalformed
		}
		k := keys(kid)
		// The nonce, the additional data and the plaintext go in scratch,
		// free again since open copied the payload into r.s: a stack
		// buffer would escape to the heap through the AEAD interface.
		const aadRoom = 64
		buf := scratch[:cap(scratch)]
		if len(buf) < gcmNonce+aadRoom+len(r.s) {
			buf = make([]byte, gcmNonce+aadRoom+len(r.s))
		}
		nonce := buf[:gcmNonce:gcmNonce]
		copy(nonce, t.ID[:gcmNonce])
		aad := writer{b: buf[gcmNonce : gcmNonce : gcmNonce+aadRoom]}
		aad.str(kid)
		aad.u8(responseVersion)
		aad.fixed(t.ID[:])
		// Open only reads the ciphertext, so viewing the string's bytes is
		// safe; the plaintext lands after the additional data (never
		// overlapping the ciphertext) and becomes one string.
		plain, err := k.aead.Open(buf[gcmNonce+aadRoom:gcmNonce+aadRoom], nonce, unsafe.Slice(unsafe.StringData(r.s), len(r.s)), aad.b)
		if err != nil {
			return Response{}, ErrSignature
		}
		r = reader{s: string(plain)}
	default:
		return Response{}, ErrMalformed
	}
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
