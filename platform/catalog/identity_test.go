package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func applyOne(t *testing.T, c *Catalog, cmd Command) (*Catalog, any, error) {
	t.Helper()
	b, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(cmd.Kind(), b)
	if err != nil {
		t.Fatal(err)
	}
	tx := Begin(c)
	v, err := dec.Apply(tx)
	if err != nil {
		return c, nil, err
	}
	return tx.Commit(c.Index + 1), v, nil
}

func TestIdentitySessionsCASCapAndRetention(t *testing.T) {
	c := Empty()
	c, _, _ = applyOne(t, c, &CreateWorkspace{Workspace: Workspace{ID: "ws"}})
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	sess := func(id string, at time.Time) IdentitySession {
		return IdentitySession{ID: id, WorkspaceID: "ws", Status: "created", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	}
	var err error
	c, _, err = applyOne(t, c, &PutIdentitySession{Session: sess("a", t0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := applyOne(t, c, &PutIdentitySession{Session: sess("a", t0)}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second create of one id: %v", err)
	}
	s := *c.IdentitySession("ws", "a")
	s.Status = "collecting"
	c2, _, err := applyOne(t, c, &PutIdentitySession{Session: s, ExpectVersion: 1})
	if err != nil || c2.IdentitySession("ws", "a").Version != 2 {
		t.Fatalf("a write at the read version: %v", err)
	}
	if _, _, err := applyOne(t, c2, &PutIdentitySession{Session: s, ExpectVersion: 1}); !errors.Is(err, ErrStaleVersion) {
		t.Fatalf("a write at a stale version: %v", err)
	}
	if c.IdentitySession("ws", "a").Status != "created" {
		t.Fatal("a transaction changed the catalog it started from")
	}
	// Fill the workspace: the next create is refused until retention passes.
	tx := Begin(c2)
	for i := 0; len(tx.identityOf("ws").Sessions) < MaxIdentitySessionsPerWorkspace; i++ {
		tx.identityOf("ws").Sessions[fmt.Sprint(i)] = &IdentitySession{ID: fmt.Sprint(i), WorkspaceID: "ws", Status: "collecting", ExpiresAt: t0.Add(time.Hour)}
	}
	full := tx.Commit(c2.Index + 1)
	if _, _, err := applyOne(t, full, &PutIdentitySession{Session: sess("b", t0.Add(time.Minute))}); !errors.Is(err, ErrIdentitySessionsFull) {
		t.Fatalf("create over the cap: %v", err)
	}
	later := t0.Add(time.Hour + IdentitySessionRetention + time.Minute)
	after, _, err := applyOne(t, full, &PutIdentitySession{Session: sess("b", later)})
	if err != nil || len(after.Identity["ws"].Sessions) != 1 {
		t.Fatalf("create after retention: %v", err)
	}
	// A session in manual review is never pruned by time.
	r := sess("r", t0)
	r.Status = "manual_review"
	c3, _, _ := applyOne(t, c2, &PutIdentitySession{Session: r})
	c3, _, _ = applyOne(t, c3, &PutIdentitySession{Session: sess("x", later)})
	if c3.IdentitySession("ws", "r") == nil || c3.IdentitySession("ws", "a") != nil {
		t.Fatal("retention pruned a session in review, or kept an expired one")
	}
	// Deleting the workspace removes its sessions and cases.
	c3, _, _ = applyOne(t, c3, &DeleteWorkspace{ID: "ws"})
	if c3.Identity["ws"] != nil {
		t.Fatal("workspace delete left identity records")
	}
}
