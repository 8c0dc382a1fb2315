package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
	"unsafe"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
	"github.com/trustd/trustd/token"
)

// /siteverify: the customer's backend exchanges a response token, once.
// The token's signature, site and expiry are checked on the receiving
// node without touching state, so garbage never reaches an actor; then
// the marker actor that owns the token id decides consumption, storing
// the first outcome so an idempotent retry gets it back. The answer is
// encoded by hand (append-based) because this runs on every protected
// form post.

// SiteverifyInput is the request of POST /siteverify (form-encoded or JSON).
type SiteverifyInput struct {
	Secret         string `json:"secret" required:"true" doc:"The site's private secret."`
	Response       string `json:"response" required:"true" doc:"The response token from the form field service-response."`
	RemoteIP       string `json:"remoteip" doc:"The visitor's IP; when supplied it must equal the address the token is bound to. Empty means absent."`
	Action         string `json:"action" doc:"The action the backend expects; a different bound action yields action-mismatch."`
	IdempotencyKey string `json:"idempotency_key" doc:"Optional, a UUID recommended (1 to 64 of A-Z a-z 0-9 - _): a retry of the same token with the same key within its lifetime returns the first result instead of timeout-or-duplicate."`
}

// SiteverifyResult is spec section 2.2.
type SiteverifyResult struct {
	Success          bool     `json:"success" required:"true" doc:"Final decision; proceed only when exactly true."`
	ChallengeTS      *string  `json:"challenge_ts" required:"true" doc:"UTC issue time of the token, YYYY-MM-DD HH:MM:SS; null for an unrecognised token."`
	Hostname         *string  `json:"hostname" required:"true" doc:"Hostname bound to the challenge; null for an unrecognised token."`
	Score            float64  `json:"score" required:"true" doc:"0.000 to 1.000, higher is more trustworthy; 0 for an unrecognised token."`
	ScoreThreshold   float64  `json:"score_threshold" required:"true" doc:"The site's configured threshold; a recommendation unless score_enforced."`
	ScoreEnforced    bool     `json:"score_enforced" required:"true" doc:"True when the service applied the threshold (score_enforced mode)."`
	ChallengeType    *string  `json:"challenge_type" required:"true" enum:"checkbox|visual|score_based|score_enforced" doc:"Mode that produced the token; null for an unrecognised token."`
	ChallengeVariant string   `json:"challenge_variant,omitempty" enum:"image|alt_text" doc:"Visual challenges: which form of the puzzle was solved."`
	Action           *string  `json:"action" required:"true" doc:"Action bound to the token (the bound one, also on action-mismatch); null for an unrecognised token."`
	CData            string   `json:"cdata,omitempty" doc:"Customer data bound at challenge time, when any (additive)."`
	ErrorCodes       []string `json:"error-codes" required:"true" enum:"invalid-input-response|timeout-or-duplicate|action-mismatch|remoteip-mismatch|low-score" doc:"Empty on success; several codes may appear together."`
	AssessmentID     string   `json:"assessment_id,omitempty" format:"uuid" doc:"On success: opaque reference for POST /trust/orchestrate, edge pre-clearance and detection feedback; not a verification token."`
}

// Spec-shaped request errors of the siteverify operations.
var (
	svMissingResponse = ErrorCode{"missing-input-response", 400, "No response token supplied."}
	siteverifyErrors  = []ErrorCode{ErrMissingSecret, ErrInvalidSecret, svMissingResponse, ErrBadRequest, ErrRateLimited, ErrUnavailable}
)

// Result codes, as bits of actors.Outcome.Codes.
const (
	vcInvalidInput uint32 = 1 << iota
	vcTimeoutOrDuplicate
	vcActionMismatch
	vcRemoteIPMismatch
	vcLowScore
	numVC = 5
)

var vcNames = [numVC]string{"invalid-input-response", "timeout-or-duplicate", "action-mismatch", "remoteip-mismatch", "low-score"}

// verdict is the outcome of one siteverify.
type verdict struct {
	tok          token.Response
	known        bool // the token is one of ours, for this site: echo its context
	codes        uint32
	assessmentID string
	site         *catalog.Site
	// ipMismatch is a remoteip that differed from the token's where that
	// is a signal only (compat dialects); it caps a reported score.
	ipMismatch bool
}

func (v *verdict) success() bool { return v.known && v.codes == 0 }

// svBuf is the pooled scratch of one siteverify.
type svBuf struct {
	scratch []byte
	tok     []byte
	out     []byte
}

// errSandboxServiceError is the sandbox's simulated outage.
var errSandboxServiceError = errors.New("sandbox: simulated service error")

