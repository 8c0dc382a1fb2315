package persistence

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/trustd/trustd/platform/catalog"
)

// modes lists every file and directory under root with a mode that lets
// anyone but the owner in.
func openModes(t *testing.T, root string) []string {
	t.Helper()
	var open []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			open = append(open, path+" "+info.Mode().Perm().String())
		}
		return nil
	})
	return open
}

func TestSnapshotsAndAnOldDataDirAreReadableByTheOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenStore(t, dir)
	waitLeader(t, s)
	if _, err := s.Apply(context.Background(), &catalog.AddSigningKey{Key: catalog.SigningKey{ID: "k1", Purpose: "token", Secret: []byte("0123456789abcdef0123456789abcdef")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // takes a snapshot
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "raft", "snapshots", "*", "state.bin"))
	if len(snaps) == 0 {
		t.Fatal("no snapshot was taken on close")
	}
	if open := openModes(t, filepath.Join(dir, "raft")); len(open) > 0 {
		t.Fatalf("readable by others: %v", open)
	}
	// A data dir of an older version, with world-readable snapshots, is
	// tightened when the store opens it.
	for _, f := range snaps {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s2 := mustOpenStore(t, dir)
	defer s2.Close()
	if open := openModes(t, filepath.Join(dir, "raft")); len(open) > 0 {
		t.Fatalf("after reopening, readable by others: %v", open)
	}
}
