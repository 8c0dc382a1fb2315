package api

import (
	"bytes"
	"unsafe"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"github.com/trustd/trustd/verify"
)

// POST /siteverify, its drop-in dialects and the sandbox's: transport
// only. The body is read without reflection (form.go), the secret
// authenticated here, the verdict is verify.Siteverify's and its answer is
// appended by verify into a pooled buffer, because this runs on every
// protected form post. Request errors keep the spec's {success:false,error}
// shape natively and the dialect's error-codes shape in the dialects.

// Spec-shaped request errors of the siteverify operations.
var (
	svMissingResponse = kernel.ErrorCode{Code: "missing-input-response", Status: 400, Meaning: "No response token supplied."}
	siteverifyErrors  = []kernel.ErrorCode{kernel.ErrMissingSecret, kernel.ErrInvalidSecret, svMissingResponse, kernel.ErrBadRequest, kernel.ErrRateLimited, kernel.ErrUnavailable}
)

// svBuf is the pooled scratch of one siteverify.
type svBuf struct {
	obj     jsonstrict.Flat // a JSON body's members
	scratch []byte          // unescaped form values
	tok     []byte          // the decoded token's strings
	out     []byte          // the answer
}

func (a *verifyAPI) siteverifyRoutes() []kernel.Route {
	sec := []kernel.Auth{kernel.AuthBodySecret}
	compatErrs := []kernel.ErrorCode{kernel.ErrRateLimited}
	return []kernel.Route{
		{Method: "POST", Path: "/siteverify", ID: "siteverify", Tag: "Human verification", Auth: sec, Form: true, SpecErrors: true,
			Summary: "Exchange a response token, once: section 2.2 result with HTTP 200 for every processed token (success, policy failures, duplicates); request errors use {success:false,error}.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.SiteverifyResult{}, Errors: siteverifyErrors, Handle: a.siteverify},
		{Method: "POST", Path: "/turnstile/v0/siteverify", ID: "siteverifyTurnstile", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Cloudflare Turnstile dialect: form, JSON or multipart; HTTP 200 for every outcome including request errors (error-codes), RFC 3339 challenge_ts, cdata echoed when bound. 429 keeps the dialect's body.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.TurnstileResult{}, Errors: compatErrs, Handle: a.siteverifyCompat(verify.Turnstile)},
		{Method: "POST", Path: "/recaptcha/api/siteverify", ID: "siteverifyRecaptcha", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Google reCAPTCHA dialect: form, JSON, multipart or query parameters; HTTP 200 for every outcome; no error-codes on success; score and action only for score modes.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.RecaptchaResult{}, Errors: compatErrs, Handle: a.siteverifyCompat(verify.Recaptcha)},
	}
}

func (a *verifyAPI) sandboxRoutes() []kernel.Route {
	issueErrors := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, errInvalidSitekey, kernel.ErrUnavailable}
	return []kernel.Route{
		{Method: "GET", Path: "/sandbox/scenarios", ID: "listSandboxScenarios", Tag: "Sandbox",
			Summary: "The sandbox scenarios and what /sandbox/siteverify answers for each.",
			Result:  &verify.SandboxScenarioList{}, Handle: func(c *kernel.Call) { c.OK(verify.Scenarios()) }},
		{Method: "POST", Path: "/sandbox/issue", ID: "issueSandboxToken", Tag: "Sandbox", Auth: []kernel.Auth{kernel.AuthSiteKey},
			Summary: "Mint a sandbox response token for a scenario with a sandbox site key (no browser, no challenge).",
			Body:    &verify.SandboxIssueInput{}, Result: &verify.SandboxIssueView{}, Errors: issueErrors, Handle: a.sandboxIssue},
		{Method: "POST", Path: "/sandbox/siteverify", ID: "sandboxSiteverify", Tag: "Sandbox", Auth: []kernel.Auth{kernel.AuthBodySecret}, Form: true, SpecErrors: true,
			Summary: "Verify a sandbox token with a sandbox secret: the production verifier and the section 2.2 shape, in the sandbox's own key space.",
			Body:    &verify.SiteverifyInput{}, Result: &verify.SiteverifyResult{}, Errors: siteverifyErrors, Handle: a.sandboxSiteverify},
	}
}

func (a *verifyAPI) sandboxIssue(c *kernel.Call) {
	var in verify.SandboxIssueInput
	if !c.Decode(&in) {
		return
	}
	out, err := a.m.SandboxIssue(c.Catalog(), &in)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(out)
}

// readVerifyRequest parses the body by its Content-Type.
func readVerifyRequest(c *kernel.Call, b *svBuf, q *svRequest) bool {
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
func checkSecret(c *kernel.Call, q *svRequest, sandbox bool, fail func(kernel.ErrorCode)) *catalog.Site {
	if len(q.secret) == 0 {
		fail(kernel.ErrMissingSecret)
		return nil
	}
	if len(q.secret) > 128 {
		fail(kernel.ErrInvalidSecret)
		return nil
	}
	site := c.Catalog().SiteBySecretAt(bstr(q.secret), c.Now)
	if site == nil || site.Sandbox() != sandbox {
		fail(kernel.ErrInvalidSecret)
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

func (a *verifyAPI) siteverify(c *kernel.Call)        { a.verifyResponse(c, false) }
func (a *verifyAPI) sandboxSiteverify(c *kernel.Call) { a.verifyResponse(c, true) }

// verifyResponse answers /siteverify, or with sandbox /sandbox/siteverify:
// the same verdict against the live or the sandbox key space.
func (a *verifyAPI) verifyResponse(c *kernel.Call, sandbox bool) {
	b := a.bufs.Get().(*svBuf)
	defer a.bufs.Put(b)
	var q svRequest
	fail := func(e kernel.ErrorCode) { c.SpecError(e.Status, e.Code) }
	if !readVerifyRequest(c, b, &q) || !verify.ValidIdempotencyKey(q.IdempotencyKey) {
		fail(kernel.ErrBadRequest)
		return
	}
	hv := a.m
	if hv.IsTestSecret(q.secret, sandbox) {
		if len(q.Response) == 0 {
			fail(svMissingResponse)
			return
		}
		c.OK(hv.TestSecretResult(q.secret, string(q.Action)))
		return
	}
	site := checkSecret(c, &q, sandbox, fail)
	if site == nil || !c.AdmitCredential(site.ID, site.WorkspaceID) {
		return
	}
	if len(q.Response) == 0 {
		fail(svMissingResponse)
		return
	}
	q.Sandbox, q.Ctx = sandbox, c.Context()
	v, err := hv.Siteverify(c.Catalog(), site, &q.Request, b.tokenScratch())
	if err != nil {
		fail(kernel.ErrUnavailable)
		return
	}
	c.DecidedSuccess(v.Success())
	b.out = verify.AppendResult(b.out[:0], &v)
	c.RawJSON(200, b.out)
}

// siteverifyCompat answers a drop-in dialect's siteverify: every outcome,
// request errors included, is HTTP 200 in the dialect's shape (429 keeps
// its status and headers).
func (a *verifyAPI) siteverifyCompat(d verify.Dialect) func(*kernel.Call) {
	return func(c *kernel.Call) {
		b := a.bufs.Get().(*svBuf)
		defer a.bufs.Put(b)
		fail := func(code string) {
			b.out = verify.AppendDialectError(b.out[:0], code)
			c.RawJSON(200, b.out)
		}
		var q svRequest
		if !readVerifyRequest(c, b, &q) || !verify.ValidIdempotencyKey(q.IdempotencyKey) {
			fail(kernel.ErrBadRequest.Code)
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
			fail(kernel.ErrBadRequest.Code)
			return
		}
		hv := a.m
		if d == verify.Turnstile && hv.IsTestSecret(q.secret, false) {
			c.OK(hv.TestSecretTurnstile(q.secret, string(q.Action)))
			return
		}
		site := checkSecret(c, &q, false, func(e kernel.ErrorCode) { fail(e.Code) })
		if site == nil {
			return
		}
		if !c.AdmitCredential(site.ID, site.WorkspaceID) {
			// Keep the 429 status and its headers, in the dialect's body.
			status := c.Ctx.Response.StatusCode()
			fail(kernel.ErrRateLimited.Code)
			c.Ctx.SetStatusCode(status)
			return
		}
		if len(q.Response) == 0 {
			fail(svMissingResponse.Code)
			return
		}
		q.RemoteIPSignal, q.Ctx = true, c.Context()
		v, err := hv.Siteverify(c.Catalog(), site, &q.Request, b.tokenScratch())
		if err != nil {
			fail(kernel.ErrInternal.Code)
			return
		}
		c.DecidedSuccess(v.Success())
		b.out = verify.AppendDialect(b.out[:0], d, &v)
		c.RawJSON(200, b.out)
	}
}

// bstr views b as a string without copying; the caller must not keep it
// past the request.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
