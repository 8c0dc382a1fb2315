package verify

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify/pow"
	"github.com/trustd/trustd/verify/score"
)

// The challenge protocol between the browser widget and the service:
//
//  1. POST /challenge with the public site key: the service checks the
//     Origin against the site's allow-list, picks a proof-of-work
//     difficulty from risk, and answers a signed, expiring challenge that
//     binds site, hostname, action, cdata, client address and the work
//     parameters. It keeps no state.
//  2. The widget finds the first decimal n whose PBKDF2-HMAC-SHA256 under
//     the salt has difficulty leading zero bits (and, for visual mode,
//     reads the puzzle), then POSTs /challenge/redeem with the nonce and
//     bounded signals.
//  3. The service verifies the challenge and the work, consumes the
//     challenge id once (marker actor), scores the signals and issues the
//     response token the form posts as service-response.

// ChallengeInput asks for a challenge.
type ChallengeInput struct {
	Sitekey string `json:"sitekey" required:"true" doc:"The site's public key."`
	Action  string `json:"action" doc:"Action name bound to the token: up to 64 of A-Z a-z 0-9 _ - . /; may be empty."`
	CData   string `json:"cdata" doc:"Customer data bound to the token and echoed by siteverify: up to 255 printable ASCII characters."`
}

// PowParams are the proof-of-work parameters of a challenge.
type PowParams struct {
	Algorithm  string `json:"algorithm" required:"true" enum:"pbkdf2-sha256"`
	Salt       string `json:"salt" required:"true" doc:"base64url without padding; decode it to get the PBKDF2 salt bytes."`
	Iterations int    `json:"iterations" required:"true" doc:"PBKDF2 iteration count."`
	Difficulty int    `json:"difficulty" required:"true" doc:"Leading zero bits required of the 32-byte derived key. Solve: for n = 0, 1, 2, … derive PBKDF2-HMAC-SHA256(password = decimal ASCII of n, salt, iterations, 32 bytes); the first n with enough leading zero bits is the nonce."`
}

// PuzzleView is the visual part of a visual-mode challenge.
type PuzzleView struct {
	ImageURL         string `json:"image_url" required:"true" doc:"Path of the PNG puzzle (relative to the service origin); the answer is the 5 characters it shows."`
	AltTextChallenge string `json:"alt_text_challenge" required:"true" doc:"Accessible text alternative: a question whose answer (digits) is accepted instead; the token's challenge_variant then reads alt_text."`
}

// ChallengeView is the answer of POST /challenge.
type ChallengeView struct {
	Challenge     string      `json:"challenge" required:"true" doc:"Opaque signed challenge; send it back unchanged to /challenge/redeem."`
	ChallengeType string      `json:"challenge_type" required:"true" enum:"checkbox|visual|score_based|score_enforced"`
	Pow           PowParams   `json:"pow" required:"true"`
	ExpiresIn     int         `json:"expires_in" required:"true" doc:"Seconds until the challenge expires."`
	Puzzle        *PuzzleView `json:"puzzle,omitempty" doc:"Present in visual mode only."`
	// Branding is the site's branding profile (colours, name, logo path);
	// in this uncached answer rather than in the cached widget files.
	Branding *branding.View `json:"branding,omitempty" doc:"The site's branding profile, when it names one: the widget applies the colours as CSS custom properties on its own element and shows the logo (alt text: the name)."`
}

// RedeemSignals are the widget's bounded client signals. They lower or
// keep the score; none of them can raise it above what the rules give.
type RedeemSignals struct {
	Webdriver    bool   `json:"webdriver" doc:"navigator.webdriver."`
	Headless     bool   `json:"headless" doc:"Headless-browser traits detected."`
	Interaction  bool   `json:"interaction" doc:"The visitor interacted with the widget."`
	ElapsedMS    int    `json:"elapsed_ms" doc:"Milliseconds from widget render to redeem, 0 to 3600000."`
	PointerMoves int    `json:"pointer_moves" doc:"Pointer moves seen, 0 to 100000."`
	Keypresses   int    `json:"keypresses" doc:"Key presses seen, 0 to 100000."`
	Visible      bool   `json:"visible" doc:"The page was visible while solving."`
	Answer       string `json:"answer" doc:"Visual mode: the characters the puzzle image shows, or the digits answering alt_text_challenge."`
}

// RedeemInput redeems a solved challenge.
type RedeemInput struct {
	Challenge string        `json:"challenge" required:"true"`
	Nonce     string        `json:"nonce" required:"true" doc:"The proof-of-work solution, a decimal integer without leading zeros."`
	Signals   RedeemSignals `json:"signals"`
}

// RedeemView is the answer of POST /challenge/redeem.
type RedeemView struct {
	Success   bool   `json:"success" required:"true"`
	Token     string `json:"token" required:"true" doc:"The response token; post it in the form field service-response."`
	ExpiresIn int    `json:"expires_in" required:"true" doc:"Seconds until the token expires (the site's token_ttl_seconds)."`
}

