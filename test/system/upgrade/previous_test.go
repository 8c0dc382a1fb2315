package upgrade

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A clone that lacks the previous release (a shallow one) fails the
// rolling-upgrade test with a message saying what to do, never a skip.
func TestAShallowCloneFailsWithAClearMessage(t *testing.T) {
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	origin := t.TempDir()
	git(origin, "init", "-q")
	if err := os.MkdirAll(filepath.Join(origin, "deploy", "upgrade"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(origin, "deploy", "upgrade", "PREVIOUS"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		git(origin, "add", "-A")
		git(origin, "commit", "-q", "-m", "step")
	}
	write("# nothing yet\n")
	previous := git(origin, "rev-parse", "HEAD")
	write("# the release before\n" + previous + "\n")

	// The full clone resolves it.
	if got, err := resolvePrevious(origin); err != nil || got != previous {
		t.Fatalf("full history: %q, %v; want %s", got, err, previous)
	}
	// A clone of depth 1 has only the last commit.
	shallow := filepath.Join(t.TempDir(), "shallow")
	git(t.TempDir(), "clone", "-q", "--depth", "1", "file://"+origin, shallow)
	_, err := resolvePrevious(shallow)
	if err == nil {
		t.Fatal("a shallow clone resolved a commit it does not hold")
	}
	for _, want := range []string{previous, "not in this clone's history", "shallow clone: true", "git fetch --unshallow"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error does not say %q: %v", want, err)
		}
	}
}
