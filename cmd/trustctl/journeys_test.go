package main

import (
	"strings"
	"testing"
)

func TestTrustctlJourneys(t *testing.T) {
	n, ctl, must := startCtlNode(t)
	must("workspaces", "create", "--name", "acme")
	var ws string
	for _, w := range n.Store().Catalog().Workspaces {
		ws = w.ID
	}
	put := []string{"journeys", "put", "pay", "--workspace", ws, "--name", "Payment", "--method", "device_authorization",
		"--requested-assurance", "standard", "--requirements", `{"identity":true,"liveness":false,"authorization":true,"operation_binding":true}`,
		"--consent", `{"required":true,"version":"v1"}`}
	out := must(append([]string{"--json"}, put...)...)
	if !strings.Contains(out, `"policy_version": 1`) {
		t.Fatalf("put printed %s", out)
	}
	if out = must(append([]string{"--json"}, put...)...); !strings.Contains(out, `"policy_version": 2`) {
		t.Fatalf("second put printed %s", out)
	}
	if out = must("journeys", "list", "--workspace", ws); !strings.Contains(out, "pay") || !strings.Contains(out, "device_authorization") {
		t.Fatalf("list:\n%s", out)
	}
	if _, err := ctl("journeys", "put", "bad", "--workspace", ws, "--name", "Bad", "--method", "human_verification", "--requested-assurance", "high"); err == nil || !strings.Contains(err.Error(), "invalid-journey") {
		t.Fatalf("an impossible journey: %v", err)
	}
	if out = must("journeys", "erase-subject", "--workspace", ws, "--subject-id", "alice"); !strings.Contains(out, "0") {
		t.Fatalf("erase:\n%s", out)
	}
	must("journeys", "delete", "pay", "--workspace", ws)
	if _, err := ctl("journeys", "get", "pay", "--workspace", ws); err == nil || !strings.Contains(err.Error(), "journey-not-found") {
		t.Fatalf("get after delete: %v", err)
	}
}
