package upgrade

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Building the two trustd binaries the upgrade test runs.

// repoRoot is the root of the git work tree the test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").CombinedOutput()
	if err != nil {
		t.Fatalf("the rolling-upgrade test builds the previous release from git and needs a git clone of trustd: git rev-parse --show-toplevel: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// previousRelease resolves the commit deploy/upgrade/PREVIOUS names, or
// fails the test saying what to do: the policy is not held if the test
// cannot run, so a clone without that commit fails rather than skips.
func previousRelease(t *testing.T, root string) string {
	t.Helper()
	commit, err := resolvePrevious(root)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

func resolvePrevious(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "upgrade", "PREVIOUS"))
	if err != nil {
		return "", err
	}
	var ref string
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			ref = line
			break
		}
	}
	if ref == "" {
		return "", errors.New("deploy/upgrade/PREVIOUS names no commit")
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
	if err != nil {
		shallow, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output()
		return "", fmt.Errorf("the previous release %s (deploy/upgrade/PREVIOUS) is not in this clone's history (shallow clone: %s): "+
			"the rolling-upgrade test builds it from git; fetch the full history (git fetch --unshallow) and run it again",
			ref, strings.TrimSpace(string(shallow)))
	}
	return strings.TrimSpace(string(out)), nil
}

// buildPrevious extracts commit's tree (git archive: no worktree, nothing
// written to the repository) and builds its trustd, once per run. The
// tree goes to a directory named for the commit under the user's cache
// directory, reused by later runs, so the Go build cache (which keys on a
// package's directory) serves the previous release's packages again.
func buildPrevious(t *testing.T, root, commit string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	src := filepath.Join(cache, "trustd-systemtest", "previous-"+commit)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(src), "extract-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		archive := exec.Command("bash", "-c", `set -o pipefail; git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "archive", root, commit, tmp)
		if out, err := archive.CombinedOutput(); err != nil {
			t.Fatalf("git archive %s: %v\n%s", commit, err, out)
		}
		// Whole or not at all: a run killed mid-extraction leaves no
		// half tree under the final name.
		if err := os.Rename(tmp, src); err != nil && !errors.Is(err, fs.ErrExist) {
			if _, serr := os.Stat(filepath.Join(src, "go.mod")); serr != nil {
				t.Fatalf("keep the previous release's tree: %v", err)
			}
		}
	}
	return goBuild(t, src)
}

func buildCurrent(t *testing.T, root string) string { t.Helper(); return goBuild(t, root) }

func goBuild(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trustd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/trustd")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trustd in %s: %v\n%s", dir, err, out)
	}
	return bin
}
