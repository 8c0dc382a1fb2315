package events

import (
	"errors"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"
)

// The vectors were computed with openssl, independently of this code:
//
//	printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
//	printf 'evt_1.1700000000.{"a":1}' | openssl dgst -sha256 -mac HMAC \
//	  -macopt hexkey:$(printf MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw | base64 -d | xxd -p -c 100) -binary | base64
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecStripe = "t=1700000000,v1=b6974ac6d7fd2ac6e37c3cea117ba7ee3cfde56b98ea4e8b5fb26b9fee534ba7"
	vecStd    = "v1,qObqaT8ae+L7ApT9haiUyL954tN4bu4sTnfiYqdvNz0="
)

func TestSignMatchesIndependentVectors(t *testing.T) {
	s := Sign([]string{vecSecret}, "evt_1", 1700000000, []byte(`{"a":1}`))
	if s.Signature != vecStripe {
		t.Errorf("stripe-style signature = %q, want %q", s.Signature, vecStripe)
	}
	if s.StdSignature != vecStd || s.StdID != "evt_1" || s.StdTimestamp != "1700000000" {
		t.Errorf("standard webhooks headers = %+v, want signature %q", s, vecStd)
	}
	two := Sign([]string{vecSecret, NewSecret()}, "evt_1", 1700000000, []byte(`{"a":1}`))
	if !strings.HasPrefix(two.Signature, vecStripe+",v1=") || strings.Count(two.Signature, "v1=") != 2 {
		t.Errorf("two secrets must give two v1 entries, current first: %q", two.Signature)
	}
	if !strings.HasPrefix(two.StdSignature, vecStd+" v1,") {
		t.Errorf("two secrets must give two space-separated standard signatures: %q", two.StdSignature)
	}
}

func TestNewSecretIsStandardWebhooksForm(t *testing.T) {
	s := NewSecret()
	k, ok := stdKey(s)
	if !strings.HasPrefix(s, SecretPrefix) || !ok || len(k) != 32 {
		t.Fatalf("secret %q: want whsec_ + base64 of 32 bytes", s)
	}
	if NewSecret() == s {
		t.Fatal("two secrets are equal")
	}
}

func stdHeaders(s Signed) nethttp.Header {
	h := nethttp.Header{}
	h.Set(StdIDHeader, s.StdID)
	h.Set(StdTimestampHeader, s.StdTimestamp)
	h.Set(StdSignatureHeader, s.StdSignature)
	return h
}

// TestThirdPartyVerifiers signs with Sign and verifies with the stock
// libraries a receiver would use: stripe-go's ValidatePayloadWithTolerance
// on the Stripe-style header and the Standard Webhooks Go library on the
// webhook-* headers, both from the one secret shown to the admin.
func TestThirdPartyVerifiers(t *testing.T) {
	cur, old, other := NewSecret(), NewSecret(), NewSecret()
	body := []byte(`{"id":"evt_x","type":"identity.verification.verified","sequence":2,"data":{"status":"verified"}}`)
	now := time.Now()
	tests := []struct {
		name      string
		signWith  []string
		verifyKey string
		ts        time.Time
		id        string // webhook-id sent, when it differs from the signed one
		body      []byte
		wantOK    bool
		stripeErr error
	}{
		{"a fresh delivery verifies with the current secret", []string{cur}, cur, now, "", body, true, nil},
		{"during rotation the new secret verifies", []string{cur, old}, cur, now, "", body, true, nil},
		{"during rotation the old secret still verifies", []string{cur, old}, old, now, "", body, true, nil},
		{"another endpoint's secret does not verify", []string{cur}, other, now, "", body, false, webhook.ErrNoValidSignature},
		{"a changed body does not verify", []string{cur}, cur, now, "", []byte(`{"id":"evt_x","type":"identity.verification.rejected"}`), false, webhook.ErrNoValidSignature},
		{"a delivery older than the tolerance is refused", []string{cur}, cur, now.Add(-10 * time.Minute), "", body, false, webhook.ErrTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Sign(tt.signWith, "evt_x", tt.ts.Unix(), body)
			err := webhook.ValidatePayloadWithTolerance(tt.body, s.Signature, tt.verifyKey, 5*time.Minute)
			if (err == nil) != tt.wantOK || tt.stripeErr != nil && !errors.Is(err, tt.stripeErr) {
				t.Errorf("stripe-go: err = %v, want ok=%v (%v)", err, tt.wantOK, tt.stripeErr)
			}
			wh, err := standardwebhooks.NewWebhook(tt.verifyKey)
			if err != nil {
				t.Fatalf("standardwebhooks.NewWebhook(%q): %v", tt.verifyKey, err)
			}
			err = wh.Verify(tt.body, stdHeaders(s))
			if (err == nil) != tt.wantOK {
				t.Errorf("standard webhooks: err = %v, want ok=%v", err, tt.wantOK)
			}
		})
	}
	t.Run("the standard signature is bound to webhook-id", func(t *testing.T) {
		s := Sign([]string{cur}, "evt_x", now.Unix(), body)
		s.StdID = "evt_y"
		wh, _ := standardwebhooks.NewWebhook(cur)
		if err := wh.Verify(body, stdHeaders(s)); err == nil {
			t.Fatal("a replayed body under another webhook-id verified")
		}
	})
	t.Run("the standard library refuses a timestamp from the future; stripe-go does not (documented)", func(t *testing.T) {
		s := Sign([]string{cur}, "evt_x", now.Add(time.Hour).Unix(), body)
		wh, _ := standardwebhooks.NewWebhook(cur)
		if err := wh.Verify(body, stdHeaders(s)); err == nil {
			t.Fatal("standard webhooks accepted a timestamp an hour ahead")
		}
		if err := webhook.ValidatePayloadWithTolerance(body, s.Signature, cur, 5*time.Minute); err != nil {
			t.Fatalf("stripe-go behaviour changed (it used to accept future timestamps): %v", err)
		}
	})
}

func TestVerifyBoundsBothWays(t *testing.T) {
	body := []byte(`{"id":"evt_v"}`)
	now := time.Unix(1700000000, 0)
	cur, old := NewSecret(), NewSecret()
	tests := []struct {
		name   string
		header string
		secret string
		want   error
	}{
		{"a fresh signature verifies", Sign([]string{cur}, "evt_v", now.Unix(), body).Signature, cur, nil},
		{"the second v1 of a rotation verifies", Sign([]string{cur, old}, "evt_v", now.Unix(), body).Signature, old, nil},
		{"a stale timestamp is refused", Sign([]string{cur}, "evt_v", now.Add(-6*time.Minute).Unix(), body).Signature, cur, ErrSignatureStale},
		{"a future timestamp is refused", Sign([]string{cur}, "evt_v", now.Add(6*time.Minute).Unix(), body).Signature, cur, ErrSignatureStale},
		{"another secret is refused", Sign([]string{cur}, "evt_v", now.Unix(), body).Signature, old, ErrSignatureInvalid},
		{"a header without v1 is malformed", "t=1700000000", cur, ErrSignatureHeader},
		{"two timestamps are malformed", "t=1,t=2,v1=00", cur, ErrSignatureHeader},
		{"a short v1 is malformed", "t=1700000000,v1=abcd", cur, ErrSignatureHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Verify(body, tt.header, tt.secret, now, 5*time.Minute); !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
	if err := Verify([]byte(`{"a":1}`), vecStripe, vecSecret, time.Unix(1700000000, 0), time.Minute); err != nil {
		t.Fatalf("the openssl vector does not verify: %v", err)
	}
}
