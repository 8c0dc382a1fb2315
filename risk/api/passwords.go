package api

import (
	kernel "github.com/trustd/trustd/platform/http"
	"strconv"
	"strings"

	"github.com/trustd/trustd/risk/passwords"
)

// Breached-password ranges (spec 4.3 /account/password/range, plus the
// HIBP-compatible GET that real range clients call): transport only. The
// corpus, padding and the text form live in risk/passwords; see its
// DESIGN.md. Neither operation logs the prefix: with a subject, device or
// address it would narrow down the password.

// PasswordRangeInput is the request of POST /account/password/range.
type PasswordRangeInput struct {
	Secret     string `json:"secret,omitempty" doc:"Legacy: the site's private secret (or use a scoped credential with site.verify as Bearer)."`
	Prefix     string `json:"prefix" required:"true" doc:"The first 5 hexadecimal characters of the password's SHA-1 (or NTLM) hash, either case. Exactly 5: a longer prefix would tell the service more about the password."`
	Mode       string `json:"mode,omitempty" enum:"sha1|ntlm" doc:"Hash of the prefix and suffixes: sha1 (default) or ntlm."`
	AddPadding bool   `json:"add_padding,omitempty" doc:"Pad the answer with random suffixes of count 0 to 800-1,000 entries, as the Add-Padding header of the Pwned Passwords API, so its size does not reveal the prefix."`
}

// PasswordSuffix is one hash of a range.
type PasswordSuffix struct {
	Suffix string `json:"suffix" required:"true" doc:"The remaining hash characters, uppercase (35 for sha1, 27 for ntlm)."`
	Count  uint32 `json:"count" required:"true" doc:"See corpus.count_semantics: times seen in breach data only when it is breach. 0 marks a padding entry."`
}

// PasswordRange is the answer of POST /account/password/range.
type PasswordRange struct {
	Success  bool             `json:"success" required:"true"`
	Prefix   string           `json:"prefix" required:"true" doc:"The prefix asked, uppercase."`
	Mode     string           `json:"mode" required:"true" enum:"sha1|ntlm"`
	Suffixes []PasswordSuffix `json:"suffixes" required:"true" doc:"Every known hash with the prefix, in hash order; a password whose suffix is absent is not in the corpus."`
	Corpus   passwords.Corpus `json:"corpus" required:"true" doc:"Where the hashes and counts come from. The built-in default's counts are rank-derived, not breach counts."`
}

type passwordsAPI struct {
	m *passwords.Module
	// node names this node in the corpus status (the corpus is per node).
	node string
}

// passwordRangeGET is the path of the HIBP-compatible range: a client's
// base URL is {base}/v1/passwords/{sitekey}, and it appends /range/{prefix}.
const passwordRangeGET = "/passwords/{sitekey}/range/{prefix}"

func (p passwordsAPI) routes() []kernel.Route {
	// The routes answer the shared service-unavailable in the module's
	// words, so it goes in before the module's list would add the code's
	// general meaning.
	postErrs := kernel.WithModuleCodes(kernel.WithModuleErrors([]kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		kernel.ErrUnauthorized, kernel.ErrForbidden}, passwords.ErrUnavailable), passwords.Errors)
	getErrs := kernel.WithModuleCodes(kernel.WithModuleErrors([]kernel.ErrorCode{kernel.ErrNotFound}, passwords.ErrUnavailable), passwords.Errors)
	return []kernel.Route{
		{Method: "POST", Path: "/account/password/range", ID: "accountPasswordRange", Tag: "Account Defence",
			Summary: "Breached-password range (k-anonymity): the suffixes and counts of every known hash starting with a 5-character SHA-1 or NTLM prefix. The answer's corpus says what the counts mean.",
			Auth:    []kernel.Auth{kernel.AuthCredential, kernel.AuthSiteSecret}, Body: &PasswordRangeInput{}, Result: &PasswordRange{},
			Errors: postErrs, Handle: p.accountRange},
		{Method: "GET", Path: passwordRangeGET, ID: "passwordRangeCompat", Tag: "Account Defence",
			Summary: "The same range in the Pwned Passwords API's form, for unmodified clients (hibp baseUrl = {base}/v1/passwords/{sitekey}; zxcvbn-ts matcher-pwned url = {base}/v1/passwords/{sitekey}/range/). " +
				"Public: {sitekey} is the site's public key (unknown: 404), {prefix} 5 hex characters of either case (else 400 invalid-prefix); limited per client IP by the ingress limit. " +
				"Answer text/plain: lines SUFFIX:COUNT separated by CRLF, suffixes uppercase (35 characters for sha1, 27 for ntlm). " +
				"Headers X-Service-Password-Counts (breach, rank or presence: what COUNT means; the built-in default is rank, never breach counts) and X-Service-Password-Corpus (embedded or imported). " +
				"CORS: Access-Control-Allow-Origin for the site's own hostnames.",
			ContentType: "text/plain; charset=utf-8", Errors: getErrs, Handle: p.rangeCompat,
			Params: []kernel.Param{
				{Name: "mode", In: "query", Description: "sha1 (default) or ntlm.", Enum: []string{"sha1", "ntlm"}},
				{Name: "Add-Padding", In: "header", Description: "true: pad to 800-1,000 lines with random suffixes of count 0, as the Pwned Passwords API."},
			}},
		{Method: "OPTIONS", Path: passwordRangeGET, ID: "preflightPasswordRange", Tag: "Account Defence",
			Summary: "CORS preflight of the range GET (browsers send one for its Add-Padding header): 204 for an Origin on the site's allow-list, 403 invalid-origin otherwise, 404 for an unknown site key.",
			Status:  204, Errors: []kernel.ErrorCode{kernel.ErrNotFound, kernel.ErrInvalidOrigin}, Handle: p.rangePreflight},
	}
}