func (s *Server) siteverifyRoutes() []Route {
	sec := []Auth{AuthBodySecret}
	compatErrs := []ErrorCode{ErrRateLimited}
	return []Route{
		{Method: "POST", Path: "/siteverify", ID: "siteverify", Tag: "Human verification", Auth: sec, Form: true, SpecErrors: true,
			Summary: "Exchange a response token, once: section 2.2 result with HTTP 200 for every processed token (success, policy failures, duplicates); request errors use {success:false,error}.",
			Body:    &SiteverifyInput{}, Result: &SiteverifyResult{}, Errors: siteverifyErrors, Handle: s.siteverify},
		{Method: "POST", Path: "/turnstile/v0/siteverify", ID: "siteverifyTurnstile", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Cloudflare Turnstile dialect: form, JSON or multipart; HTTP 200 for every outcome including request errors (error-codes), RFC 3339 challenge_ts, cdata echoed when bound. 429 keeps the dialect's body.",
			Body:    &SiteverifyInput{}, Result: &TurnstileResult{}, Errors: compatErrs, Handle: s.siteverifyCompat(dialectTurnstile)},
		{Method: "POST", Path: "/recaptcha/api/siteverify", ID: "siteverifyRecaptcha", Tag: "Human verification", Auth: sec, Form: true,
			Summary: "Drop-in siteverify in the Google reCAPTCHA dialect: form, JSON, multipart or query parameters; HTTP 200 for every outcome; no error-codes on success; score and action only for score modes.",
			Body:    &SiteverifyInput{}, Result: &RecaptchaResult{}, Errors: compatErrs, Handle: s.siteverifyCompat(dialectRecaptcha)},
	}
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
		return parseJSONBody(body, &b.scratch, q)
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

// validIdemKey accepts 1 to 64 of A-Z a-z 0-9 - _.
func validIdemKey(k []byte) bool {
	if len(k) > 64 {
		return false
	}
	for _, ch := range k {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

// bstr views b as a string without copying; the caller must not keep it
// past the request (token decoding copies what it keeps).
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// verifyToken decides one siteverify of q.response for site. A non-nil
// error means the owner of the token could not answer (the token is
// untouched) or, in the sandbox, a simulated outage.
func (s *Server) verifyToken(c *Call, site *catalog.Site, q *svRequest, sandbox bool, b *svBuf) (verdict, error) {
	v := verdict{site: site}
	prefix, purpose, space := token.LivePrefix, catalog.KeyLive, "tok/"
	if sandbox {
		prefix, purpose, space = token.SandboxPrefix, catalog.KeySandbox, "sbx/tok/"
	}
	hv := s.mods.hv
	cat := c.cat
	if cap(b.tok) < 512 {
		b.tok = make([]byte, 512)
	}
	tok, err := token.DecodeResponse(bstr(q.response), prefix, func(id string) *token.Key { return hv.verifier(cat, purpose, id) }, b.tok)
	if err != nil || tok.SiteID != site.ID {
		v.codes = vcInvalidInput
		return v, nil
	}
	v.tok, v.known = tok, true
	if sandbox && tok.Scenario == scenarioServiceError {
		return v, errSandboxServiceError
	}
	now := c.Now()
	if now.Unix() >= tok.Expires {
		v.codes = vcTimeoutOrDuplicate
		return v, nil
	}
	if len(q.action) > 0 && bstr(q.action) != tok.Action {
		v.codes |= vcActionMismatch
	}
	if len(q.remoteip) > 0 && tok.HasIP {
		ip, ok := canonicalIP(bstr(q.remoteip))
		if !ok || ipHash(hv.verifier(cat, purpose, tok.KeyID), ip) != tok.IPHash {
			if q.ipSignal {
				v.ipMismatch = true
			} else {
				v.codes |= vcRemoteIPMismatch
			}
		}
	}
	if tok.Mode == token.ModeScoreEnforced && float64(tok.Score) < site.ScoreThreshold*1000-1e-9 {
		v.codes |= vcLowScore
	}
	op := &actors.Redeem{ID: markerKey(space, tok.ID), Expires: tok.Expires*1e9 + markerSkew}
	if v.codes == 0 {
		// The assessment is stored by the same op that consumes the token,
		// on the token's partition (its id names that partition), so one
		// ask does both, and no assessment exists for an unconsumed token.
		v.assessmentID = actors.NewVerificationID(cluster.Partition(op.ID))
		if !sandbox {
			op.Record = &actors.Verification{ID: v.assessmentID, WorkspaceID: site.WorkspaceID, SiteID: site.ID,
				Hostname: tok.Hostname, Action: tok.Action, ChallengeType: tok.Mode.String(), Score: tok.Score, Reasons: tok.Reasons,
				VerifiedAt: now.UnixNano(), Expires: now.UnixNano() + verificationTTL}
		}
	}
	op.Outcome = actors.Outcome{Codes: v.codes, Ref: v.assessmentID, At: now.UnixNano()}
	if len(q.idem) > 0 {
		op.Key = replayKey(q, site.ID)
	}
	if err := c.ask(op.ID, op); err != nil {
		return v, err
	}
	switch {
	case op.First:
	case op.Replayed:
		v.codes, v.assessmentID = op.Outcome.Codes, op.Outcome.Ref
	default:
		v.codes, v.assessmentID = vcTimeoutOrDuplicate, ""
	}
	return v, nil
}

// checkSecret authenticates a siteverify request; false means the
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
	site := c.cat.SiteBySecret(bstr(q.secret), c.Now())
	if site == nil || site.Sandbox() != sandbox {
		fail(ErrInvalidSecret)
		return nil
	}
	return site
}

func (s *Server) siteverify(c *Call) { s.verifyResponse(c, false) }

// verifyResponse answers /siteverify, or with sandbox /sandbox/siteverify:
// the same validation against the live or the sandbox key space.
func (s *Server) verifyResponse(c *Call, sandbox bool) {
	b := s.mods.hv.bufs.Get().(*svBuf)
	defer s.mods.hv.bufs.Put(b)
	var q svRequest
	fail := func(e ErrorCode) { c.specError(e.Status, e.Code) }
	if !c.readVerifyRequest(b, &q) || !validIdemKey(q.idem) {
		fail(ErrBadRequest)
		return
	}
	if s.answerTestSecret(c, &q, sandbox) {
		return
	}
	site := c.checkSecret(&q, sandbox, fail)
	if site == nil || !c.admitCredential(site.ID, site.WorkspaceID) {
		return
	}
	if len(q.response) == 0 {
		fail(svMissingResponse)
		return
	}
	v, err := s.verifyToken(c, site, &q, sandbox, b)
	if err != nil {
		fail(ErrUnavailable)
		return
	}
	b.out = appendResult(b.out[:0], &v)
	c.rawJSON(200, b.out)
}

// appendResult encodes v as section 2.2.
func appendResult(dst []byte, v *verdict) []byte {
	t := &v.tok
	dst = append(dst, `{"success":`...)
	dst = strconv.AppendBool(dst, v.success())
	dst = append(dst, `,"challenge_ts":`...)
	if v.known {
		dst = append(dst, '"')
		dst = time.Unix(t.Issued, 0).UTC().AppendFormat(dst, "2006-01-02 15:04:05")
		dst = append(dst, '"')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"hostname":`...)
	dst = appendNullable(dst, v.known, t.Hostname)
	dst = append(dst, `,"score":`...)
	if v.known {
		dst = appendMilli(dst, int(t.Score))
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, `,"score_threshold":`...)
	dst = appendMilli(dst, int(v.site.ScoreThreshold*1000+0.5))
	enforced := v.site.ChallengeMode == catalog.ModeScoreEnforced
	if v.known {
		enforced = t.Mode == token.ModeScoreEnforced
	}
	dst = append(dst, `,"score_enforced":`...)
	dst = strconv.AppendBool(dst, enforced)
	dst = append(dst, `,"challenge_type":`...)
	dst = appendNullable(dst, v.known, t.Mode.String())
	if v.known && t.Variant != "" {
		dst = append(dst, `,"challenge_variant":`...)
		dst = appendJSONString(dst, t.Variant)
	}
	dst = append(dst, `,"action":`...)
	dst = appendNullable(dst, v.known, t.Action)
	if v.known && t.CData != "" {
		dst = append(dst, `,"cdata":`...)
		dst = appendJSONString(dst, t.CData)
	}
	dst = append(dst, `,"error-codes":`...)
	dst = appendCodes(dst, v.codes)
	if v.success() {
		dst = append(dst, `,"assessment_id":"`...)
		dst = append(dst, v.assessmentID...)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func appendNullable(dst []byte, ok bool, s string) []byte {
	if !ok {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, s)
}

// appendMilli writes thousandths as a decimal with three places.
func appendMilli(dst []byte, m int) []byte {
	if m < 0 {
		m = 0
	}
	dst = strconv.AppendInt(dst, int64(m/1000), 10)
	f := m % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

func appendCodes(dst []byte, codes uint32) []byte {
	dst = append(dst, '[')
	first := true
	for i := 0; i < numVC; i++ {
		if codes&(1<<i) == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, vcNames[i]...)
		dst = append(dst, '"')
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string, escaping quotes,
// backslashes, control characters and <, >, & (safe inside HTML).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// replayKey binds an idempotency key to everything that shaped the first
// answer: the site (its secrets), the action and the remote address sent.
// A retry is the same request again; the same key with another action or
// address is a different request, and gets timeout-or-duplicate rather
// than the first answer. The token is bound by the marker's id.
func replayKey(q *svRequest, siteID string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(siteID), q.action, q.remoteip} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var sum [sha256.Size]byte
	return string(q.idem) + ":" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}
