package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotSaveInspectRestoreThroughTheCLI runs the three commands as
// the operations guide shows them against one node, and the refusals of
// a damaged file and a wrong key.
func TestSnapshotSaveInspectRestoreThroughTheCLI(t *testing.T) {
	_, ctl, must := startCtlNode(t)
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("twelve chars or more\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must("workspaces", "create", "--name", "backed-up")
	file := filepath.Join(dir, "trustd.snap")
	if out := must("snapshot", "save", file, "--passphrase-file", pass); !strings.Contains(out, "saved "+file) {
		t.Fatalf("save: %s", out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot file mode: %v %v", fi.Mode(), err)
	}
	out := must("snapshot", "inspect", file, "--passphrase-file", pass)
	for _, want := range []string{"index", "term", "sha256", "AES-256-GCM", "workspaces", "signing_keys"} {
		if !strings.Contains(out, want) {
			t.Fatalf("inspect lacks %q:\n%s", want, out)
		}
	}
	if out := must("snapshot", "restore", file, "--passphrase-file", pass); !strings.Contains(out, "restored") {
		t.Fatalf("restore: %s", out)
	}
	if out := must("workspaces", "list"); !strings.Contains(out, "backed-up") {
		t.Fatalf("after restore:\n%s", out)
	}

	b, _ := os.ReadFile(file)
	cut, flipped, wrong := filepath.Join(dir, "cut"), filepath.Join(dir, "flipped"), filepath.Join(dir, "wrong")
	os.WriteFile(cut, b[:len(b)-10], 0o600)
	g := append([]byte(nil), b...)
	g[len(g)/2] ^= 1
	os.WriteFile(flipped, g, 0o600)
	os.WriteFile(wrong, []byte("another passphrase entirely"), 0o600)
	for _, tc := range []struct{ name, file, pass, want string }{
		{"a truncated file", cut, pass, "truncated"},
		{"a corrupted file", flipped, pass, "corrupted"},
		{"a wrong passphrase", file, wrong, "wrong key"},
	} {
		for _, verb := range []string{"inspect", "restore"} {
			if _, err := ctl("snapshot", verb, tc.file, "--passphrase-file", tc.pass); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: %v, want an error saying %q", verb, tc.name, err, tc.want)
			}
		}
	}
	if _, err := ctl("snapshot", "save", file); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("save without a key: %v", err)
	}
}
