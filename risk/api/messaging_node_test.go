package api_test

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/risk/messaging"
)

var messagingNonceSeq atomic.Int64

type messagingClient struct {
	tn     *nodetest.Node
	ws     string
	secret string
}

// send signs body with the workspace's messaging secret and posts it;
// mutate may change the headers after signing.
func (m messagingClient) send(path, body string, mutate ...func(h map[string]string)) nodetest.Response {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	nonce := fmt.Sprintf("msg-nonce-%016d", messagingNonceSeq.Add(1))
	h := map[string]string{messaging.HeaderWorkspace: m.ws, messaging.HeaderTimestamp: ts, messaging.HeaderNonce: nonce,
		messaging.HeaderSignature: messaging.Sign([]byte(m.secret), ts, nonce, []byte(body))}
	for _, f := range mutate {
		f(h)
	}
	var hs []string
	for k, v := range h {
		hs = append(hs, k, v)
	}
	return m.tn.Do("POST", "/v1/integrations/messaging"+path, "", body, hs...)
}

func (m messagingClient) preflight(t *testing.T, number, ref string) messaging.Decision {
	t.Helper()
	r := m.send("/preflight", `{"destination_number":"`+number+`","country":"FR","channel":"sms","template_kind":"otp_login","message_reference":"`+ref+`"}`)
	if r.Status != 200 {
		t.Fatalf("preflight %s: %d %s", number, r.Status, r.Body)
	}
	var d messaging.Decision
	r.Decode(t, &d)
	return d
}

func (m messagingClient) event(t *testing.T, ref, status string) {
	t.Helper()
	if r := m.send("/events", `{"message_reference":"`+ref+`","status":"`+status+`"}`); r.Status != 200 {
		t.Fatalf("event %s %s: %d %s", ref, status, r.Status, r.Body)
	}
}

