package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Verification errors of Verify.
var (
	ErrSignatureHeader  = errors.New("events: malformed signature header")
	ErrSignatureStale   = errors.New("events: signature timestamp outside the tolerance")
	ErrSignatureInvalid = errors.New("events: no signature matches")
)

// Verify checks a delivery's X-Service-Webhook-Signature header the way a
// receiver should: the timestamp within tolerance of now in both
// directions (stock Stripe libraries only bound the past), then any v1
// matching HMAC-SHA-256(secret, "<t>.<raw body>"), compared in constant
// time. It is the reference receivers can copy; the dispatcher never
// calls it.
func Verify(body []byte, header, secret string, now time.Time, tolerance time.Duration) error {
	var ts int64 = -1
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return ErrSignatureHeader
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ts >= 0 {
				return ErrSignatureHeader
			}
			ts = n
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return ErrSignatureHeader
			}
			sigs = append(sigs, b)
		}
	}
	if ts < 0 || len(sigs) == 0 {
		return ErrSignatureHeader
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureStale
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	want := m.Sum(nil)
	ok := false
	for _, s := range sigs {
		ok = hmac.Equal(s, want) || ok
	}
	if !ok {
		return ErrSignatureInvalid
	}
	return nil
}
