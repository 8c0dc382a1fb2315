package catalog

import (
	"errors"
	"testing"
	"time"
)

func apply(t *testing.T, c *Catalog, cmds ...Command) (*Catalog, []error) {
	t.Helper()
	tx := Begin(c)
	var errs []error
	for _, cmd := range cmds {
		// Every command must survive its wire encoding unchanged.
		body, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(cmd.Kind(), body)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dec.Apply(tx)
		errs = append(errs, err)
	}
	return tx.Commit(c.Index + 1), errs
}

func TestCommandsAndIndexes(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c, errs := apply(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme"}},
		&CreateSite{Site: Site{ID: "s1", WorkspaceID: "w1", SiteKey: "key1", SecretHash: HashSecret("secret1"), Hostnames: []string{"a.example"}}},
		&CreateSite{Site: Site{ID: "s2", WorkspaceID: "nope"}},
		&CreateMobileApp{App: MobileApp{ID: "m1", WorkspaceID: "w1", Platform: "ios", AppID: "com.a", SecretHash: HashSecret("ms1")}},
		&CreateMobileApp{App: MobileApp{ID: "m2", WorkspaceID: "w1", Platform: "ios", AppID: "com.a"}},
		&CreateCredential{Credential: Credential{ID: "c1", WorkspaceID: "w1", Scopes: []string{"site.verify"}, TokenHash: HashSecret("cred1")}},
	)
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrNotFound) || errs[3] != nil || !errors.Is(errs[4], ErrConflict) || errs[5] != nil {
		t.Fatalf("errors = %v", errs)
	}
	if c.SiteByKey("key1") == nil || c.SiteBySecret("secret1", now) == nil || c.SiteBySecret("wrong", now) != nil {
		t.Fatal("site indexes")
	}
	if c.AppBySecret("ms1") == nil || c.CredentialByToken("cred1") == nil || c.CredentialByToken("x") != nil {
		t.Fatal("app and credential indexes")
	}
	if !c.SiteByKey("key1").AllowsHost("A.EXAMPLE") || c.SiteByKey("key1").AllowsHost("b.a.example") {
		t.Fatal("hostnames match exactly, case-insensitively, never by suffix")
	}

	c2, errs := apply(t, c, &RotateSiteSecret{WorkspaceID: "w1", ID: "s1", NewHash: HashSecret("secret2"), GraceUntil: now.Add(time.Hour)})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if c2.SiteBySecret("secret1", now) == nil || c2.SiteBySecret("secret2", now) == nil {
		t.Fatal("during the grace period both secrets work")
	}
	if c2.SiteBySecret("secret1", now.Add(2*time.Hour)) != nil {
		t.Fatal("after the grace period the old secret is refused")
	}
	if c.SiteBySecret("secret2", now) != nil {
		t.Fatal("an older catalog version must not change")
	}

	c3, errs := apply(t, c2, &DeleteWorkspace{ID: "w1"}, &DeleteWorkspace{ID: "w1"})
	if errs[0] != nil || !errors.Is(errs[1], ErrNotFound) {
		t.Fatalf("delete errors = %v", errs)
	}
	if len(c3.Sites)+len(c3.MobileApps)+len(c3.Credentials) != 0 || c3.SiteByKey("key1") != nil {
		t.Fatal("deleting a workspace removes what belongs to it")
	}
	if len(c2.Sites) != 1 {
		t.Fatal("the previous version keeps its tables")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	c, _ := apply(t, Empty(),
		&SetAdminToken{Hash: HashSecret("adm")},
		&SetAdminToken{Hash: HashSecret("other")},
		&AddSigningKey{Key: SigningKey{ID: "k1", Purpose: KeyLive, Secret: []byte("s"), CreatedAt: time.Unix(1, 0)}},
		&CreateWorkspace{Workspace: Workspace{ID: "w1", Name: "acme", ScopeKey: []byte{1, 2}}},
		&CreateSite{Site: Site{ID: "s1", WorkspaceID: "w1", SiteKey: "key1", SecretHash: HashSecret("secret1")}},
	)
	b, err := c.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.CheckAdminToken("adm") || r.CheckAdminToken("other") {
		t.Fatal("the first admin token wins and survives a snapshot")
	}
	if r.SigningKey(KeyLive) == nil || r.SiteByKey("key1") == nil || r.SiteBySecret("secret1", time.Now()) == nil || string(r.Workspaces["w1"].ScopeKey) != "\x01\x02" {
		t.Fatal("snapshot lost state or indexes")
	}
	if _, err := Decode("no.such.kind", []byte("{}")); err == nil {
		t.Fatal("an unknown command kind must be an error, not a panic")
	}
}
