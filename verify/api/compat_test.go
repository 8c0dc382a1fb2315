package api

import (
	"bytes"
	"mime/multipart"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
)

// The request shapes popular server libraries send:
//   - Turnstile: Cloudflare's documented examples post FormData (multipart)
//     or JSON {secret, response, remoteip, idempotency_key}; Go and PHP
//     clients post application/x-www-form-urlencoded with the same names.
//   - reCAPTCHA: google/recaptcha (PHP) posts form-encoded secret,
//     response, remoteip and version; older clients put the fields in the
//     query string of a POST.

func multipartBody(t *testing.T, fields ...string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.String()
}

func TestTurnstileDialect(t *testing.T) {
	e := mustNewHVEnv(t)
	path := "/v1/turnstile/v0/siteverify"
	strictTurnstile := func(t *testing.T, r resp) map[string]any {
		t.Helper()
		var typed verify.TurnstileResult
		if r.status != 200 || json.Unmarshal(r.body, &typed, json.RejectUnknownMembers(true)) != nil {
			t.Fatalf("not a Turnstile answer: %d %s", r.status, r.body)
		}
		return r.json(t)
	}
	tok := e.tokenFor("login", humanSignals())
	m := strictTurnstile(t, e.verify(path, "secret", e.secret, "response", tok, "remoteip", "203.0.113.7", "idempotency_key", "a5b4c3d2-0000-4000-8000-000000000001"))
	ts, _ := time.Parse(time.RFC3339, m["challenge_ts"].(string))
	if m["success"] != true || len(codesOf(m)) != 0 || m["hostname"] != testHost || m["action"] != "login" || m["cdata"] != "sess-1" || ts.IsZero() {
		t.Fatalf("form-encoded success: %v", m)
	}
	if _, ok := m["score"]; ok {
		t.Fatal("Turnstile answers carry no score")
	}
	// Multipart, as FormData; a duplicate.
	ct, body := multipartBody(t, "secret", e.secret, "response", tok)
	if m := strictTurnstile(t, e.do(req{path: path, ctype: ct, body: body})); m["success"] != false || !slices.Equal(codesOf(m), []string{"timeout-or-duplicate"}) {
		t.Fatalf("multipart duplicate: %v", m)
	}
	// JSON with an unknown field and an empty remoteip.
	tok = e.tokenFor("login", humanSignals())
	r := e.do(req{path: path, ctype: "application/json", body: `{"secret":"` + e.secret + `","response":"` + tok + `","remoteip":"","sitekey":"ignored"}`})
	if m := strictTurnstile(t, r); m["success"] != true {
		t.Fatalf("JSON success: %v", m)
	}
	// Request errors are HTTP 200 in the dialect.
	tests := []struct {
		name string
		r    resp
		code string
	}{
		{"no secret", e.verify(path, "response", "x"), "missing-input-secret"},
		{"a bad secret", e.verify(path, "secret", "nope", "response", "x"), "invalid-input-secret"},
		{"no response", e.verify(path, "secret", e.secret), "missing-input-response"},
		{"a forged token", e.verify(path, "secret", e.secret, "response", token.LivePrefix+"AAAAAAAA"), "invalid-input-response"},
		{"broken JSON", e.do(req{path: path, ctype: "application/json", body: "{"}), "bad-request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := strictTurnstile(t, tc.r)
			if m["success"] != false || !slices.Equal(codesOf(m), []string{tc.code}) {
				t.Fatalf("%v, want %s", m, tc.code)
			}
		})
	}
}

