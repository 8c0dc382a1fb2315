package http

import (
	"bytes"
	"net/netip"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/verify"
)

// Human verification's transport (the decisions are package verify's):
// the widget's challenge protocol here, siteverify and its dialects, the
// sandbox, edge pre-clearance and detection feedback in the other
// verify_*.go files. This file also holds what they share: the Origin
// and CORS, and the client address tokens bind.

func (s *Server) verifyRoutes() []Route {
	siteKey := []Auth{AuthSiteKey}
	challengeErrors := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrInvalidSitekey, ErrInvalidOrigin, ErrUnavailable}
	redeemErrors := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrInvalidOrigin, ErrInvalidChallenge, ErrChallengeExpired, ErrChallengeUsed, ErrInvalidSolution, ErrUnavailable}
	rs := []Route{
		{Method: "POST", Path: "/challenge", ID: "createChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: get a signed proof-of-work challenge for a site key. The Origin header's hostname must be on the site's allow-list; CORS answers name only allowed origins.",
			Body:    &verify.ChallengeInput{}, Result: &verify.ChallengeView{}, Errors: challengeErrors, Handle: s.createChallenge},
		{Method: "OPTIONS", Path: "/challenge", ID: "preflightChallenge", Tag: "Human verification",
			Summary: "CORS preflight of POST /challenge: 204 with Access-Control-Allow-* for an origin some site allows, else 403 invalid-origin.",
			Status:  204, Errors: []ErrorCode{ErrInvalidOrigin}, Handle: s.preflight},
		{Method: "POST", Path: "/challenge/redeem", ID: "redeemChallenge", Tag: "Human verification", Auth: siteKey,
			Summary: "Widget: redeem a solved challenge (nonce, bounded signals, visual answer) for a single-use response token. A challenge redeems once.",
			Body:    &verify.RedeemInput{}, Result: &verify.RedeemView{}, Errors: redeemErrors, Handle: s.redeemChallenge},
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

// originHost returns the request's Origin header and its lowercase
// hostname, or "" when it is missing, "null" or not an http(s) origin.
func (c *Call) originHost() (origin, host string) {
	o := string(c.Ctx.Request.Header.Peek("Origin"))
	if o == "" || o == "null" || len(o) > 300 {
		return "", ""
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.User != nil {
		return "", ""
	}
	return o, strings.ToLower(u.Hostname())
}

// cors answers with Access-Control-Allow-Origin when the request's origin
// is one some site allows, and returns the origin's hostname ("" when the
// origin is absent or foreign). Per-site checks are the module's.
func (c *Call) cors() string {
	origin, host := c.originHost()
	if host == "" || !c.s.mods.verify.AllowedHost(c.cat, host) {
		return ""
	}
	h := &c.Ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Vary", "Origin")
	return host
}

// clientAddr is the caller's address in canonical form (IPv4-mapped IPv6
// unmapped), the value tokens bind.
func (c *Call) clientAddr() string {
	a, ok := netip.AddrFromSlice(c.Ctx.RemoteIP())
	if !ok {
		return ""
	}
	return a.Unmap().String()
}

// browser is what the widget's endpoints tell the module of their caller.
func (c *Call) browser(host string) verify.Browser {
	return verify.Browser{Host: host, Addr: c.clientAddr()}
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
	var in verify.ChallengeInput
	if !c.decode(&in) {
		return
	}
	out, err := s.mods.verify.Challenge(c.cat, c.browser(host), &in, PublicBase+"/challenge/puzzle/")
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(out)
}

func (s *Server) redeemChallenge(c *Call) {
	host := c.cors()
	var in verify.RedeemInput
	if !c.decode(&in) {
		return
	}
	b := c.browser(host)
	b.Headers = browserHeaders(&c.Ctx.Request.Header)
	out, err := s.mods.verify.Redeem(c.cat, b, &in)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(out)
}

// puzzleImage serves the PNG of a visual challenge.
func (s *Server) puzzleImage(c *Call) {
	img, err := s.mods.verify.PuzzleImage(c.cat, c.Param("puzzle"))
	if err != nil {
		c.failErr(err)
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