// Browser is what the transport knows of the widget's caller.
type Browser struct {
	// Host is the lowercase hostname of the Origin header, "" when the
	// origin is missing, "null", malformed or not http(s).
	Host string
	// Addr is the client address in canonical form (CanonicalIP).
	Addr string
	// Headers reports that the request carries what a browser's fetch()
	// sends on its own (see the transport's browserHeaders); it only
	// lifts the score's ceiling by its share (score.Ceiling).
	Headers bool
}

// Challenge issues a signed challenge for the site of in.Sitekey. PuzzleBase
// is the path prefix of a visual puzzle's image URL.
func (m *Module) Challenge(cat *catalog.Catalog, b Browser, in *ChallengeInput, puzzleBase string) (*ChallengeView, error) {
	site := cat.SiteByKey(in.Sitekey)
	if site == nil || site.Sandbox() {
		return nil, ErrInvalidSitekey.With("unknown site key (sandbox keys use POST /sandbox/issue)")
	}
	if b.Host == "" || !site.AllowsHost(b.Host) {
		return nil, ErrInvalidOrigin.With("the Origin header's hostname is not on this site's allow-list")
	}
	if !ValidAction(in.Action) {
		return nil, errcode.Field("action", "up to 64 of A-Z a-z 0-9 _ - . /")
	}
	if !validCData(in.CData) {
		return nil, errcode.Field("cdata", "up to 255 printable ASCII characters")
	}
	k := m.Signer(cat, catalog.KeyLive)
	if k == nil {
		return nil, errNoKey(catalog.KeyLive)
	}
	ch := token.Challenge{ID: RandomID(), SiteID: site.ID, Hostname: b.Host, Action: in.Action, CData: in.CData,
		IPHash: IPHash(k, b.Addr), Mode: token.ParseMode(site.ChallengeMode), Salt: RandomID(),
		Iterations: pow.DefaultIterations}
	if ch.Mode == 0 {
		ch.Mode = token.ModeCheckbox
	}
	bits, risk := score.Difficulty(m.challengeLoad(cat, site, ch.IPHash))
	ch.Difficulty, ch.Risk = uint8(bits), uint8(risk)
	now := m.now().Unix()
	ch.Issued, ch.Expires = now, now+ChallengeTTL
	out := &ChallengeView{ChallengeType: ch.Mode.String(), ExpiresIn: ChallengeTTL,
		Pow: PowParams{Algorithm: pow.Algorithm, Salt: base64.RawURLEncoding.EncodeToString(ch.Salt[:]),
			Iterations: int(ch.Iterations), Difficulty: bits}}
	if ch.Mode == token.ModeVisual {
		ch.HasPuzzle, ch.PuzzleSeed = true, RandomID()
		pz := token.Puzzle{Seed: ch.PuzzleSeed, Expires: ch.Expires}
		out.Puzzle = &PuzzleView{ImageURL: puzzleBase + pz.Sign(k) + ".png",
			AltTextChallenge: newPuzzle(k, ch.PuzzleSeed).question}
	}
	if p, ok := branding.ForSite(cat, site); ok {
		out.Branding = p.View(64)
	}
	out.Challenge = ch.Sign(k)
	return out, nil
}

// challengeLoad gathers what the difficulty rules read: the client's and
// the site's challenge velocity (actors) and the site's feedback tally.
// When velocity cannot be read the client is treated as fast (+2 bits),
// so an outage never makes challenges cheaper.
func (m *Module) challengeLoad(cat *catalog.Catalog, site *catalog.Site, ip [16]byte) score.Load {
	l := score.Load{Floor: site.ChallengeDifficulty}
	ipHit := &actors.Hit{Key: actors.SpaceVelocity + "ip/" + site.ID + "/" + actors.MarkerKey("", ip), Window: velocityWindow}
	siteHit := &actors.Hit{Key: actors.SpaceVelocity + "site/" + site.ID, Window: velocityWindow}
	if err := m.ask.Ask(ipHit.Key, ipHit); err != nil {
		l.IPPerMinute = 11
	} else {
		l.IPPerMinute = ipHit.Rate
	}
	if err := m.ask.Ask(siteHit.Key, siteHit); err == nil {
		l.SitePerMinute, l.SiteBaseline = siteHit.Rate, siteHit.Baseline
	}
	if t := cat.TallyOf(site.ID); t != nil {
		l.FalsePositives = t.FalsePositives
		l.Abuse = t.Abuse + t.FalseNegatives
	}
	return l
}

