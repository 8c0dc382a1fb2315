package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
	"unsafe"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

// Siteverify: the customer's backend exchanges a response token, once.
// The token's signature, site and expiry are checked on the receiving
// node without touching state, so garbage never reaches an actor; then
// the marker actor that owns the token id decides consumption, storing
// the first outcome so an idempotent retry gets it back. The answers are
// encoded by hand (append-based) because this runs on every protected
// form post.

// SiteverifyInput is the request of POST /siteverify (form-encoded or JSON).
type SiteverifyInput struct {
	Secret         string `json:"secret" required:"true" doc:"The site's private secret."`
	Response       string `json:"response" required:"true" doc:"The response token from the form field service-response."`
	RemoteIP       string `json:"remoteip" doc:"The visitor's IP; when supplied it must equal the address the token is bound to. Empty means absent."`
	Action         string `json:"action" doc:"The action the backend expects; a different bound action yields action-mismatch."`
	IdempotencyKey string `json:"idempotency_key" doc:"Optional, a UUID recommended (1 to 64 of A-Z a-z 0-9 - _); send one to retry safely. A retry of the same token with the same key, action and remoteip returns the first result (the same error-codes and assessment_id) instead of timeout-or-duplicate: after a 503 service-unavailable, a timeout or a cut connection, through any node, and up to 5 minutes (plus 30 s of clock skew) past the token's lifetime. While the first attempt's outcome is still unknown the retry answers 503 again; it never answers timeout-or-duplicate for its own first use. Another key (another caller) or none gets timeout-or-duplicate once the token is used; without a key a retry after a 503 may get timeout-or-duplicate if the first attempt consumed the token."`
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

// Result codes of a verdict, as bits of actors.Outcome.Codes (stored by
// the marker, so their values never change).
const (
	CodeInvalidInput uint32 = 1 << iota
	CodeTimeoutOrDuplicate
	CodeActionMismatch
	CodeRemoteIPMismatch
	CodeLowScore
	numCodes = 5
)

var codeNames = [numCodes]string{errcode.CodeInvalidResponse, errcode.CodeTimeoutOrDuplicate, errcode.CodeActionMismatch, errcode.CodeRemoteIPMismatch, errcode.CodeLowScore}

// Request is one siteverify after the transport authenticated its secret.
// The byte slices may be views of the request body; Siteverify keeps none
// of them.
type Request struct {
	// Ctx is the request's context, when it has one: an ask forwarded to
	// the token's owner continues its trace there.
	Ctx                                        context.Context
	Response, RemoteIP, Action, IdempotencyKey []byte
	// Sandbox verifies a sandbox token (prefix, key and marker space of
	// the sandbox) instead of a live one.
	Sandbox bool
	// RemoteIPSignal makes a remoteip that differs from the token's a
	// signal rather than a failure, as the Turnstile and reCAPTCHA
	// dialects document it (libraries send X-Forwarded-For addresses, and
	// behind a proxy every token would otherwise fail and be used up).
	RemoteIPSignal bool
}

// Verdict is the outcome of one siteverify.
type Verdict struct {
	Token token.Response
	// Known is a token of ours, for this site: its context is echoed.
	Known        bool
	Codes        uint32
	AssessmentID string
	Site         *catalog.Site
	// IPMismatch is a remoteip that differed from the token's where that
	// is a signal only (RemoteIPSignal); it caps a reported score.
	IPMismatch bool
}

// Success is the final decision.
func (v *Verdict) Success() bool { return v.Known && v.Codes == 0 }

// ErrSandboxServiceError is the sandbox's simulated outage; the transport
// answers it as it answers an unavailable owner.
var ErrSandboxServiceError = errors.New("sandbox: simulated service error")

// ValidIdempotencyKey accepts 1 to 64 of A-Z a-z 0-9 - _ (or none).
func ValidIdempotencyKey(k []byte) bool {
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

// Siteverify decides one siteverify of q.Response for site. scratch is a
// buffer of at least 512 bytes the decoded token's strings may point into:
// keep it until the verdict is encoded. A non-nil error means the owner of
// the token could not answer (the token is untouched) or, in the sandbox,
// a simulated outage (ErrSandboxServiceError).
func (m *Module) Siteverify(cat *catalog.Catalog, site *catalog.Site, q *Request, scratch []byte) (Verdict, error) {
	v := Verdict{Site: site}
	prefix, purpose, space := token.LivePrefix, catalog.KeyLive, actors.SpaceToken
	if q.Sandbox {
		prefix, purpose, space = token.SandboxPrefix, catalog.KeySandbox, actors.SpaceSandboxTok
	}
	tok, err := token.DecodeResponse(bstr(q.Response), prefix, func(id string) *token.Key { return m.verifier(cat, purpose, id) }, scratch)
	if err != nil || tok.SiteID != site.ID {
		v.Codes = CodeInvalidInput
		return v, nil
	}
	v.Token, v.Known = tok, true
	if q.Sandbox && tok.Scenario == scenarioServiceError {
		return v, ErrSandboxServiceError
	}
	now := m.now()
	if now.Unix() >= tok.Expires {
		v.Codes = CodeTimeoutOrDuplicate
		if len(q.IdempotencyKey) == 0 {
			return v, nil
		}
		// An idempotent retry past the token's lifetime still gets the
		// first outcome when there was one: a Redeem whose expiry has
		// passed only finds a stored outcome, it never consumes.
		op := &actors.Redeem{ID: actors.MarkerKey(space, tok.ID), Expires: 1, Key: replayKey(q, site.ID)}
		if err := m.inCtx.Ask(q.Ctx, op.ID, op); err != nil {
			return v, err
		}
		if op.Replayed {
			v.Codes, v.AssessmentID = op.Outcome.Codes, op.Outcome.Ref
		}
		return v, nil
	}
	if len(q.Action) > 0 && bstr(q.Action) != tok.Action {
		v.Codes |= CodeActionMismatch
	}
	if len(q.RemoteIP) > 0 && tok.HasIP {
		h, ok := remoteIPHash(m.verifier(cat, purpose, tok.KeyID), bstr(q.RemoteIP))
		if !ok || h != tok.IPHash {
			if q.RemoteIPSignal {
				v.IPMismatch = true
			} else {
				v.Codes |= CodeRemoteIPMismatch
			}
		}
	}
	if tok.Mode == token.ModeScoreEnforced && float64(tok.Score) < site.ScoreThreshold*1000-1e-9 {
		v.Codes |= CodeLowScore
	}
	op := &actors.Redeem{ID: actors.MarkerKey(space, tok.ID), Expires: tok.Expires*1e9 + markerSkew}
	if v.Codes == 0 {
		// The assessment is stored by the same op that consumes the token,
		// on the token's partition (its id names that partition), so one
		// ask does both, and no assessment exists for an unconsumed token.
		v.AssessmentID = actors.NewVerificationID(cluster.Partition(op.ID))
		if !q.Sandbox {
			op.Record = &actors.Verification{ID: v.AssessmentID, WorkspaceID: site.WorkspaceID, SiteID: site.ID,
				Hostname: tok.Hostname, Action: tok.Action, ChallengeType: tok.Mode.String(), Score: tok.Score, Reasons: tok.Reasons,
				VerifiedAt: now.UnixNano(), Expires: now.UnixNano() + verificationTTL}
		}
	}
	op.Outcome = actors.Outcome{Codes: v.Codes, Ref: v.AssessmentID, At: now.UnixNano()}
	if len(q.IdempotencyKey) > 0 {
		op.Key = replayKey(q, site.ID)
		op.Expires += replayGrace
	}
	if err := m.inCtx.Ask(q.Ctx, op.ID, op); err != nil {
		return v, err
	}
	switch {
	case op.First:
	case op.Replayed:
		v.Codes, v.AssessmentID = op.Outcome.Codes, op.Outcome.Ref
	default:
		v.Codes, v.AssessmentID = CodeTimeoutOrDuplicate, ""
	}
	return v, nil
}

// replayKey binds an idempotency key to everything that shaped the first
// answer: the site (its secrets), the action and the remote address sent.
// A retry is the same request again; the same key with another action or
// address is a different request, and gets timeout-or-duplicate rather
// than the first answer. The token is bound by the marker's id.
func replayKey(q *Request, siteID string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(siteID), q.Action, q.RemoteIP} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var sum [sha256.Size]byte
	return string(q.IdempotencyKey) + ":" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// AppendResult encodes v as section 2.2.
func AppendResult(dst []byte, v *Verdict) []byte {
	t := &v.Token
	dst = append(dst, `{"success":`...)
	dst = strconv.AppendBool(dst, v.Success())
	dst = append(dst, `,"challenge_ts":`...)
	if v.Known {
		dst = append(dst, '"')
		dst = time.Unix(t.Issued, 0).UTC().AppendFormat(dst, "2006-01-02 15:04:05")
		dst = append(dst, '"')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"hostname":`...)
	dst = appendNullable(dst, v.Known, t.Hostname)
	dst = append(dst, `,"score":`...)
	if v.Known {
		dst = appendMilli(dst, int(t.Score))
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, `,"score_threshold":`...)
	dst = appendMilli(dst, int(v.Site.ScoreThreshold*1000+0.5))
	enforced := v.Site.ChallengeMode == catalog.ModeScoreEnforced
	if v.Known {
		enforced = t.Mode == token.ModeScoreEnforced
	}
	dst = append(dst, `,"score_enforced":`...)
	dst = strconv.AppendBool(dst, enforced)
	dst = append(dst, `,"challenge_type":`...)
	dst = appendNullable(dst, v.Known, t.Mode.String())
	if v.Known && t.Variant != "" {
		dst = append(dst, `,"challenge_variant":`...)
		dst = appendJSONString(dst, t.Variant)
	}
	dst = append(dst, `,"action":`...)
	dst = appendNullable(dst, v.Known, t.Action)
	if v.Known && t.CData != "" {
		dst = append(dst, `,"cdata":`...)
		dst = appendJSONString(dst, t.CData)
	}
	dst = append(dst, `,"error-codes":`...)
	dst = appendCodes(dst, v.Codes)
	if v.Success() {
		dst = append(dst, `,"assessment_id":"`...)
		dst = append(dst, v.AssessmentID...)
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
	for i := 0; i < numCodes; i++ {
		if codes&(1<<i) == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, codeNames[i]...)
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

// CodeNames appends the verdict's error codes, in the contract's order.
func (v *Verdict) CodeNames(dst []string) []string {
	for i := 0; i < numCodes; i++ {
		if v.Codes&(1<<i) != 0 {
			dst = append(dst, codeNames[i])
		}
	}
	return dst
}
