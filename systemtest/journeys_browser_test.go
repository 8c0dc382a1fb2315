package systemtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
)

// TestJourneyPasskeyInBrowser completes a device_authorization journey in
// headless Chromium with the DevTools virtual authenticator. The node runs
// in process so the person's page can be announced at localhost: WebAuthn
// refuses an IP address as relying party id, and the dev site's hostnames
// include localhost.
func TestJourneyPasskeyInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	})
	dev := n.Dev()
	page := strings.Replace(n.APIURL(), "127.0.0.1", "localhost", 1)
	n.Journeys().WithPasskeys(page)
	runNodeTest(t, nodeBin, "journeys.test.mjs", "TRUSTD_API="+n.APIURL()+"/v1", "TRUSTD_PAGE="+page, "TRUSTD_SECRET="+dev.Secret,
		"TRUSTD_ADMIN_TOKEN="+dev.AdminToken, "TRUSTD_WORKSPACE="+dev.WorkspaceID)
}
