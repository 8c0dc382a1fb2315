package api

import (
	"bytes"

	"github.com/valyala/fasthttp"

	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/verify"
)

// The widget's challenge protocol, and what the widget's endpoints share:
// the Origin and CORS, and the client address tokens bind.

func (a *verifyAPI) challengeRoutes() []kernel.Route {
	siteKey := []kernel.Auth{kernel.AuthSiteKey}
	challengeErrors := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		errInvalidSitekey, kernel.ErrInvalidOrigin, kernel.ErrUnavailable}
	redeemErrors := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		kernel.ErrInvalidOrigin, errInvalidChallenge, errChallengeExpired, errChallengeUsed, errInvalidSolution, kernel.ErrUnavailable}
	return []kernel.Route{
		{Method: "POST", Path: "/challenge", ID: "createChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: get a signed proof-of-work challenge for a site key. The Origin header's hostname must be on the site's allow-list; CORS answers name only allowed origins.",
			Body:    &verify.ChallengeInput{}, Result: &verify.ChallengeView{}, Errors: challengeErrors, Handle: a.createChallenge},
		{Method: "OPTIONS", Path: "/challenge", ID: "preflightChallenge", Tag: "Human verification",
			Summary: "CORS preflight of POST /challenge: 204 with Access-Control-Allow-* for an origin some site allows, else 403 invalid-origin.",
			Status:  204, Errors: []kernel.ErrorCode{kernel.ErrInvalidOrigin}, Handle: a.preflight},
		{Method: "POST", Path: "/challenge/redeem", ID: "redeemChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: redeem a solved challenge (nonce, bounded signals, visual answer) for a single-use response token. A challenge redeems once.",
			Body:    &verify.RedeemInput{}, Result: &verify.RedeemView{}, Errors: redeemErrors, Handle: a.redeemChallenge},
		{Method: "OPTIONS", Path: "/challenge/redeem", ID: "preflightRedeem", Tag: "Human verification",
			Summary: "CORS preflight of POST /challenge/redeem.", Status: 204, Errors: []kernel.ErrorCode{kernel.ErrInvalidOrigin}, Handle: a.preflight},
		{Method: "GET", Path: "/challenge/puzzle/{puzzle}", ID: "getChallengePuzzle", Tag: "Human verification",
			Summary:     "Widget: the PNG image of a visual challenge ({puzzle} is the id from image_url, ending in .png). Expires with its challenge.",
			ContentType: "image/png", Errors: []kernel.ErrorCode{kernel.ErrNotFound}, Handle: a.puzzleImage},
	}
}

// The module's codes as the contract lists them on routes.
var (
	errInvalidSitekey    = kernel.ModuleCode(verify.ErrInvalidSitekey)
	errInvalidChallenge  = kernel.ModuleCode(verify.ErrInvalidChallenge)
	errChallengeExpired  = kernel.ModuleCode(verify.ErrChallengeExpired)
	errChallengeUsed     = kernel.ModuleCode(verify.ErrChallengeUsed)
	errInvalidSolution   = kernel.ModuleCode(verify.ErrInvalidSolution)
	errUnknownAssessment = kernel.ModuleCode(verify.ErrUnknownAssessment)
	errClearanceRequired = kernel.ModuleCode(verify.ErrClearanceRequired)
)

// cors answers with Access-Control-Allow-Origin when the request's origin
// is one some site allows, and returns the origin's hostname ("" when the
// origin is absent or foreign). Per-site checks are the module's.
func (a *verifyAPI) cors(c *kernel.Call) string {
	origin, host := c.OriginHost()
	if host == "" || !a.m.AllowedHost(c.Catalog(), host) {
		return ""
	}
	h := &c.Ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Vary", "Origin")
	return host
}

// browser is what the widget's endpoints tell the module of their caller.
func browser(c *kernel.Call, host string) verify.Browser {
	return verify.Browser{Host: host, Addr: c.ClientAddr()}
}

// preflight answers a CORS preflight for an origin some site allows.
func (a *verifyAPI) preflight(c *kernel.Call) {
	if a.cors(c) == "" {
		c.Fail(kernel.ErrInvalidOrigin, "the Origin is not on any site's allow-list")
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	c.NoContent()
}

func (a *verifyAPI) createChallenge(c *kernel.Call) {
	host := a.cors(c)
	var in verify.ChallengeInput
	if !c.Decode(&in) {
		return
	}
	out, err := a.m.Challenge(c.Catalog(), browser(c, host), &in, kernel.PublicBase+"/challenge/puzzle/")
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(out)
}

func (a *verifyAPI) redeemChallenge(c *kernel.Call) {
	host := a.cors(c)
	var in verify.RedeemInput
	if !c.Decode(&in) {
		return
	}
	b := browser(c, host)
	b.Headers = browserHeaders(&c.Ctx.Request.Header)
	out, err := a.m.Redeem(c.Catalog(), b, &in)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(out)
}

// puzzleImage serves the PNG of a visual challenge.
func (a *verifyAPI) puzzleImage(c *kernel.Call) {
	img, err := a.m.PuzzleImage(c.Catalog(), c.Param("puzzle"))
	if err != nil {
		c.FailErr(err)
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
// more (see score.Ceiling).
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