func TestRecaptchaDialect(t *testing.T) {
	e := mustNewHVEnv(t)
	path := "/v1/recaptcha/api/siteverify"
	strictRecaptcha := func(t *testing.T, r resp) map[string]any {
		t.Helper()
		var typed verify.RecaptchaResult
		if r.status != 200 || json.Unmarshal(r.body, &typed, json.RejectUnknownMembers(true)) != nil {
			t.Fatalf("not a reCAPTCHA answer: %d %s", r.status, r.body)
		}
		return r.json(t)
	}
	tok := e.tokenFor("login", humanSignals())
	// google/recaptcha's PHP client: form-encoded, with its version field.
	m := strictRecaptcha(t, e.verify(path, "secret", e.secret, "response", tok, "remoteip", "203.0.113.7", "version", "php_1.3.0"))
	if m["success"] != true || m["hostname"] != testHost {
		t.Fatalf("success: %v", m)
	}
	if _, ok := m["error-codes"]; ok {
		t.Fatal("reCAPTCHA omits error-codes on success")
	}
	if _, ok := m["score"]; ok {
		t.Fatal("a checkbox (v2-style) answer carries no score")
	}
	if _, err := time.Parse(time.RFC3339, m["challenge_ts"].(string)); err != nil {
		t.Fatalf("challenge_ts is not RFC 3339: %v", m["challenge_ts"])
	}
	// Fields in the query string of a POST.
	r := e.do(req{path: path + "?secret=" + urlEscape(e.secret) + "&response=" + urlEscape(tok)})
	if m := strictRecaptcha(t, r); m["success"] != false || !slices.Equal(codesOf(m), []string{"timeout-or-duplicate"}) {
		t.Fatalf("query-string duplicate: %v", m)
	}
	// Score modes answer score and action, as v3 does.
	sm := e.mint(func(tr *token.Response) { tr.Mode, tr.Score = token.ModeScoreBased, 700 })
	m = strictRecaptcha(t, e.verify(path, "secret", e.secret, "response", sm))
	if m["success"] != true || m["score"].(float64) != 0.7 || m["action"] != "login" {
		t.Fatalf("score mode: %v", m)
	}
	if m := strictRecaptcha(t, e.verify(path, "response", "x")); !slices.Equal(codesOf(m), []string{"missing-input-secret"}) {
		t.Fatalf("missing secret: %v", m)
	}
}

func TestRemoteIPIsASignalInTheDialectsAndARuleNatively(t *testing.T) {
	e := mustNewHVEnv(t)
	other := "198.51.100.99" // e.g. a proxy's address sent by a library from X-Forwarded-For
	tok := e.mint(nil)
	if m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", tok, "remoteip", other)); !slices.Equal(codesOf(m), []string{"remoteip-mismatch"}) {
		t.Fatalf("native siteverify with another remoteip: %v, want remoteip-mismatch", m)
	}
	tok = e.mint(nil)
	if m := e.verify("/v1/turnstile/v0/siteverify", "secret", e.secret, "response", tok, "remoteip", other).json(t); m["success"] != true {
		t.Fatalf("Turnstile dialect with another remoteip: %v, want success (a signal, as Cloudflare documents)", m)
	}
	// A stock v3 backend (recaptcha-go, @nestlab/google-recaptcha,
	// better-auth) rejects below 0.5: a proxy's address lowers a human's
	// score a little and never below that threshold.
	for _, tc := range []struct {
		name  string
		milli uint16
		want  float64
	}{
		{"a clear human behind a proxy keeps a passing score", 900, 0.8},
		{"a human just above 0.5 behind a proxy stays at 0.5", 550, 0.5},
		{"a low score behind a proxy is not raised", 200, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := e.mint(func(tr *token.Response) { tr.Mode, tr.Score = token.ModeScoreBased, tc.milli })
			m := e.verify("/v1/recaptcha/api/siteverify", "secret", e.secret, "response", sm, "remoteip", other).json(t)
			if m["success"] != true || m["score"].(float64) != tc.want {
				t.Fatalf("reCAPTCHA dialect with another remoteip: %v, want success with score %v", m, tc.want)
			}
			if tc.milli >= 500 && m["score"].(float64) < 0.5 {
				t.Fatalf("the remoteip signal alone failed a human at minScore 0.5: %v", m)
			}
		})
	}
}
