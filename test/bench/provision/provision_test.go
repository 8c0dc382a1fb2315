package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trustd/trustd/test/bench/internal/faketrustd"
)

func mustNewAdmin(t *testing.T, base, token string) *Admin {
	t.Helper()
	a, err := NewAdmin(base, token)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSetupCreatesAndTeardownDeletes(t *testing.T) {
	fake := faketrustd.Start(t, "admin-tok")
	a := mustNewAdmin(t, fake.URL, "admin-tok")
	env, err := a.Setup(context.Background(), []PolicySpec{BenchPolicy("subject", 10), BenchPolicy("device", 10)})
	if err != nil {
		t.Fatal(err)
	}
	if env.Site.Secret == "" || env.Site.SiteKey == "" || len(env.Policies) != 2 {
		t.Fatalf("incomplete env %+v", env)
	}
	if !slices.Contains(fake.Workspaces(), env.Workspace.ID) {
		t.Fatalf("workspace %s not created", env.Workspace.ID)
	}
	if err := a.Teardown(env); err != nil {
		t.Fatal(err)
	}
	if len(fake.Workspaces()) != 0 || !slices.Equal(fake.Deleted(), []string{env.Workspace.ID}) {
		t.Fatalf("workspace not deleted: left %v deleted %v", fake.Workspaces(), fake.Deleted())
	}
}

func TestAWrongTokenIsAStatusError(t *testing.T) {
	fake := faketrustd.Start(t, "admin-tok")
	_, err := mustNewAdmin(t, fake.URL, "wrong").Setup(context.Background(), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("want a 401 StatusError, got %v", err)
	}
}

func TestAFailedSetupDeletesTheWorkspace(t *testing.T) {
	fake := faketrustd.Start(t, "admin-tok")
	a := mustNewAdmin(t, fake.URL, "admin-tok")
	// Break the site call by pointing the second request at a missing route.
	a.base = fake.URL
	bad := PolicySpec{Name: "x"}
	env, err := a.Setup(context.Background(), []PolicySpec{bad})
	if err != nil || env == nil {
		t.Fatalf("the fake accepts any policy: %v", err)
	}
	_ = a.Teardown(env)

	_, err = (&Admin{base: fake.URL + "/broken", token: "admin-tok", hc: a.hc}).Setup(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error from a broken base")
	}
	if len(fake.Workspaces()) != 0 {
		t.Fatalf("workspaces left behind: %v", fake.Workspaces())
	}
}

func TestNoTokenIsRefused(t *testing.T) {
	if _, err := NewAdmin("http://127.0.0.1:1", ""); !errors.Is(err, ErrNoToken) {
		t.Fatalf("want ErrNoToken, got %v", err)
	}
}

func TestReadCredentials(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dev-credentials.json")
	if err := os.WriteFile(p, []byte(`{"admin_token":"t0k","api_base":"http://127.0.0.1:8080"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCredentials(p)
	if err != nil || c.AdminToken != "t0k" || c.APIBase != "http://127.0.0.1:8080" {
		t.Fatalf("got %+v, %v", c, err)
	}
	if _, err := ReadCredentials(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("want an error for a missing file")
	}
}
