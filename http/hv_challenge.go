package http

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"github.com/valyala/fasthttp"
	"strings"
	"time"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/humanscore"
	"github.com/trustd/trustd/pow"
	"github.com/trustd/trustd/token"
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

func (s *Server) hvRoutes() []Route {
	siteKey := []Auth{AuthSiteKey}
	challengeErrors := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrInvalidSitekey, ErrInvalidOrigin, ErrUnavailable}
	redeemErrors := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrInvalidOrigin, ErrInvalidChallenge, ErrChallengeExpired, ErrChallengeUsed, ErrInvalidSolution, ErrUnavailable}
	rs := []Route{
		{Method: "POST", Path: "/challenge", ID: "createChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: get a signed proof-of-work challenge for a site key. The Origin header's hostname must be on the site's allow-list; CORS answers name only allowed origins.",
			Body:    &ChallengeInput{}, Result: &ChallengeView{}, Errors: challengeErrors, Handle: s.createChallenge},
		{Method: "OPTIONS", Path: "/challenge", ID: "preflightChallenge", Tag: "Human verification",
			Summary: "CORS preflight of POST /challenge: 204 with Access-Control-Allow-* for an origin some site allows, else 403 invalid-origin.",
			Status:  204, Errors: []ErrorCode{ErrInvalidOrigin}, Handle: s.preflight},
		{Method: "POST", Path: "/challenge/redeem", ID: "redeemChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: redeem a solved challenge (nonce, bounded signals, visual answer) for a single-use response token. A challenge redeems once.",
			Body:    &RedeemInput{}, Result: &RedeemView{}, Errors: redeemErrors, Handle: s.redeemChallenge},
		{Method: "OPTIONS", Path: "/challenge/redeem", ID: "preflightRedeem", Tag: "Human verification",
			Summary: "CORS preflight of POST /challenge/redeem.", Status: 204, Errors: []ErrorCode{ErrInvalidOrigin}, Handle: s.preflight},
		{Method: "GET", Path: "/challenge/puzzle/{puzzle}", ID: "getChallengePuzzle", Tag: "Human verification",
			Summary:     "Widget: the PNG image of a visual challenge ({puzzle} is the id from image_url, ending in .png). Expires with its challenge.",
			ContentType: "image/png", Errors: []ErrorCode{ErrNotFound}, Handle: s.puzzleImage},
	}
	rs = append(rs, s.siteverifyRoutes()...)
	rs = append(rs, s.sandboxRoutes()...)
	rs = append(rs, s.edgeRoutes()...)
	rs = append(rs, s.feedbackRoutes()...)
	return rs
}

