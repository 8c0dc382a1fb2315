package api_test

import (
	"fmt"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// Cloudflare's published Turnstile test secrets behave as documented on a
// --dev node and at the sandbox endpoints, never at a production node's
// /siteverify.
func TestTurnstileTestSecretsWorkInDevAndTheSandboxOnly(t *testing.T) {
	dev := nodetest.Start(t, func(c *node.Config) { c.Dev = true })
	prod := nodetest.Start(t)
	post := func(tn *nodetest.Node, path, secret string) map[string]any {
		t.Helper()
		r := tn.Do("POST", path, "", map[string]any{"secret": secret, "response": "XXXX.DUMMY.TOKEN.XXXX"})
		if r.Status != 200 {
			t.Fatalf("%s with %s: %d %s", path, secret, r.Status, r.Body)
		}
		var m map[string]any
		r.Decode(t, &m)
		return m
	}
	tests := []struct {
		secret  string
		success bool
		code    string
	}{
		{"1x0000000000000000000000000000000AA", true, ""},
		{"2x0000000000000000000000000000000AA", false, "invalid-input-response"},
		{"3x0000000000000000000000000000000AA", false, "timeout-or-duplicate"},
	}
	for _, path := range []string{"/v1/turnstile/v0/siteverify", "/v1/siteverify", "/v1/sandbox/siteverify"} {
		for _, tt := range tests {
			m := post(dev, path, tt.secret)
			if m["success"] != tt.success || (tt.code != "" && fmt.Sprint(m["error-codes"]) != "["+tt.code+"]") {
				t.Errorf("dev %s with %s: %v", path, tt.secret[:2], m)
			}
		}
	}
	// A production node honours them at the sandbox endpoint only.
	if m := post(prod, "/v1/sandbox/siteverify", tests[0].secret); m["success"] != true {
		t.Fatalf("production sandbox with the passing test secret: %v", m)
	}
	if r := prod.Do("POST", "/v1/siteverify", "", map[string]any{"secret": tests[0].secret, "response": "XXXX.DUMMY.TOKEN.XXXX"}); r.Status != 400 || r.ErrorCode(t) != "invalid-input-secret" {
		t.Fatalf("production /siteverify with a test secret: %d %s, want invalid-input-secret", r.Status, r.Body)
	}
	if m := post(prod, "/v1/turnstile/v0/siteverify", tests[0].secret); m["success"] != false {
		t.Fatalf("production Turnstile dialect with a test secret: %v", m)
	}
}
