package http

import (
	"bytes"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/verify"
)

// POST /siteverify, its drop-in dialects and the sandbox's: transport
// only. The body is read without reflection (siteverify_form.go), the secret
// authenticated here, the verdict is verify.Siteverify's and its answer is
// appended by verify into a pooled buffer, because this runs on every
// protected form post. Request errors keep the spec's {success:false,error}
// shape natively and the dialect's error-codes shape in the dialects.

// Spec-shaped request errors of the siteverify operations.
var (
	svMissingResponse = ErrorCode{"missing-input-response", 400, "No response token supplied."}
	siteverifyErrors  = []ErrorCode{ErrMissingSecret, ErrInvalidSecret, svMissingResponse, ErrBadRequest, ErrRateLimited, ErrUnavailable}
)

// svBuf is the pooled scratch of one siteverify.
type svBuf struct {
	obj     flatObject // a JSON body's members
	scratch []byte     // unescaped form values
	tok     []byte     // the decoded token's strings
	out     []byte     // the answer
}

func (s *Server) siteverifyRoutes() []Route {
	sec := []Auth{AuthBodySecret}
	compatErrs := []ErrorCode{ErrRateLimited}
	return []Route{
		{Method: "POST", Path: "/siteverify", ID: "siteverify", Tag: "Human verification", Auth: sec, Form: true, SpecErrors: true,
			Summary: "Exchange a response token, once: section 2.2 result with HTTP 200 for every processed token (success, policy failures, duplicates); request errors use {success:false,error}.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.SiteverifyResult{}, Errors: siteverifyErrors, Handle: s.siteverify},
		{Method: "POST", Path: "/turnstile/v0/siteverify", ID: "siteverifyTurnstile", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Cloudflare Turnstile dialect: form, JSON or multipart; HTTP 200 for every outcome including request errors (error-codes), RFC 3339 challenge_ts, cdata echoed when bound. 429 keeps the dialect's body.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.TurnstileResult{}, Errors: compatErrs, Handle: s.siteverifyCompat(verify.Turnstile)},
		{Method: "POST", Path: "/recaptcha/api/siteverify", ID: "siteverifyRecaptcha", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Google reCAPTCHA dialect: form, JSON, multipart or query parameters; HTTP 200 for every outcome; no error-codes on success; score and action only for score modes.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.RecaptchaResult{}, Errors: compatErrs, Handle: s.siteverifyCompat(verify.Recaptcha)},
	}
}

func (s *Server) sandboxRoutes() []Route {
	issueErrors := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrInvalidSitekey, ErrUnavailable}
	return []Route{
		{Method: "GET", Path: "/sandbox/scenarios", ID: "listSandboxScenarios", Tag: "Sandbox",
			Summary: "The sandbox scenarios and what /sandbox/siteverify answers for each.",
			Result:  &verify.SandboxScenarioList{}, Handle: func(c *Call) { c.ok(verify.Scenarios()) }},
		{Method: "POST", Path: "/sandbox/issue", ID: "issueSandboxToken", Tag: "Sandbox", Auth: []Auth{AuthSiteKey},
			Summary: "Mint a sandbox response token for a scenario with a sandbox site key (no browser, no challenge).",
			Body:    &verify.SandboxIssueInput{}, Result: &verify.SandboxIssueView{}, Errors: issueErrors, Handle: s.sandboxIssue},
		{Method: "POST", Path: "/sandbox/siteverify", ID: "sandboxSiteverify", Tag: "Sandbox", Auth: []Auth{AuthBodySecret}, Form: true, SpecErrors: true,
			Summary: "Verify a sandbox token with a sandbox secret: the production verifier and the section 2.2 shape, in the sandbox's own key space.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.SiteverifyResult{}, Errors: siteverifyErrors, Handle: s.sandboxSiteverify},
	}
}

func (s *Server) sandboxIssue(c *Call) {
	var in verify.SandboxIssueInput
	if !c.decode(&in) {
		return
	}
	out, err := s.mods.verify.SandboxIssue(c.cat, &in)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(out)
}

// readVerifyRequest parses the body by its Content-Type.
func (c *Call) readVerifyRequest(b *svBuf, q *svRequest) bool {
	body := c.Ctx.Request.Body()
	if cap(b.scratch) < len(body) {
		b.scratch = make([]byte, 0, len(body)+64)
	}
	b.scratch = b.scratch[:0]
	ct := c.Ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	switch {
	case len(ct) == 0 || bytes.EqualFold(ct, []byte("application/x-www-form-urlencoded")):
		return parseForm(body, &b.scratch, q)
	case bytes.EqualFold(ct, []byte("application/json")):
		return parseJSONBody(&b.obj, body, q)
	case bytes.EqualFold(ct, []byte("multipart/form-data")):
		form, err := c.Ctx.MultipartForm()
		if err != nil {
			return false
		}
		for name, vals := range form.Value {
			if len(vals) != 1 || !q.set([]byte(name), []byte(vals[0])) {
				return false
			}
		}
		return true
	}
	return false
}

// checkSecret authenticates a siteverify request; nil means the
// spec-shaped error is written. Sandbox secrets work only at sandbox
// endpoints and the others only at production ones.
func (c *Call) checkSecret(q *svRequest, sandbox bool, fail func(ErrorCode)) *catalog.Site {
	if len(q.secret) == 0 {
		fail(ErrMissingSecret)
		return nil
	}
	if len(q.secret) > 128 {
		fail(ErrInvalidSecret)
		return nil
	}
	site := c.cat.SiteBySecretAt(bstr(q.secret), c.Now)
	if site == nil || site.Sandbox() != sandbox {
		fail(ErrInvalidSecret)
		return nil
	}
	return site
}

// tokenScratch sizes b.tok for verify.Siteverify.
func (b *svBuf) tokenScratch() []byte {
	if cap(b.tok) < 512 {
		b.tok = make([]byte, 512)
	}
	return b.tok
}

func (s *Server) siteverify(c *Call)        { s.verifyResponse(c, false) }
func (s *Server) sandboxSiteverify(c *Call) { s.verifyResponse(c, true) }

// verifyResponse answers /siteverify, or with sandbox /sandbox/siteverify:
// the same verdict against the live or the sandbox key space.
func (s *Server) verifyResponse(c *Call, sandbox bool) {
	b := s.svBufs.Get().(*svBuf)
	defer s.svBufs.Put(b)
	var q svRequest
	fail := func(e ErrorCode) { c.specError(e.Status, e.Code) }
	if !c.readVerifyRequest(b, &q) || !verify.ValidIdempotencyKey(q.IdempotencyKey) {
		fail(ErrBadRequest)
		return
	}
	hv := s.mods.verify
	if hv.IsTestSecret(q.secret, sandbox) {
		if len(q.Response) == 0 {
			fail(svMissingResponse)
			return
		}
		c.ok(hv.TestSecretResult(q.secret, string(q.Action)))
		return
	}
	site := c.checkSecret(&q, sandbox, fail)
	if site == nil || !c.admitCredential(site.ID, site.WorkspaceID) {
		return
	}
	if len(q.Response) == 0 {
		fail(svMissingResponse)
		return
	}
	q.Sandbox = sandbox
	v, err := hv.Siteverify(c.cat, site, &q.Request, b.tokenScratch())
	if err != nil {
		fail(ErrUnavailable)
		return
	}
	c.decidedVerdict(&v)
	b.out = verify.AppendResult(b.out[:0], &v)
	c.rawJSON(200, b.out)
}

// siteverifyCompat answers a drop-in dialect's siteverify: every outcome,
// request errors included, is HTTP 200 in the dialect's shape (429 keeps
// its status and headers).
func (s *Server) siteverifyCompat(d verify.Dialect) func(*Call) {
	return func(c *Call) {
		b := s.svBufs.Get().(*svBuf)
		defer s.svBufs.Put(b)
		fail := func(code string) {
			b.out = verify.AppendDialectError(b.out[:0], code)
			c.rawJSON(200, b.out)
		}
		var q svRequest
		if !c.readVerifyRequest(b, &q) || !verify.ValidIdempotencyKey(q.IdempotencyKey) {
			fail(ErrBadRequest.Code)
			return
		}
		// Some libraries still send the fields as query parameters.
		args := c.Ctx.QueryArgs()
		for _, f := range [...]string{"secret", "response", "remoteip", "action", "idempotency_key"} {
			if v := args.Peek(f); len(v) > 0 {
				q.set([]byte(f), v)
			}
		}
		if !verify.ValidIdempotencyKey(q.IdempotencyKey) {
			fail(ErrBadRequest.Code)
			return
		}
		hv := s.mods.verify
		if d == verify.Turnstile && hv.IsTestSecret(q.secret, false) {
			c.ok(hv.TestSecretTurnstile(q.secret, string(q.Action)))
			return
		}
		site := c.checkSecret(&q, false, func(e ErrorCode) { fail(e.Code) })
		if site == nil {
			return
		}
		if !c.admitCredential(site.ID, site.WorkspaceID) {
			// Keep the 429 status and its headers, in the dialect's body.
			status := c.Ctx.Response.StatusCode()
			fail(ErrRateLimited.Code)
			c.Ctx.SetStatusCode(status)
			return
		}
		if len(q.Response) == 0 {
			fail(svMissingResponse.Code)
			return
		}
		q.RemoteIPSignal = true
		v, err := hv.Siteverify(c.cat, site, &q.Request, b.tokenScratch())
		if err != nil {
			fail(ErrInternal.Code)
			return
		}
		c.decidedVerdict(&v)
		b.out = verify.AppendDialect(b.out[:0], d, &v)
		c.rawJSON(200, b.out)
	}
}

// decidedVerdict records a siteverify's outcome for the summary.
func (c *Call) decidedVerdict(v *verify.Verdict) {
	if v.Success() {
		c.outcome = outcomeSuccess
	} else {
		c.outcome = outcomeFailure
	}
}
