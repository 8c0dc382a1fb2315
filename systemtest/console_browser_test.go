package systemtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConsoleInBrowser drives the workspace console of a real `trustd
// --dev` node in headless Chromium (browser/console.test.mjs): login, a
// site created, an observed policy promoted, axe-core on every page,
// screenshots in systemtest/artifacts.
func TestConsoleInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "axe-core", "axe.min.js")); err != nil {
		t.Skip("skipping console browser test: systemtest/browser/node_modules/axe-core is missing (run systemtest/browser/setup.sh)")
	}
	n := startDevNode(t)
	runNodeTest(t, nodeBin, "console.test.mjs", "TRUSTD_API="+n.APIBase, "TRUSTD_SECRET="+n.Secret,
		"TRUSTD_ADMIN_TOKEN="+n.AdminToken, "TRUSTD_WORKSPACE="+n.WorkspaceID)
}
