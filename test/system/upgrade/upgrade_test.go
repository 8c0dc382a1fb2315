package upgrade

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/cluster/clustertest"
)

const (
	adminToken = "adm_upgrade_test_token"
	clusterKey = "upgrade-test-cluster-key"
)

// TestRollingUpgradeFromThePreviousRelease is the version-skew policy of
// docs/operations.md held by a test: a cluster of the previous release
// (deploy/upgrade/PREVIOUS) is upgraded to this tree one node at a time,
// followers first and the Raft leader last, under a steady load of
// rate-limit checks, siteverify of freshly minted tokens and admin writes
// through every node in rotation; the cluster serves with old and new
// builds side by side all along. Then one follower is rolled back to the
// previous release on the data directory the current build wrote (its
// log entries, with their format, and the snapshot taken at its stop),
// under the same load: the previous release reads what this build writes.
//
// The load is a client behind a load balancer: a node is taken out of
// rotation before it is stopped (as a balancer does when its /readyz
// fails or it is deregistered) and put back once its /readyz answers and
// every node sees it ready in the ring. A request answered 503
// service-unavailable (the contract's "back off and retry": while the
// leaving leader hands Raft over, or a token's owner moves) is retried,
// after its Retry-After or a bounded backoff, through the next node in
// rotation, for up to 10 s, as real clients do; an admin write is retried
// with its Idempotency-Key and a siteverify with its idempotency_key, so
// a retry never does the work twice. Failed is anything else: a
// transport error, any other status, a 503 still there after 10 s, a
// check not allowed, a fresh token's siteverify not a success (a widget's
// mint that fails counts too, except one that starts over once with a new
// challenge when a redeem answered 503 had used its challenge after all,
// as the widget does), a write without its record. The test
// asserts 0 failed requests, reports how many were answered after a
// retry, and checks that what was written before and during the upgrade
// is on every node after it.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two trustd binaries and runs real processes; skipped with -short")
	}
	root := repoRoot(t)
	prev := previousRelease(t, root)
	started := time.Now()
	oldBin := buildPrevious(t, root, prev)
	newBin := buildCurrent(t, root)
	t.Logf("built the previous release (%.12s) and this tree in %v", prev, time.Since(started).Round(time.Second))

	c := &procCluster{t: t, dir: t.TempDir()}
	t.Cleanup(c.killAll)
	ids := []string{"n1", "n2", "n3"}
	for i, id := range ids {
		n := c.add(id)
		var join []string
		if i > 0 {
			join = []string{c.nodes[0].gossip}
		}
		c.start(n, oldBin, "previous", join)
		c.waitReady(n, 60*time.Second)
	}
	c.waitMembers(60 * time.Second)

	// State written before the upgrade.
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	c.mustCreate("/admin/v1/workspaces", `{"name":"before the upgrade"}`, &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		SiteID  string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	c.mustCreate(base+"/sites", `{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`, &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	c.mustCreate(base+"/rate-limit-policies", `{"name":"api","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":1000000,"refill_amount":1000000,"refill_interval_seconds":1},"mode":"enforce"}`, &pol)
	before := []string{"/admin/v1/workspaces/" + ws.WorkspaceID, base + "/sites/" + site.SiteID, base + "/rate-limit-policies/" + pol.PolicyID}
	c.waitEverywhere(before, 15*time.Second)
	// A token used before the upgrade stays used after it.
	used, err := clustertest.MintToken(c.nodes[0].url(), site.SiteKey, "http://localhost:3000", "login")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := clustertest.SiteverifyAnswered([]string{c.nodes[1].url()}, site.Secret, used, "", time.Now().Add(10*time.Second)); err != nil || !v.Success {
		t.Fatalf("siteverify before the upgrade: %+v %v", v, err)
	}

	l := newLoad(t, c, site.Secret, site.SiteKey)
	for _, n := range c.nodes {
		l.rotation.add(n)
	}
	l.run()
	time.Sleep(time.Second) // the old cluster under load first

	// replace runs n on bin through the steps an operator follows.
	replace := func(n *node, bin, build, what string) {
		step := time.Now()
		l.rotation.remove(n)
		time.Sleep(300 * time.Millisecond) // the balancer's deregistration delay: requests in flight to n end
		c.stop(n)
		stopped := time.Since(step)
		c.start(n, bin, build, c.othersGossip(n))
		c.waitReady(n, 60*time.Second)
		c.waitMembers(60 * time.Second)
		l.rotation.add(n)
		t.Logf("%s %s in %v (stop %v); load so far: %s", n.id, what, time.Since(step).Round(100*time.Millisecond),
			stopped.Round(100*time.Millisecond), l.summary())
		time.Sleep(2 * time.Second) // mixed builds (or the new cluster) serve under load
	}
	order := c.upgradeOrder()
	for _, n := range order {
		replace(n, newBin, "current", "upgraded")
	}
	// Rolling back: a follower goes back to the previous release on the
	// data directory this build wrote (its log entries and the snapshot
	// taken at its stop), and serves beside the current build.
	back := c.upgradeOrder()[0]
	replace(back, oldBin, "previous", "rolled back to the previous release")
	l.finish()
	t.Logf("rolling upgrade of 3 nodes and rollback of one under load: %s", l.summary())
	if f := l.failed.Load(); f != 0 {
		t.Fatalf("%d failed requests during the rolling upgrade and rollback (first: %s)", f, strings.Join(l.firstFailures(), "; "))
	}
	if l.sent[kindCheck].Load() == 0 || l.sent[kindVerify].Load() == 0 || l.sent[kindWrite].Load() == 0 {
		t.Fatalf("the load did not exercise every kind of request: %s", l.summary())
	}

	// What was written before and during the upgrade is on every node.
	paths := slices.Clone(before)
	for _, id := range l.written() {
		paths = append(paths, "/admin/v1/workspaces/"+id)
	}
	c.waitEverywhere(paths, 15*time.Second)
	for _, n := range c.nodes {
		v, _, err := clustertest.SiteverifyAnswered([]string{n.url()}, site.Secret, used, "", time.Now().Add(10*time.Second))
		if err != nil || !v.Duplicate() {
			t.Fatalf("the token used before the upgrade, through %s: %+v %v; want timeout-or-duplicate", n.id, v, err)
		}
	}
	// Neither build refused the other's entries, snapshots or asks.
	for _, n := range c.nodes {
		for _, f := range n.logs {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte("newer format")) || bytes.Contains(b, []byte("undecodable")) {
				t.Fatalf("%s logged a refusal during the upgrade (%s):\n%s", n.id, filepath.Base(f), tail(b, 3000))
			}
		}
	}
	t.Logf("%d records written before and during the upgrade read back through the 3 nodes (%s on the previous release again); total %v",
		len(paths), back.id, time.Since(started).Round(time.Second))
}
