package token

// ChallengePrefix starts every widget challenge.
const ChallengePrefix = "ch1_"

// Challenge is what POST /challenge hands the widget: the proof-of-work
// parameters and everything the later redeem must match, signed so the
// server keeps no state between the two calls.
type Challenge struct {
	KeyID    string
	ID       [16]byte
	SiteID   string
	Hostname string
	Action   string
	CData    string
	IPHash   [16]byte
	Mode     Mode
	// Salt, Iterations and Difficulty are the proof-of-work parameters.
	Salt       [16]byte
	Iterations uint32
	Difficulty uint8
	// Risk is the difficulty the risk signals added at issue time (bits),
	// carried to the score at redeem.
	Risk uint8
	// PuzzleSeed is set for visual challenges: the puzzle's answers are
	// derived from it under the signing key and never leave the server.
	HasPuzzle  bool
	PuzzleSeed [16]byte
	// Issued and Expires are Unix seconds.
	Issued, Expires int64
}

const challengeVersion = 1

// Sign returns the challenge's text under k.
func (c *Challenge) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 192)}
	w.str(k.ID)
	w.u8(challengeVersion)
	w.fixed(c.ID[:])
	w.str(c.SiteID)
	w.str(c.Hostname)
	w.str(c.Action)
	w.str(c.CData)
	w.fixed(c.IPHash[:])
	w.u8(byte(c.Mode))
	w.fixed(c.Salt[:])
	w.uvarint(uint64(c.Iterations))
	w.u8(c.Difficulty)
	w.u8(c.Risk)
	w.flag(c.HasPuzzle)
	w.fixed(c.PuzzleSeed[:])
	w.varint(c.Issued)
	w.varint(c.Expires)
	return seal(k, ChallengePrefix, w.b)
}

// DecodeChallenge verifies and parses a challenge; expiry is the caller's.
func DecodeChallenge(text string, keys Lookup) (Challenge, error) {
	r, kid, err := open(text, ChallengePrefix, keys, nil)
	if err != nil {
		return Challenge{}, err
	}
	c := Challenge{KeyID: kid}
	if r.u8() != challengeVersion {
		return Challenge{}, ErrMalformed
	}
	r.fixed(c.ID[:])
	c.SiteID = r.str(MaxSiteID)
	c.Hostname = r.str(MaxHostname)
	c.Action = r.str(MaxAction)
	c.CData = r.str(MaxCData)
	r.fixed(c.IPHash[:])
	c.Mode = Mode(r.u8())
	r.fixed(c.Salt[:])
	iter := r.uvarint()
	c.Difficulty = r.u8()
	c.Risk = r.u8()
	c.HasPuzzle = r.flag()
	r.fixed(c.PuzzleSeed[:])
	c.Issued = r.varint()
	c.Expires = r.varint()
	if !r.done() || iter == 0 || iter > 1<<24 || c.Mode.String() == "" {
		return Challenge{}, ErrMalformed
	}
	c.Iterations = uint32(iter)
	return c, nil
}

// PuzzlePrefix starts a visual puzzle id (the image URL's last segment).
const PuzzlePrefix = "pz1_"

// Puzzle names one visual puzzle image: the seed its answers derive from.
type Puzzle struct {
	KeyID   string
	Seed    [16]byte
	Expires int64
}

// Sign returns the puzzle id under k.
func (p *Puzzle) Sign(k *Key) string {
	w := writer{b: make([]byte, 0, 48)}
	w.str(k.ID)
	w.u8(1)
	w.fixed(p.Seed[:])
	w.varint(p.Expires)
	return seal(k, PuzzlePrefix, w.b)
}

// DecodePuzzle verifies and parses a puzzle id.
func DecodePuzzle(text string, keys Lookup) (Puzzle, error) {
	r, kid, err := open(text, PuzzlePrefix, keys, nil)
	if err != nil {
		return Puzzle{}, err
	}
	p := Puzzle{KeyID: kid}
	if r.u8() != 1 {
		return Puzzle{}, ErrMalformed
	}
	r.fixed(p.Seed[:])
	p.Expires = r.varint()
	if !r.done() {
		return Puzzle{}, ErrMalformed
	}
	return p, nil
}