func TestMessagingPreflightThroughHTTP(t *testing.T) {
	tn := nodetest.Start(t)
	var ws, ws2 struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "messaging"}, &ws)
	tn.MustCreate("/workspaces", map[string]any{"name": "other"}, &ws2)
	base := "/workspaces/" + ws.ID + "/messaging"
	if r := tn.Admin("GET", base, nil); r.Status != 404 || r.ErrorCode(t) != "messaging-settings-not-found" {
		t.Fatalf("settings before any: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("PUT", base+"/policy", map[string]any{"policy": map[string]any{"block_seconds": 1}}); r.Status != 400 || r.ErrorCode(t) != "messaging-policy-invalid" {
		t.Fatalf("invalid policy: %d %s", r.Status, r.Body)
	}
	r := tn.Admin("PUT", base+"/policy", map[string]any{"policy": map[string]any{"conversion_min_sends": 5, "conversion_min_percent": 50, "prefix_limit": 1000, "allowed_countries": []string{"FR"}}})
	if r.Status != 200 {
		t.Fatalf("policy: %d %s", r.Status, r.Body)
	}
	var view struct {
		SecretsValid int    `json:"secrets_valid"`
		Secret       string `json:"secret"`
	}
	r.Decode(t, &view)
	if view.SecretsValid != 0 || view.Secret != "" {
		t.Fatalf("policy answer: %s", r.Body)
	}
	m := messagingClient{tn: tn, ws: ws.ID, secret: "none-yet"}
	if r := m.send("/preflight", `{}`); r.Status != 401 || r.ErrorCode(t) != "messaging-not-configured" {
		t.Fatalf("before a secret: %d %s", r.Status, r.Body)
	}
	r = tn.Admin("POST", base+"/rotate-secret", nil)
	r.Decode(t, &view)
	if r.Status != 200 || view.Secret == "" || view.SecretsValid != 1 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	m.secret = view.Secret
	if r := tn.Admin("GET", base, nil); r.Status != 200 || bytes.Contains(r.Body, []byte(view.Secret)) {
		t.Fatalf("read settings: %d %s", r.Status, r.Body)
	}

	t.Run("pumping is blocked while normal traffic passes", func(t *testing.T) {
		var blocked bool
		for i := 0; i < 8; i++ {
			ref := "ok-" + strconv.Itoa(i)
			if d := m.preflight(t, fmt.Sprintf("+3361111%04d", i), ref); d.Decision != messaging.Allow {
				t.Fatalf("normal send %d: %+v", i, d)
			}
			m.event(t, ref, messaging.StatusDelivered)
			m.event(t, ref, messaging.StatusVerified)
			d := m.preflight(t, fmt.Sprintf("+3362222%04d", i), "pump-"+strconv.Itoa(i))
			switch {
			case i < 5 && d.Decision != messaging.Allow:
				t.Fatalf("pumping send %d refused before enough evidence: %+v", i, d)
			case i == 5 && (d.Decision != messaging.Block || d.Reasons[0] != messaging.ReasonPumping):
				t.Fatalf("pumping send %d: %+v, want blocked as %s", i, d, messaging.ReasonPumping)
			case i > 5 && (d.Decision != messaging.Block || d.Reasons[0] != messaging.ReasonPrefixBlocked || d.RetryAfter < 3600):
				t.Fatalf("pumping send %d: %+v, want the prefix blocked for hours", i, d)
			}
			blocked = blocked || d.Decision == messaging.Block
		}
		if !blocked {
			t.Fatal("never blocked")
		}
	})

	t.Run("replay, content, bad input and other workspaces are refused", func(t *testing.T) {
		body := `{"destination_prefix":"+336333","country":"FR","channel":"sms","template_kind":"otp_signup","message_reference":"replay-1"}`
		var saved map[string]string
		if r := m.send("/preflight", body, func(h map[string]string) { saved = maps.Clone(h) }); r.Status != 200 {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		if r := m.send("/preflight", body, func(h map[string]string) {
			for k, v := range saved {
				h[k] = v
			}
		}); r.Status != 409 || r.ErrorCode(t) != "messaging-nonce-reused" {
			t.Fatalf("replay: %d %s", r.Status, r.Body)
		}
		cases := []struct {
			name, body string
			mutate     func(h map[string]string)
			status     int
			code       string
		}{
			{"a one-time code", `{"destination_prefix":"+336333","country":"FR","channel":"sms","template_kind":"otp_login","message_reference":"c1","code":"123456"}`, nil, 400, "messaging-content-refused"},
			{"a message body", `{"message":"Your code is 123456"}`, nil, 400, "messaging-content-refused"},
			{"an unknown field", `{"destination":"+33612345678"}`, nil, 400, "messaging-body-invalid"},
			{"a bad number", `{"destination_number":"0612345678","country":"FR","channel":"sms","template_kind":"otp_login","message_reference":"b1"}`, nil, 400, "messaging-destination-invalid"},
			{"a bad country", `{"destination_prefix":"+336333","country":"France","channel":"sms","template_kind":"otp_login","message_reference":"b2"}`, nil, 400, "messaging-country-invalid"},
			{"a bad channel", `{"destination_prefix":"+336333","country":"FR","channel":"email","template_kind":"otp_login","message_reference":"b3"}`, nil, 400, "messaging-channel-invalid"},
			{"a bad template kind", `{"destination_prefix":"+336333","country":"FR","channel":"sms","template_kind":"promo","message_reference":"b4"}`, nil, 400, "messaging-template-kind-invalid"},
			{"a stale timestamp", body, func(h map[string]string) { h[messaging.HeaderTimestamp] = strconv.FormatInt(time.Now().Unix()-400, 10) }, 401, "messaging-timestamp-stale"},
			{"a bad signature", body, func(h map[string]string) {
				h[messaging.HeaderSignature] = messaging.Sign([]byte("wrong"), "0", "0", nil)
			}, 401, "messaging-signature-invalid"},
			{"another workspace's id", body, func(h map[string]string) { h[messaging.HeaderWorkspace] = ws2.ID }, 401, "messaging-not-configured"},
			{"no workspace", body, func(h map[string]string) { delete(h, messaging.HeaderWorkspace) }, 401, "messaging-not-configured"},
		}
		for _, c := range cases {
			var mut []func(map[string]string)
			if c.mutate != nil {
				mut = append(mut, c.mutate)
			}
			if r := m.send("/preflight", c.body, mut...); r.Status != c.status || r.ErrorCode(t) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
			}
		}
		if r := m.send("/events", `{"message_reference":"never-sent","status":"verified"}`); r.Status != 404 || r.ErrorCode(t) != "messaging-message-unknown" {
			t.Errorf("event of an unknown message: %d %s", r.Status, r.Body)
		}
		r := m.send("/preflight", `{"destination_number":"+4915112345678","country":"DE","channel":"sms","template_kind":"otp_login","message_reference":"de-1"}`)
		var d messaging.Decision
		r.Decode(t, &d)
		if r.Status != 200 || d.Decision != messaging.Block || d.Reasons[0] != messaging.ReasonCountryNotPermitted {
			t.Errorf("a country outside the allow list: %d %s", r.Status, r.Body)
		}
	})

	if r := tn.Admin("DELETE", base, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := m.send("/preflight", `{}`); r.Status != 401 || r.ErrorCode(t) != "messaging-not-configured" {
		t.Fatalf("after delete: %d %s", r.Status, r.Body)
	}
}
