package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestConsoleUserCommands(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c, _, err := applyWire(t, Empty(), &CreateWorkspace{Workspace: Workspace{ID: "w1"}}, &CreateWorkspace{Workspace: Workspace{ID: "w2"}})
	if err != nil {
		t.Fatal(err)
	}
	link := HashSecret("link-token")
	u := ConsoleUser{ID: "u1", WorkspaceID: "w1", Email: "ann@x.io", Role: "approver", LinkHash: link, LinkUntil: now.Add(15 * time.Minute)}
	c, _, err = applyWire(t, c, &CreateConsoleUser{User: u})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  Command
		want error
	}{
		{"an email is unique across workspaces", &CreateConsoleUser{User: ConsoleUser{ID: "u2", WorkspaceID: "w2", Email: "ann@x.io"}}, ErrConflict},
		{"a user needs an existing workspace", &CreateConsoleUser{User: ConsoleUser{ID: "u3", WorkspaceID: "nope", Email: "b@x.io"}}, ErrNotFound},
		{"another workspace cannot update the user", &UpdateConsoleUser{WorkspaceID: "w2", ID: "u1"}, ErrNotFound},
		{"another workspace cannot delete the user", &DeleteConsoleUser{WorkspaceID: "w2", ID: "u1"}, ErrNotFound},
		{"a wrong link logs nobody in", &UseConsoleLink{LinkHash: HashSecret("other"), At: now}, ErrNotFound},
		{"an expired link logs nobody in", &UseConsoleLink{LinkHash: link, At: now.Add(15 * time.Minute)}, ErrNotFound},
		{"the zero hash is never a link", &UseConsoleLink{At: now}, ErrNotFound},
	} {
		if _, _, err := applyWire(t, c, tc.cmd); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	c2, v, err := applyWire(t, c, &UseConsoleLink{LinkHash: link, At: now})
	if err != nil || v.(*ConsoleUser).ID != "u1" {
		t.Fatalf("link use: %v %v", v, err)
	}
	if _, _, err := applyWire(t, c2, &UseConsoleLink{LinkHash: link, At: now}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second use of a link: %v, want not found", err)
	}
	// Deleting the workspace deletes its users.
	c3, _, _ := applyWire(t, c, &DeleteWorkspace{ID: "w1"})
	if len(c3.ConsoleUsers) != 0 {
		t.Fatal("workspace delete kept its console users")
	}
	// The cap per workspace.
	cc := c
	for i := 1; i < MaxConsoleUsersPerWorkspace; i++ {
		cc, _, err = applyWire(t, cc, &CreateConsoleUser{User: ConsoleUser{ID: fmt.Sprint("c", i), WorkspaceID: "w1", Email: fmt.Sprint(i, "@x.io")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := applyWire(t, cc, &CreateConsoleUser{User: ConsoleUser{ID: "over", WorkspaceID: "w1", Email: "over@x.io"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("user over the cap: %v", err)
	}
	if _, _, err := applyWire(t, cc, &CreateConsoleUser{User: ConsoleUser{ID: "w2u", WorkspaceID: "w2", Email: "w2@x.io"}}); err != nil {
		t.Fatalf("the cap is per workspace: %v", err)
	}
	// Survives a snapshot.
	snap, _ := cc.MarshalSnapshot()
	r, err := UnmarshalSnapshot(snap)
	if err != nil || len(r.ConsoleUsers) != MaxConsoleUsersPerWorkspace || r.ConsoleUserByEmail("ann@x.io") == nil {
		t.Fatalf("snapshot: %v", err)
	}
}

func TestAuditRingIsBounded(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := Empty()
	for i := 0; i < MaxAuditEntries+10; i++ {
		c, _, _ = applyWire(t, c, &RecordAudit{Entry: AuditEntry{At: now, Operation: fmt.Sprint("op", i)}})
	}
	if len(c.Audit) != MaxAuditEntries || c.Audit[0].Operation != "op10" || c.Audit[len(c.Audit)-1].Seq != MaxAuditEntries+10 {
		t.Fatalf("ring: %d entries, first %s, last seq %d", len(c.Audit), c.Audit[0].Operation, c.Audit[len(c.Audit)-1].Seq)
	}
	c, _, _ = applyWire(t, c, &RecordAudit{Entry: AuditEntry{At: now.Add(AuditRetention + time.Second), Operation: "late"}})
	if len(c.Audit) != 1 || c.Audit[0].Operation != "late" {
		t.Fatalf("retention: %d entries", len(c.Audit))
	}
	snap, _ := c.MarshalSnapshot()
	if r, err := UnmarshalSnapshot(snap); err != nil || len(r.Audit) != 1 {
		t.Fatalf("audit snapshot: %v", err)
	}
}

// A record retried after an apply whose outcome was unknown (a leader
// change) lands once; a different change at the same instant is its own.
func TestARetriedAuditRecordLandsOnce(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	e := AuditEntry{At: now, Actor: "admin-token", Via: "api", Operation: "createSite", Method: "POST", Path: "/admin/v1/workspaces/w/sites", WorkspaceID: "w", Status: 201, RequestID: "r1"}
	c := Empty()
	c, _, _ = applyWire(t, c, &RecordAudit{Entry: e})
	c, v, _ := applyWire(t, c, &RecordAudit{Entry: e})
	if len(c.Audit) != 1 || v.(*AuditEntry).Seq != 1 {
		t.Fatalf("a retried record: %d entries", len(c.Audit))
	}
	other := e
	other.RequestID = "r2"
	c, _, _ = applyWire(t, c, &RecordAudit{Entry: other})
	if len(c.Audit) != 2 || c.Audit[1].Seq != 2 {
		t.Fatalf("another change: %d entries", len(c.Audit))
	}
}
