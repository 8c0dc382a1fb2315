package main

import (
	"strings"
	"testing"
)

func TestTrustctlConsoleUsersAndAudit(t *testing.T) {
	n, ctl, must := startCtlNode(t)
	must("workspaces", "create", "--name", "acme")
	var ws string
	for id := range n.Store().Catalog().Workspaces {
		ws = id
	}
	out := must("console-users", "create", "--workspace", ws, "--email", "ann@example.com", "--role", "approver")
	if !strings.Contains(out, "/console/link?t=") || !strings.Contains(out, "expires 15 minutes after it was issued") {
		t.Fatalf("create without a password prints a one-time link and how long it lasts:\n%s", out)
	}
	u := n.Store().Catalog().ConsoleUserByEmail("ann@example.com")
	if u == nil || u.Role != "approver" || u.PasswordHash != "" {
		t.Fatalf("stored user: %+v", u)
	}
	if out := must("console-users", "list", "--workspace", ws); !strings.Contains(out, "ann@example.com") || strings.Contains(out, "/console/link") {
		t.Fatalf("list shows the user and no link:\n%s", out)
	}
	if out := must("console-users", "link", u.ID, "--workspace", ws); !strings.Contains(out, "/console/link?t=") || !strings.Contains(out, "15 minutes") {
		t.Fatalf("link:\n%s", out)
	}
	must("console-users", "update", u.ID, "--workspace", ws, "--role", "viewer", "--password", "a long password")
	if u := n.Store().Catalog().ConsoleUserByEmail("ann@example.com"); u.Role != "viewer" || !strings.HasPrefix(u.PasswordHash, "$argon2id$") {
		t.Fatalf("after update: role %s hash %.10s", u.Role, u.PasswordHash)
	}
	if _, err := ctl("console-users", "create", "--workspace", ws, "--email", "bad", "--role", "viewer"); err == nil || !strings.Contains(err.Error(), "invalid-email") {
		t.Fatalf("bad email: %v", err)
	}
	out = must("audit", "list", "--workspace", ws)
	for _, op := range []string{"createConsoleUser", "issueConsoleSignInLink", "updateConsoleUser"} {
		if !strings.Contains(out, op) {
			t.Fatalf("audit list lacks %s:\n%s", op, out)
		}
	}
	if out := must("audit", "list"); !strings.Contains(out, "createWorkspace") {
		t.Fatalf("cluster-wide audit lacks createWorkspace:\n%s", out)
	}
	must("console-users", "delete", u.ID, "--workspace", ws)
	if n.Store().Catalog().ConsoleUserByEmail("ann@example.com") != nil {
		t.Fatal("delete kept the user")
	}
}
