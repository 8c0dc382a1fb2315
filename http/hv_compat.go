package http

import (
	"strconv"
	"time"

	"github.com/trustd/trustd/token"
)

// Drop-in siteverify dialects. A site moving from Cloudflare Turnstile or
// Google reCAPTCHA changes only the verify URL: the request shapes their
// server libraries send (form, JSON or multipart with secret, response,
// remoteip, idempotency_key; unknown fields ignored; empty remoteip
// absent) are accepted, and the answer is in that service's dialect with
// HTTP 200 for every outcome, request errors included. Verification itself
// is the native one: the same single use, bindings and policy codes.

type dialect uint8

const (
	dialectTurnstile dialect = iota
	dialectRecaptcha
)

// TurnstileResult is the Turnstile-dialect answer.
type TurnstileResult struct {
	Success     bool     `json:"success" required:"true"`
	ChallengeTS string   `json:"challenge_ts,omitempty" format:"date-time" doc:"RFC 3339 issue time; on success."`
	Hostname    string   `json:"hostname,omitempty" doc:"On success."`
	ErrorCodes  []string `json:"error-codes" required:"true" doc:"Empty on success; else missing-input-secret, invalid-input-secret, missing-input-response, invalid-input-response, bad-request, timeout-or-duplicate, internal-error, rate-limit-exceeded or a policy code (action-mismatch, remoteip-mismatch, low-score)."`
	Action      string   `json:"action,omitempty" doc:"On success: the bound action."`
	CData       string   `json:"cdata,omitempty" doc:"On success, when customer data was bound at challenge time."`
}

// RecaptchaResult is the reCAPTCHA-dialect answer.
type RecaptchaResult struct {
	Success     bool     `json:"success" required:"true"`
	ChallengeTS string   `json:"challenge_ts,omitempty" format:"date-time" doc:"RFC 3339 issue time; on success."`
	Hostname    string   `json:"hostname,omitempty" doc:"On success."`
	Score       *float64 `json:"score,omitempty" doc:"On success, score modes only (as reCAPTCHA v3)."`
	Action      string   `json:"action,omitempty" doc:"On success, score modes only."`
	ErrorCodes  []string `json:"error-codes,omitempty" doc:"Absent on success, as reCAPTCHA omits it."`
}

func (s *Server) siteverifyCompat(d dialect) func(*Call) {
	return func(c *Call) {
		b := s.mods.hv.bufs.Get().(*svBuf)
		defer s.mods.hv.bufs.Put(b)
		fail := func(code string) {
			b.out = append(append(append(b.out[:0], `{"success":false,"error-codes":["`...), code...), `"]}`...)
			c.rawJSON(200, b.out)
		}
		var q svRequest
		if !c.readVerifyRequest(b, &q) || !validIdemKey(q.idem) {
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
		if !validIdemKey(q.idem) {
			fail(ErrBadRequest.Code)
			return
		}
		if d == dialectTurnstile && s.answerTestSecretTurnstile(c, &q) {
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
		if len(q.response) == 0 {
			fail(svMissingResponse.Code)
			return
		}
		q.ipSignal = true
		v, err := s.verifyToken(c, site, &q, false, b)
		if err != nil {
			fail("internal-error")
			return
		}
		if d == dialectTurnstile {
			b.out = appendTurnstile(b.out[:0], &v)
		} else {
			b.out = appendRecaptcha(b.out[:0], &v)
		}
		c.rawJSON(200, b.out)
	}
}

// mismatchedIPScoreCap is the highest score the reCAPTCHA dialect reports
// for a token whose remoteip differs from the address it was issued to.
const mismatchedIPScoreCap = 0.3

func appendRFC3339(dst []byte, unix int64) []byte {
	dst = append(dst, '"')
	dst = time.Unix(unix, 0).UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, '"')
}

func appendTurnstile(dst []byte, v *verdict) []byte {
	if !v.success() {
		dst = append(dst, `{"success":false,"error-codes":`...)
		return append(appendCodes(dst, v.codes), '}')
	}
	t := &v.tok
	dst = append(dst, `{"success":true,"challenge_ts":`...)
	dst = appendRFC3339(dst, t.Issued)
	dst = append(dst, `,"hostname":`...)
	dst = appendJSONString(dst, t.Hostname)
	dst = append(dst, `,"error-codes":[],"action":`...)
	dst = appendJSONString(dst, t.Action)
	if t.CData != "" {
		dst = append(dst, `,"cdata":`...)
		dst = appendJSONString(dst, t.CData)
	}
	return append(dst, '}')
}

func appendRecaptcha(dst []byte, v *verdict) []byte {
	if !v.success() {
		dst = append(dst, `{"success":false,"error-codes":`...)
		return append(appendCodes(dst, v.codes), '}')
	}
	t := &v.tok
	dst = append(dst, `{"success":true,"challenge_ts":`...)
	dst = appendRFC3339(dst, t.Issued)
	dst = append(dst, `,"hostname":`...)
	dst = appendJSONString(dst, t.Hostname)
	if t.Mode == token.ModeScoreBased || t.Mode == token.ModeScoreEnforced {
		score := float64(t.Score) / 1000
		if v.ipMismatch {
			// A token redeemed from another address than the one the
			// backend names is a weaker signal of a real visitor.
			score = min(score, mismatchedIPScoreCap)
		}
		dst = append(dst, `,"score":`...)
		dst = strconv.AppendFloat(dst, score, 'f', -1, 64)
		dst = append(dst, `,"action":`...)
		dst = appendJSONString(dst, t.Action)
	}
	return append(dst, '}')
}
