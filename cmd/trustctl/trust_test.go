package main

import (
	"strings"
	"testing"
)

func TestTrustctlTrustPolicies(t *testing.T) {
	n, ctl, must := startCtlNode(t)
	must("workspaces", "create", "--name", "acme")
	var ws string
	for _, w := range n.Store().Catalog().Workspaces {
		ws = w.ID
	}
	if _, err := ctl("trust-policies", "create", "--workspace", ws, "--name", "bad", "--condition", `signals.failed_attempts_5m >= "x"`,
		"--reason-code", "r", "--outcome", "review"); err == nil || !strings.Contains(err.Error(), "invalid-trust-rule") || !strings.Contains(err.Error(), "no matching overload") {
		t.Fatalf("a bad rule: %v", err)
	}
	out := must("--json", "trust-policies", "create", "--workspace", ws, "--name", "big", "--condition", "request.transaction_amount >= 500000",
		"--reason-code", "high_value", "--outcome", "review")
	var id string
	for _, p := range n.Store().Catalog().TrustPolicies {
		id = p.ID
	}
	if !strings.Contains(out, `"mode": "observe"`) || id == "" {
		t.Fatalf("create printed %s", out)
	}
	out = must("trust-policies", "list", "--workspace", ws)
	if !strings.Contains(out, "big") || !strings.Contains(out, "builtin/new_device") || !strings.Contains(out, "built-in rules (active") {
		t.Fatalf("list:\n%s", out)
	}
	must("trust-policies", "update", id, "--workspace", ws, "--name", "big", "--condition", "request.transaction_amount >= 500000",
		"--reason-code", "high_value", "--outcome", "review", "--mode", "enforce")
	if out = must("trust-policies", "list", "--workspace", ws); !strings.Contains(out, "built-in rules (inactive") {
		t.Fatalf("list after enforcing:\n%s", out)
	}
	if out = must("trust-policies", "get", id, "--workspace", ws); !strings.Contains(out, "enforce") {
		t.Fatalf("get:\n%s", out)
	}
	must("trust-policies", "delete", id, "--workspace", ws)
	if _, err := ctl("trust-policies", "get", id, "--workspace", ws); err == nil || !strings.Contains(err.Error(), "trust-policy-not-found") {
		t.Fatalf("get after delete: %v", err)
	}
	if out = must("signing-keys", "rotate", "--purpose", "receipt"); !strings.Contains(out, "receipt") {
		t.Fatalf("rotate the receipt key: %s", out)
	}
}
