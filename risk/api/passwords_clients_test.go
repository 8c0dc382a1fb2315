package api_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientsDir holds the npm range clients, pinned by its package-lock.json
// and installed by its setup.sh (test.sh runs it).
const clientsDir = "../../test/system/passwords"

// TestPasswordRangeWithUnmodifiedNPMClients points the hibp and
// @zxcvbn-ts/matcher-pwned packages, unchanged, at a real node: the
// compatibility claim of the GET range is what they accept.
func TestPasswordRangeWithUnmodifiedNPMClients(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping npm client test: node is not installed (run test/system/passwords/setup.sh)")
	}
	for _, pkg := range []string{"hibp", "@zxcvbn-ts/core", "@zxcvbn-ts/matcher-pwned"} {
		if _, err := os.Stat(filepath.Join(clientsDir, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("skipping npm client test: %s is not installed (run test/system/passwords/setup.sh)", pkg)
		}
	}
	e := startPasswordEnv(t)
	expect, _ := json.Marshal(map[string]uint32{"password": e.counts["password"], "123456": e.counts["123456"],
		"hunter2": e.counts["hunter2"], "correct horse battery staple": e.counts["correct horse battery staple"]})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "clients.mjs")
	cmd.Dir = clientsDir
	cmd.Env = append(os.Environ(),
		"TRUSTD_RANGE_BASE="+e.N.APIURL()+"/v1/passwords/"+e.siteKey,
		"TRUSTD_UNKNOWN_BASE="+e.N.APIURL()+"/v1/passwords/no-such-site-key",
		"TRUSTD_EXPECT="+string(expect))
	out, err := cmd.CombinedOutput()
	t.Logf("node clients.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the npm clients failed: %v", err)
	}
	if !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatal("the client script did not report its result")
	}
}