// Redeem checks a solved challenge and issues the response token.
func (m *Module) Redeem(cat *catalog.Catalog, b Browser, in *RedeemInput) (*RedeemView, error) {
	sig := in.Signals
	switch {
	case sig.ElapsedMS < 0 || sig.ElapsedMS > 3_600_000:
		return nil, errcode.Field("signals.elapsed_ms", "0 to 3600000")
	case sig.PointerMoves < 0 || sig.PointerMoves > 100_000:
		return nil, errcode.Field("signals.pointer_moves", "0 to 100000")
	case sig.Keypresses < 0 || sig.Keypresses > 100_000:
		return nil, errcode.Field("signals.keypresses", "0 to 100000")
	case len(sig.Answer) > 32:
		return nil, errcode.Field("signals.answer", "at most 32 characters")
	}
	ch, err := token.DecodeChallenge(in.Challenge, func(id string) *token.Key { return m.verifier(cat, catalog.KeyLive, id) })
	site := cat.Sites[ch.SiteID]
	if err != nil || site == nil {
		return nil, ErrInvalidChallenge.With("the challenge is not one this service issued")
	}
	if b.Host == "" || b.Host != ch.Hostname || !site.AllowsHost(b.Host) {
		return nil, ErrInvalidOrigin.With("the Origin does not match the challenge's hostname")
	}
	now := m.now()
	if now.Unix() >= ch.Expires {
		return nil, ErrChallengeExpired.With("the challenge expired; request a new one")
	}
	chKey := m.verifier(cat, catalog.KeyLive, ch.KeyID)
	if got := IPHash(chKey, b.Addr); subtle.ConstantTimeCompare(got[:], ch.IPHash[:]) != 1 {
		return nil, ErrInvalidChallenge.With("the challenge was issued to another client address")
	}
	if !pow.Check(in.Nonce, ch.Salt[:], int(ch.Iterations), int(ch.Difficulty)) {
		return nil, ErrInvalidSolution.With("the nonce does not solve the challenge")
	}
	// Consume before checking a visual answer, so a wrong guess burns the
	// puzzle and answers cannot be brute-forced against one challenge.
	used := &actors.Consume{ID: actors.MarkerKey(actors.SpaceChallenge, ch.ID), Expires: ch.Expires*1e9 + markerSkew}
	if err := m.ask.Ask(used.ID, used); err != nil {
		return nil, err
	}
	if !used.First {
		return nil, ErrChallengeUsed.With("the challenge was already redeemed")
	}
	variant := ""
	if ch.HasPuzzle {
		if variant = newPuzzle(chKey, ch.PuzzleSeed).check(sig.Answer); variant == "" {
			return nil, ErrInvalidSolution.With("the puzzle answer is wrong; request a new challenge")
		}
	}
	k := m.Signer(cat, catalog.KeyLive)
	if k == nil {
		return nil, errNoKey(catalog.KeyLive)
	}
	score, reasons := score.Score(score.Signals{
		Webdriver: sig.Webdriver, Headless: sig.Headless, Interaction: sig.Interaction, Visible: sig.Visible,
		ElapsedMS: sig.ElapsedMS, PointerMoves: sig.PointerMoves, Keypresses: sig.Keypresses,
		Invisible: ch.Mode == token.ModeScoreBased || ch.Mode == token.ModeScoreEnforced,
		ServerMS:  now.Sub(time.Unix(ch.Issued, 0)).Milliseconds(), Risk: int(ch.Risk),
		BrowserHeaders: b.Headers,
	}, feedbackOf(cat.TallyOf(site.ID)))
	ttl := site.TokenTTLSeconds
	if ttl <= 0 {
		ttl = 300
	}
	tok := token.Response{ID: RandomID(), SiteID: site.ID, Hostname: ch.Hostname, Action: ch.Action, CData: ch.CData,
		IPHash: IPHash(k, b.Addr), HasIP: true, Mode: ch.Mode, Variant: variant,
		Score: uint16(score*1000 + 0.5), Reasons: uint32(reasons), Issued: now.Unix(), Expires: now.Unix() + int64(ttl)}
	return &RedeemView{Success: true, Token: tok.Sign(k, token.LivePrefix), ExpiresIn: ttl}, nil
}

// PuzzleImage renders the PNG of a visual challenge; id is the signed
// puzzle id of the image URL followed by ".png".
func (m *Module) PuzzleImage(cat *catalog.Catalog, id string) ([]byte, error) {
	id, ok := strings.CutSuffix(id, ".png")
	pz, err := token.DecodePuzzle(id, func(kid string) *token.Key { return m.verifier(cat, catalog.KeyLive, kid) })
	if !ok || err != nil || m.now().Unix() >= pz.Expires {
		return nil, fmt.Errorf("no such puzzle (or it expired): %w", catalog.ErrNotFound)
	}
	img, err := newPuzzle(m.verifier(cat, catalog.KeyLive, pz.KeyID), pz.Seed).png()
	if err != nil {
		return nil, fmt.Errorf("verify: render puzzle: %w", err)
	}
	return img, nil
}
