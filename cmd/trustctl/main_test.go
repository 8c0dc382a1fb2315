package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
)

func TestTrustctlAgainstARealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	ctl := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		all := append([]string{"--addr", n.APIURL(), "--admin-token", n.AdminToken()}, args...)
		if err := run(all, &out); err != nil {
			t.Fatalf("trustctl %v: %v", args, err)
		}
		return out.String()
	}
	if out := ctl("signing-keys", "rotate"); !strings.Contains(out, "signing") {
		t.Fatalf("signing-keys rotate printed %s", out)
	}
	if out := ctl("signing-keys", "list"); !strings.Contains(out, "verify_only") || strings.Count(out, "signing") < 1 {
		t.Fatalf("signing-keys list after a rotation:\n%s", out)
	}
	out := ctl("--json", "workspaces", "create", "--name", "acme")
	if !strings.Contains(out, `"name": "acme"`) {
		t.Fatalf("create workspace printed %s", out)
	}
	var wsID string
	for _, w := range n.Store().Catalog().Workspaces {
		wsID = w.ID
	}
	out = ctl("sites", "create", "--workspace", wsID, "--name", "shop", "--hostnames", "shop.example.com,www.example.com", "--score-threshold", "0.7")
	if !strings.Contains(out, "SITE_ID") || !strings.Contains(out, "shop.example.com,www.example.com") || !strings.Contains(out, "sk_live_") {
		t.Fatalf("create site table:\n%s", out)
	}
	out = ctl("sites", "list", "--workspace", wsID)
	if !strings.Contains(out, "shop") || strings.Contains(out, "sk_live_") {
		t.Fatalf("list sites table:\n%s", out)
	}
	out = ctl("credentials", "create", "--workspace", wsID, "--name", "be", "--scopes", "site.verify,identity.verify")
	if !strings.Contains(out, "site.verify,identity.verify") {
		t.Fatalf("create credential:\n%s", out)
	}
	out = ctl("--json", "policies", "create", "--workspace", wsID, "--name", "otp", "--target", `{"type":"workspace"}`,
		"--action-pattern", "otp.*", "--scope", "subject", "--bucket", `{"capacity":5,"refill_amount":1,"refill_interval_seconds":60}`,
		"--mode", "observe", "--enforce-percentage", "25")
	if !strings.Contains(out, `"enforce_percentage": 25`) {
		t.Fatalf("create policy printed %s", out)
	}
	var policyID string
	for id := range n.Store().Catalog().RateLimitPolicies {
		policyID = id
	}
	if out := ctl("policies", "list", "--workspace", wsID); !strings.Contains(out, "otp.*") || !strings.Contains(out, "observe") {
		t.Fatalf("list policies:\n%s", out)
	}
	if out := ctl("policies", "stats", policyID, "--workspace", wsID); !strings.Contains(out, "OBSERVED_WOULD_THROTTLE") {
		t.Fatalf("policy stats:\n%s", out)
	}
	if out := ctl("api-protection-policies", "create", "--workspace", wsID, "--name", "orders", "--path-pattern", "/orders/*"); !strings.Contains(out, "/orders/*") {
		t.Fatalf("create API Protection policy:\n%s", out)
	}
	out = ctl("agents", "create", "--workspace", wsID, "--name", "bot", "--allowed-actions", "invoice.*", "--allowed-scopes", "billing")
	if !strings.Contains(out, "ags_") || !strings.Contains(out, "invoice.*") {
		t.Fatalf("create agent:\n%s", out)
	}
	var agentID string
	for id := range n.Store().Catalog().Agents {
		agentID = id
	}
	if out := ctl("agents", "suspend", agentID, "--workspace", wsID); !strings.Contains(out, "suspended") {
		t.Fatalf("suspend agent:\n%s", out)
	}
	if out := ctl("agents", "rotate-secret", agentID, "--workspace", wsID, "--overlap-seconds", "0"); !strings.Contains(out, "ags_") {
		t.Fatalf("rotate agent secret:\n%s", out)
	}
	if out := ctl("agents", "list", "--workspace", wsID); !strings.Contains(out, "bot") || strings.Contains(out, "ags_") {
		t.Fatalf("list agents:\n%s", out)
	}
	if out := ctl("--json", "approvals", "list", "--workspace", wsID); !strings.Contains(out, `"approvals": []`) {
		t.Fatalf("list approvals:\n%s", out)
	}
	if out := ctl("agents", "delete", agentID, "--workspace", wsID); !strings.Contains(out, agentID) || !strings.Contains(out, "APPROVALS_DELETED") {
		t.Fatalf("delete agent:\n%s", out)
	}
	if _, ok := n.Store().Catalog().Agents[agentID]; ok {
		t.Fatal("trustctl agents delete left the agent")
	}
	if out := ctl("workspaces", "delete", wsID); strings.TrimSpace(out) != "ok" {
		t.Fatalf("delete printed %q", out)
	}
	var buf bytes.Buffer
	err = run([]string{"--addr", n.APIURL(), "--admin-token", "wrong", "workspaces", "list"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token must fail with the API's 401, got %v", err)
	}
}