func (p passwordsAPI) accountRange(c *kernel.Call) {
	var in PasswordRangeInput
	if !c.Decode(&in) {
		return
	}
	// A sandbox secret works only with sandbox endpoints (spec 5, rule 2).
	if _, _, _, ok := c.AuthServer(in.Secret, "site.verify", false); !ok {
		return
	}
	res, err := p.m.Range(passwords.Request{Prefix: in.Prefix, Mode: in.Mode, Padding: in.AddPadding})
	if err != nil {
		c.FailErr(err)
		return
	}
	out := &PasswordRange{Success: true, Prefix: res.Prefix, Mode: res.Mode.String(), Corpus: res.Corpus,
		Suffixes: make([]PasswordSuffix, len(res.Entries))}
	for i, e := range res.Entries {
		out.Suffixes[i] = PasswordSuffix{Suffix: string(e.Hash.AppendSuffix(nil, res.Mode)), Count: e.Count}
	}
	c.OK(out)
}

// passwordSiteCORS finds the site of the path's key (404 when unknown) and
// allows the request's Origin when it is one of the site's hostnames.
func siteCORS(c *kernel.Call) (allowed, ok bool) {
	site := c.Catalog().SiteByKey(c.Param("sitekey"))
	if site == nil {
		c.Fail(kernel.ErrNotFound, "no site has this site key")
		return false, false
	}
	origin, host := c.OriginHost()
	if host != "" && site.AllowsHost(host) {
		h := &c.Ctx.Response.Header
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Vary", "Origin")
		return true, true
	}
	return false, true
}

func (p passwordsAPI) rangeCompat(c *kernel.Call) {
	if _, ok := siteCORS(c); !ok {
		return
	}
	res, err := p.m.Range(passwords.Request{Prefix: c.Param("prefix"), Mode: string(c.Ctx.QueryArgs().Peek("mode")),
		Padding: strings.EqualFold(string(c.Ctx.Request.Header.Peek("Add-Padding")), "true")})
	if err != nil {
		c.FailErr(err)
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("X-Service-Password-Counts", res.Corpus.CountSemantics)
	corpus := "imported"
	if res.Corpus.Embedded {
		corpus = "embedded"
	}
	h.Set("X-Service-Password-Corpus", corpus)
	h.Set("X-Service-Password-Hashes", strconv.FormatUint(res.Corpus.Hashes, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("text/plain; charset=utf-8")
	// Lines are 36-46 bytes; one allocation for the whole answer.
	c.Ctx.SetBody(passwords.AppendText(make([]byte, 0, len(res.Entries)*(res.Mode.SuffixLen()+12)), res.Mode, res.Entries))
}

func (p passwordsAPI) rangePreflight(c *kernel.Call) {
	allowed, ok := siteCORS(c)
	if !ok {
		return
	}
	if !allowed {
		c.Fail(kernel.ErrInvalidOrigin, "the Origin is not one of the site's hostnames")
		return
	}
	h := &c.Ctx.Response.Header
	h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Add-Padding")
	h.Set("Access-Control-Max-Age", "600")
	c.NoContent()
}
