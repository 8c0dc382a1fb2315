package verify

import (
	"strconv"
	"time"

	"github.com/trustd/trustd/platform/token"
)

// Drop-in siteverify dialects. A site moving from Cloudflare Turnstile or
// Google reCAPTCHA (whose request shape hCaptcha shares) changes only the
// verify URL: the request shapes their server libraries send (form, JSON
// or multipart with secret, response, remoteip, idempotency_key; unknown
// fields ignored; empty remoteip absent) are accepted by the transport,
// and the answer is in that service's dialect with HTTP 200 for every
// outcome, request errors included. Verification itself is the native
// one (Siteverify with RemoteIPSignal): the same single use, bindings and
// policy codes.

// Dialect is a drop-in answer shape.
type Dialect uint8

// The dialects.
const (
	Turnstile Dialect = iota
	Recaptcha
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

// A remoteip that differs from the address a token was issued to is a
// weak signal in the reCAPTCHA dialect: most backends send the address of
// a proxy or CDN hop, so a mismatch is common for real visitors. Google
// documents no effect of remoteip on the score, and stock v3 backends
// (recaptcha-go, @nestlab/google-recaptcha, better-auth) reject below 0.5,
// so the signal lowers a score by mismatchedIPPenalty and never takes a
// score at or above humanThreshold below it: by itself it cannot turn a
// human into a rejection. A score already below the threshold is left as
// it is (the visitor is failed on its own evidence, not on the address).
const (
	mismatchedIPPenalty = 0.1
	humanThreshold      = 0.5
)

// recaptchaScore is the score the reCAPTCHA dialect reports for a token
// scored milli (0..1000) when ipMismatch says remoteip named another
// address. It allocates nothing and is exact on the three decimals tokens
// carry.
func recaptchaScore(milli uint16, ipMismatch bool) float64 {
	m := int(milli)
	if ipMismatch {
		floor := min(m, int(humanThreshold*1000))
		m = max(m-int(mismatchedIPPenalty*1000), floor)
	}
	return float64(m) / 1000
}

// AppendDialect encodes v in dialect d.
func AppendDialect(dst []byte, d Dialect, v *Verdict) []byte {
	if d == Turnstile {
		return appendTurnstile(dst, v)
	}
	return appendRecaptcha(dst, v)
}

// AppendDialectError encodes a request error (a code such as
// invalid-input-secret) the way both dialects answer one: HTTP 200,
// success false and the code in error-codes.
func AppendDialectError(dst []byte, code string) []byte {
	dst = append(dst, `{"success":false,"error-codes":["`...)
	dst = append(dst, code...)
	return append(dst, `"]}`...)
}

func appendRFC3339(dst []byte, unix int64) []byte {
	dst = append(dst, '"')
	dst = time.Unix(unix, 0).UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, '"')
}

// appendDialectHead writes what both dialects answer alike: the whole
// failure object (done), or the opening of the success object up to its
// hostname, left open for the dialect's own members.
func appendDialectHead(dst []byte, v *Verdict) (out []byte, done bool) {
	if !v.Success() {
		dst = append(dst, `{"success":false,"error-codes":`...)
		return append(appendCodes(dst, v.Codes), '}'), true
	}
	dst = append(dst, `{"success":true,"challenge_ts":`...)
	dst = appendRFC3339(dst, v.Token.Issued)
	dst = append(dst, `,"hostname":`...)
	return appendJSONString(dst, v.Token.Hostname), false
}

func appendTurnstile(dst []byte, v *Verdict) []byte {
	dst, done := appendDialectHead(dst, v)
	if done {
		return dst
	}
	t := &v.Token
	dst = append(dst, `,"error-codes":[],"action":`...)
	dst = appendJSONString(dst, t.Action)
	if t.CData != "" {
		dst = append(dst, `,"cdata":`...)
		dst = appendJSONString(dst, t.CData)
	}
	return append(dst, '}')
}

func appendRecaptcha(dst []byte, v *Verdict) []byte {
	dst, done := appendDialectHead(dst, v)
	if done {
		return dst
	}
	t := &v.Token
	if t.Mode == token.ModeScoreBased || t.Mode == token.ModeScoreEnforced {
		score := recaptchaScore(t.Score, v.IPMismatch)
		dst = append(dst, `,"score":`...)
		dst = strconv.AppendFloat(dst, score, 'f', -1, 64)
		dst = append(dst, `,"action":`...)
		dst = appendJSONString(dst, t.Action)
	}
	return append(dst, '}')
}
