package ratecheck

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// retryMs is the wait a refusing outcome asks for, or -1 for none.
func (o *outcome) retryMs() int64 {
	if o.err != nil || o.op.OK || o.op.RetryAfterNs == ratelimit.Never {
		return -1
	}
	return (o.op.RetryAfterNs + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// Decision is the applied decision of the check.
func (r *Result) Decision() ratelimit.Decision {
	applied := ratelimit.Allow
	for i := range r.out {
		applied = ratelimit.Stricter(applied, r.out[i].decision)
	}
	return applied
}

// RetryAfterMs is the longest wait an applied refusal asks for, 0 when the
// check was allowed or no wait helps.
func (r *Result) RetryAfterMs() int64 {
	retry := int64(0)
	for i := range r.out {
		if o := &r.out[i]; o.decision != ratelimit.Allow {
			retry = max(retry, o.retryMs())
		}
	}
	return retry
}

// The constant stretches of the answer between its variable values,
// rendered once for every combination of the values they contain, so that
// writing an answer appends one ready fragment where it appended (and
// formatted) several. The bytes are exactly those the stretch-by-stretch
// writing produced (TestAnswerFragmentsAreTheStretches and
// traffic/api's TestCheckAnswersOnTheWireStayByteForByte).
var (
	// answerMid[recommended][applied]: from the decision id's closing
	// quote to the value of retry_after_ms; outcomeMid[enforced]
	// [recommended][decision]: from a policy's head to the value of its
	// cost.
	answerMid, outcomeMid = answerFragments()
	// refundedFragment[refunded]: from the policy's retry_after_ms value to
	// its reason codes.
	refundedFragment = [2]string{`,"refunded":false,"reason_codes":`, `,"refunded":true,"reason_codes":`}
)

func answerFragments() (answerMid [3][3]string, outcomeMid [2][3][3]string) {
	ds := [3]ratelimit.Decision{ratelimit.Allow, ratelimit.Throttle, ratelimit.Reject}
	for _, rec := range ds {
		for _, d := range ds {
			answerMid[rec][d] = `","allowed":` + strconv.FormatBool(d == ratelimit.Allow) + `,"recommended_decision":"` +
				rec.String() + `","decision":"` + d.String() + `","retry_after_ms":`
			for e := range 2 {
				outcomeMid[e][rec][d] = `,"enforced":` + strconv.FormatBool(e == 1) + `,"recommended_decision":"` +
					rec.String() + `","decision":"` + d.String() + `","cost":`
			}
		}
	}
	return answerMid, outcomeMid
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AppendJSON appends the answer of spec 2.10 (with a fresh decision id)
// to b. It is written by hand: this is the hottest answer of the service.
func (r *Result) AppendJSON(b []byte) []byte {
	recommended, applied := ratelimit.Allow, ratelimit.Allow
	retry := int64(0)
	remaining := int64(-1)
	for i := range r.out {
		o := &r.out[i]
		recommended = ratelimit.Stricter(recommended, o.recommended)
		applied = ratelimit.Stricter(applied, o.decision)
		if o.decision != ratelimit.Allow {
			retry = max(retry, o.retryMs())
		}
		if o.err == nil && (remaining < 0 || o.op.Remaining < remaining) {
			remaining = o.op.Remaining
		}
	}
	for i := range r.out {
		o := &r.out[i]
		if o.recommended == ratelimit.Allow && o.nreasons == 0 {
			continue
		}
		for _, code := range o.reasons[:o.nreasons] {
			r.topReason(code)
		}
	}
	b = append(b, `{"success":true,"decision_id":"`...)
	b = appendUUID(b)
	b = append(b, answerMid[recommended][applied]...)
	if retry == 0 {
		b = append(b, `0,"retry_after_seconds":0`...)
	} else {
		b = strconv.AppendInt(b, retry, 10)
		b = append(b, `,"retry_after_seconds":`...)
		b = strconv.AppendInt(b, (retry+999)/1000, 10)
	}
	b = append(b, `,"matched_policy_count":`...)
	b = strconv.AppendInt(b, int64(len(r.out)), 10)
	if remaining >= 0 {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, remaining, 10)
	}
	b = append(b, `,"adaptive_multiplier":`...)
	b = strconv.AppendInt(b, r.mult, 10)
	b = append(b, `,"reason_codes":`...)
	b = appendStrings(b, r.topCodes[:r.ntop])
	b = append(b, `,"policies":[`...)
	for i := range r.out {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.out[i].appendJSON(b)
	}
	return append(b, "]}"...)
}

// Scratch is a buffer the result owns, for the caller to append the
// answer into without allocating; it is valid until Release.
func (r *Result) Scratch() []byte { return r.body[:0] }

// Keep hands a grown scratch buffer back so the next check reuses it.
func (r *Result) Keep(b []byte) { r.body = b }

func (o *outcome) appendJSON(b []byte) []byte {
	p := o.p
	b = append(b, p.jsonHead...)
	b = append(b, outcomeMid[boolIndex(o.enforced)][o.recommended][o.decision]...)
	b = strconv.AppendInt(b, o.op.Cost, 10)
	b = append(b, `,"adaptive_multiplier":`...)
	b = strconv.AppendInt(b, o.mult, 10)
	b = append(b, p.jsonCap...)
	if o.err == nil {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, o.op.Remaining, 10)
	}
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, max(o.retryMs(), 0), 10)
	if p.quotaLimit > 0 {
		b = append(b, `,"quota":{"limit":`...)
		b = strconv.AppendInt(b, p.quotaLimit, 10)
		b = append(b, `,"window":"`...)
		b = append(b, p.window.String()...)
		b = append(b, '"')
		if o.err == nil && o.op.QuotaResetNs != ratelimit.Never {
			b = append(b, `,"remaining":`...)
			b = strconv.AppendInt(b, o.op.QuotaRemaining, 10)
			b = append(b, `,"resets_at":"`...)
			b = time.Unix(0, o.op.QuotaResetNs).UTC().AppendFormat(b, time.RFC3339)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, refundedFragment[boolIndex(o.refunded)]...)
	b = appendStrings(b, o.reasons[:o.nreasons])
	return append(b, '}')
}

// appendStrings appends a JSON array of strings that need no escaping
// (reason codes are constants of this package).
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// appendUUID appends a random version-4 UUID. A decision id correlates
// logs and is not a secret, so the runtime's per-thread ChaCha8 generator
// is enough and saves a system call per check.
func appendUUID(b []byte) []byte {
	var u [16]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		u[i], u[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hexd = "0123456789abcdef"
	var out [36]byte
	j := 0
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hexd[x>>4], hexd[x&0xf]
		j += 2
	}
	return append(b, out[:]...)
}

// BucketKey is the actor key of the first matched policy's bucket (its
// reservation), "" when no policy matched. Its partition is where a
// routing client sends the same check next (traffic/client).
func (r *Result) BucketKey() string {
	if len(r.out) == 0 {
		return ""
	}
	return r.out[0].op.Key
}
