package events

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Header names of a delivery. The Stripe-compatible signature travels in
// SignatureHeader; the three Standard Webhooks headers carry the same
// event, signed with the same secret in that standard's form.
const (
	SignatureHeader    = "X-Service-Webhook-Signature"
	AttemptHeader      = "X-Service-Webhook-Attempt"
	EventTypeHeader    = "X-Service-Webhook-Event"
	StdIDHeader        = "Webhook-Id"
	StdTimestampHeader = "Webhook-Timestamp"
	StdSignatureHeader = "Webhook-Signature"
)

// SecretPrefix starts every webhook secret: "whsec_" and the standard
// base64 of 32 random bytes, the form Standard Webhooks libraries take.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh webhook secret.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// stdKey is the Standard Webhooks key of a secret: the base64-decoded
// bytes after the prefix.
func stdKey(secret string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	return b, err == nil && len(b) > 0
}

// Signed are the signature headers of one attempt.
type Signed struct {
	// Signature is "t=<unix>,v1=<hex>[,v1=<hex>…]": HMAC-SHA-256 keyed
	// with the ASCII bytes of the whole secret (prefix included) over
	// "<unix>.<raw body>", one v1 per valid secret, as Stripe signs.
	Signature string
	// StdID, StdTimestamp and StdSignature are the Standard Webhooks
	// headers: "v1,<base64>" per valid secret, space-separated, HMAC-SHA-256
	// keyed with the decoded secret over "<id>.<unix>.<raw body>".
	StdID, StdTimestamp, StdSignature string
}

// Sign signs body, sent at unix time ts as event id, with every secret.
func Sign(secrets []string, id string, ts int64, body []byte) Signed {
	t := strconv.FormatInt(ts, 10)
	var stripe, std strings.Builder
	stripe.WriteString("t=" + t)
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write([]byte(t))
		m.Write([]byte{'.'})
		m.Write(body)
		stripe.WriteString(",v1=" + hex.EncodeToString(m.Sum(nil)))
		if k, ok := stdKey(s); ok {
			m := hmac.New(sha256.New, k)
			m.Write([]byte(id + "." + t + "."))
			m.Write(body)
			if std.Len() > 0 {
				std.WriteByte(' ')
			}
			std.WriteString("v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)))
		}
	}
	return Signed{Signature: stripe.String(), StdID: id, StdTimestamp: t, StdSignature: std.String()}
}