// preflight answers a CORS preflight for an origin some site allows.
func (s *Server) preflight(c *Call) {
	if c.cors() == "" {
		c.fail(ErrInvalidOrigin, "the Origin is not on any site's allow-list")
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	c.noContent()
}

func (s *Server) createChallenge(c *Call) {
	host := c.cors()
	var in ChallengeInput
	if !c.decode(&in) {
		return
	}
	site := c.cat.SiteByKey(in.Sitekey)
	if site == nil || site.Sandbox() {
		c.fail(ErrInvalidSitekey, "unknown site key (sandbox keys use POST /sandbox/issue)")
		return
	}
	if host == "" || !site.AllowsHost(host) {
		c.fail(ErrInvalidOrigin, "the Origin header's hostname is not on this site's allow-list")
		return
	}
	if !validAction(in.Action) {
		c.failErr(invalid("action", "up to 64 of A-Z a-z 0-9 _ - . /"))
		return
	}
	if !validCData(in.CData) {
		c.failErr(invalid("cdata", "up to 255 printable ASCII characters"))
		return
	}
	k := s.mods.hv.signer(c.cat, catalog.KeyLive)
	if k == nil {
		c.fail(ErrUnavailable, "no signing key yet")
		return
	}
	addr := c.clientAddr()
	ch := token.Challenge{ID: randomID(), SiteID: site.ID, Hostname: host, Action: in.Action, CData: in.CData,
		IPHash: ipHash(k, addr), Mode: token.ParseMode(site.ChallengeMode), Salt: randomID(),
		Iterations: pow.DefaultIterations}
	if ch.Mode == 0 {
		ch.Mode = token.ModeCheckbox
	}
	bits, risk := humanscore.Difficulty(s.challengeLoad(c, site, ch.IPHash))
	ch.Difficulty, ch.Risk = uint8(bits), uint8(risk)
	now := c.Now().Unix()
	ch.Issued, ch.Expires = now, now+challengeTTL
	out := &ChallengeView{ChallengeType: ch.Mode.String(), ExpiresIn: challengeTTL,
		Pow: PowParams{Algorithm: pow.Algorithm, Salt: base64.RawURLEncoding.EncodeToString(ch.Salt[:]),
			Iterations: int(ch.Iterations), Difficulty: bits}}
	if ch.Mode == token.ModeVisual {
		ch.HasPuzzle, ch.PuzzleSeed = true, randomID()
		pz := token.Puzzle{Seed: ch.PuzzleSeed, Expires: ch.Expires}
		out.Puzzle = &PuzzleView{ImageURL: PublicBase + "/challenge/puzzle/" + pz.Sign(k) + ".png",
			AltTextChallenge: newPuzzle(k, ch.PuzzleSeed).question}
	}
	out.Challenge = ch.Sign(k)
	c.ok(out)
}

// challengeLoad gathers what the difficulty rules read: the client's and
// the site's challenge velocity (actors) and the site's feedback tally.
// When velocity cannot be read the client is treated as fast (+2 bits),
// so an outage never makes challenges cheaper.
func (s *Server) challengeLoad(c *Call, site *catalog.Site, ip [16]byte) humanscore.Load {
	l := humanscore.Load{Floor: site.ChallengeDifficulty}
	ipHit := &actors.Hit{Key: "vel/ip/" + site.ID + "/" + markerKey("", ip), Window: velocityWindow}
	siteHit := &actors.Hit{Key: "vel/site/" + site.ID, Window: velocityWindow}
	if err := c.ask(ipHit.Key, ipHit); err != nil {
		l.IPPerMinute = 11
	} else {
		l.IPPerMinute = ipHit.Rate
	}
	if err := c.ask(siteHit.Key, siteHit); err == nil {
		l.SitePerMinute, l.SiteBaseline = siteHit.Rate, siteHit.Baseline
	}
	if t := c.cat.TallyOf(site.ID); t != nil {
		l.FalsePositives = t.FalsePositives
		l.Abuse = t.Abuse + t.FalseNegatives
	}
	return l
}

func (s *Server) redeemChallenge(c *Call) {
	host := c.cors()
	var in RedeemInput
	if !c.decode(&in) {
		return
	}
	sig := in.Signals
	switch {
	case sig.ElapsedMS < 0 || sig.ElapsedMS > 3_600_000:
		c.failErr(invalid("signals.elapsed_ms", "0 to 3600000"))
		return
	case sig.PointerMoves < 0 || sig.PointerMoves > 100_000:
		c.failErr(invalid("signals.pointer_moves", "0 to 100000"))
		return
	case sig.Keypresses < 0 || sig.Keypresses > 100_000:
		c.failErr(invalid("signals.keypresses", "0 to 100000"))
		return
	case len(sig.Answer) > 32:
		c.failErr(invalid("signals.answer", "at most 32 characters"))
		return
	}
	hv := s.mods.hv
	ch, err := token.DecodeChallenge(in.Challenge, func(id string) *token.Key { return hv.verifier(c.cat, catalog.KeyLive, id) })
	site := c.cat.Sites[ch.SiteID]
	if err != nil || site == nil {
		c.fail(ErrInvalidChallenge, "the challenge is not one this service issued")
		return
	}
	if host == "" || host != ch.Hostname || !site.AllowsHost(host) {
		c.fail(ErrInvalidOrigin, "the Origin does not match the challenge's hostname")
		return
	}
	now := c.Now()
	if now.Unix() >= ch.Expires {
		c.fail(ErrChallengeExpired, "the challenge expired; request a new one")
		return
	}
	addr := c.clientAddr()
	chKey := hv.verifier(c.cat, catalog.KeyLive, ch.KeyID)
	if got := ipHash(chKey, addr); subtle.ConstantTimeCompare(got[:], ch.IPHash[:]) != 1 {
		c.fail(ErrInvalidChallenge, "the challenge was issued to another client address")
		return
	}
	if !pow.Check(in.Nonce, ch.Salt[:], int(ch.Iterations), int(ch.Difficulty)) {
		c.fail(ErrInvalidSolution, "the nonce does not solve the challenge")
		return
	}
	// Consume before checking a visual answer, so a wrong guess burns the
	// puzzle and answers cannot be brute-forced against one challenge.
	used := &actors.Consume{ID: markerKey("chl/", ch.ID), Expires: ch.Expires*1e9 + markerSkew}
	if err := c.ask(used.ID, used); err != nil {
		c.failErr(err)
		return
	}
	if !used.First {
		c.fail(ErrChallengeUsed, "the challenge was already redeemed")
		return
	}
	variant := ""
	if ch.HasPuzzle {
		if variant = newPuzzle(chKey, ch.PuzzleSeed).check(sig.Answer); variant == "" {
			c.fail(ErrInvalidSolution, "the puzzle answer is wrong; request a new challenge")
			return
		}
	}
	k := hv.signer(c.cat, catalog.KeyLive)
	if k == nil {
		c.fail(ErrUnavailable, "no signing key")
		return
	}
	score, reasons := humanscore.Score(humanscore.Signals{
		Webdriver: sig.Webdriver, Headless: sig.Headless, Interaction: sig.Interaction, Visible: sig.Visible,
		ElapsedMS: sig.ElapsedMS, PointerMoves: sig.PointerMoves, Keypresses: sig.Keypresses,
		Invisible: ch.Mode == token.ModeScoreBased || ch.Mode == token.ModeScoreEnforced,
		ServerMS:  now.Sub(time.Unix(ch.Issued, 0)).Milliseconds(), Risk: int(ch.Risk),
		BrowserHeaders: browserHeaders(&c.Ctx.Request.Header),
	}, feedbackOf(c.cat.TallyOf(site.ID)))
	ttl := site.TokenTTLSeconds
	if ttl <= 0 {
		ttl = 300
	}
	tok := token.Response{ID: randomID(), SiteID: site.ID, Hostname: ch.Hostname, Action: ch.Action, CData: ch.CData,
		IPHash: ipHash(k, addr), HasIP: true, Mode: ch.Mode, Variant: variant,
		Score: uint16(score*1000 + 0.5), Reasons: uint32(reasons), Issued: now.Unix(), Expires: now.Unix() + int64(ttl)}
	c.ok(&RedeemView{Success: true, Token: tok.Sign(k, token.LivePrefix), ExpiresIn: ttl})
}

// puzzleImage serves the PNG of a visual challenge.
func (s *Server) puzzleImage(c *Call) {
	id, ok := strings.CutSuffix(c.Param("puzzle"), ".png")
	hv := s.mods.hv
	pz, err := token.DecodePuzzle(id, func(kid string) *token.Key { return hv.verifier(c.cat, catalog.KeyLive, kid) })
	if !ok || err != nil || c.Now().Unix() >= pz.Expires {
		c.fail(ErrNotFound, "no such puzzle (or it expired)")
		return
	}
	img, err := newPuzzle(hv.verifier(c.cat, catalog.KeyLive, pz.KeyID), pz.Seed).png()
	if err != nil {
		c.failErr(errors.Join(errors.New("render puzzle"), err))
		return
	}
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("image/png")
	c.Ctx.SetBody(img)
}

// browserHeaders reports whether a redeem request carries what every
// current browser's fetch() sends on its own, which page scripts cannot
// remove and plain HTTP clients rarely imitate: fetch metadata
// (Sec-Fetch-Mode cors, Sec-Fetch-Dest empty, a Sec-Fetch-Site), an
// Accept-Language, a browser User-Agent without an automation marker and,
// from Chromium-based browsers, client hints without one either. A script
// can forge all of it; what it buys is the ceiling's headers share, never
// more (see humanscore.Ceiling).
func browserHeaders(h *fasthttp.RequestHeader) bool {
	ua := h.UserAgent()
	if !bytes.HasPrefix(ua, []byte("Mozilla/5.0 ")) || bytes.Contains(ua, []byte("Headless")) {
		return false
	}
	if string(h.Peek("Sec-Fetch-Mode")) != "cors" || string(h.Peek("Sec-Fetch-Dest")) != "empty" {
		return false
	}
	switch string(h.Peek("Sec-Fetch-Site")) {
	case "cross-site", "same-site", "same-origin":
	default:
		return false
	}
	if len(h.Peek("Accept-Language")) == 0 {
		return false
	}
	if bytes.Contains(ua, []byte("Chrome/")) {
		hints := h.Peek("Sec-Ch-Ua")
		if len(hints) == 0 || bytes.Contains(hints, []byte("Headless")) {
			return false
		}
	}
	return true
}
