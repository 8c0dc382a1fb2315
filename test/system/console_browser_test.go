package systemtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
)

// TestConsoleInBrowser drives the workspace console of a real `trustd
// --dev` node in headless Chromium (browser/console.test.mjs): login, a
// site created, an observed policy promoted, axe-core on every page,
// screenshots in test/system/artifacts.
func TestConsoleInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "axe-core", "axe.min.js")); err != nil {
		t.Skip("skipping console browser test: test/system/browser/node_modules/axe-core is missing (run test/system/browser/setup.sh)")
	}
	n := startDevNode(t)
	runNodeTest(t, nodeBin, "console.test.mjs", "TRUSTD_API="+n.APIBase, "TRUSTD_SECRET="+n.Secret,
		"TRUSTD_ADMIN_TOKEN="+n.AdminToken, "TRUSTD_WORKSPACE="+n.WorkspaceID)
}

// TestConsoleWidgetLoginInBrowser: the production console login in
// headless Chromium (browser/console-widget.test.mjs). A node is seeded
// in dev mode, then restarted on the same data without --dev and with the
// dev site as its console site (--console-site): the login form carries
// trustd's widget under the console's CSP, a login without its token is
// refused, ticking the widget's box and logging in with the admin token
// works.
func TestConsoleWidgetLoginInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "axe-core", "axe.min.js")); err != nil {
		t.Skip("skipping console browser test: test/system/browser/node_modules/axe-core is missing (run test/system/browser/setup.sh)")
	}
	cfg := node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, Dev: true}
	start := func() *node.Node {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := node.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	stop := func(n *node.Node) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close node: %v", err)
		}
	}
	n := start()
	dev := n.Dev()
	var siteID string
	for _, s := range n.Store().Catalog().SitesOf(dev.WorkspaceID) {
		if s.SiteKey == dev.SiteKey {
			siteID = s.ID
		}
	}
	stop(n)
	if siteID == "" {
		t.Fatal("no dev site")
	}
	cfg.Dev, cfg.ConsoleSiteID = false, siteID
	n = start()
	t.Cleanup(func() { stop(n) })
	runNodeTest(t, nodeBin, "console-widget.test.mjs", "TRUSTD_CONSOLE="+n.APIURL()+"/console/", "TRUSTD_ADMIN_TOKEN="+dev.AdminToken)
}
