package clustertest

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/platform/cluster/summary"
)

type (
	moduleCounts   = summary.ModuleCounts
	clusterMetrics = summary.ClusterMetrics
)

func adminOf(ms []moduleCounts) moduleCounts {
	for _, m := range ms {
		if m.Module == "Admin" {
			return m
		}
	}
	return moduleCounts{}
}

// TestClusterMetricsAddUpEveryMember: getClusterMetrics, asked on any
// node, gathers every member's answer totals over the peer channel and
// sums them; requests sent to each node show on that node; a member that
// stops answering is listed with its error and left out of the sum; the
// console's overview (node-0, an admin session) shows the cluster's totals.
func TestClusterMetricsAddUpEveryMember(t *testing.T) {
	c := StartWith(t, 3, func(cfg *node.Config) { cfg.Dev = true })
	c.WaitRing(3)
	// Node i answers 5·(i+1) refused admin requests (401: client errors).
	for i := range c.Nodes {
		for k := 0; k < 5*(i+1); k++ {
			if st, _, err := c.DoAs(i, "GET", "/admin/v1/workspaces", "wrong-token", nil); err != nil || st != 401 {
				t.Fatalf("node-%d: %d %v", i, st, err)
			}
		}
	}
	read := func(via int) clusterMetrics {
		t.Helper()
		st, b, err := c.Do(via, "GET", "/admin/v1/cluster/metrics", nil)
		if err != nil || st != 200 {
			t.Fatalf("cluster metrics via node-%d: %d %s %v", via, st, b, err)
		}
		var m clusterMetrics
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for via := range c.Nodes {
		m := read(via)
		if m.Members != 3 || m.Answered != 3 || len(m.Nodes) != 3 {
			t.Fatalf("via node-%d: %d of %d answered: %+v", via, m.Answered, m.Members, m.Nodes)
		}
		var sum uint64
		for _, n := range m.Nodes {
			if n.Error != "" {
				t.Fatalf("node %s: %s", n.NodeID, n.Error)
			}
			idx := c.index(n.NodeID)
			if got := adminOf(n.Modules).ClientErrors; got < uint64(5*(idx+1)) {
				t.Fatalf("node-%d counted %d client errors, sent %d", idx, got, 5*(idx+1))
			}
			sum += adminOf(n.Modules).ClientErrors
		}
		if tot := adminOf(m.Total).ClientErrors; tot != sum || tot < 30 {
			t.Fatalf("via node-%d: total client errors %d, members sum %d (≥ 30 sent)", via, tot, sum)
		}
	}

	// A policy's counters: each node counts the checks it served; with
	// scope=cluster any node answers the sum. Six checks of one subject
	// against capacity 4, two through each node: 4 allowed, 2 refused.
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	mustJSON(t, c.MustCreate(0, "/admin/v1/workspaces", `{"name":"stats"}`), &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		Secret string `json:"secret"`
	}
	mustJSON(t, c.MustCreate(0, base+"/sites", `{"name":"shop","hostnames":["shop.example"]}`), &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	mustJSON(t, c.MustCreate(0, base+"/rate-limit-policies", `{"name":"login","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":4,"refill_amount":1,"refill_interval_seconds":31536000},"mode":"enforce"}`), &pol)
	for i := range c.Nodes {
		Eventually(t, 5*time.Second, func() error {
			if st, b, _ := c.Do(i, "GET", base+"/rate-limit-policies/"+pol.PolicyID, nil); st != 200 {
				return fmt.Errorf("node-%d has no policy yet: %d %s", i, st, b)
			}
			return nil
		})
	}
	for k := 0; k < 6; k++ {
		if st, b, err := c.DoAs(k%3, "POST", "/v1/rate-limit/check", site.Secret, []byte(`{"action":"login","subject_id":"bob"}`)); err != nil || (st != 200 && st != 429) {
			t.Fatalf("check %d: %d %s %v", k, st, b, err)
		}
	}
	type policyStats struct {
		Node      string `json:"node"`
		Members   int    `json:"members"`
		Answered  int    `json:"answered"`
		Matched   uint64 `json:"matched"`
		Allowed   uint64 `json:"allowed"`
		Throttled uint64 `json:"throttled"`
		Rejected  uint64 `json:"rejected"`
	}
	stats := func(via int, query string) policyStats {
		t.Helper()
		st, b, err := c.Do(via, "GET", base+"/rate-limit-policies/"+pol.PolicyID+"/stats"+query, nil)
		if err != nil || st != 200 {
			t.Fatalf("stats%s via node-%d: %d %s %v", query, via, st, b, err)
		}
		var ps policyStats
		mustJSON(t, b, &ps)
		return ps
	}
	for via := range c.Nodes {
		if own := stats(via, ""); own.Node == "cluster" || own.Matched != 2 {
			t.Fatalf("node-%d's own counters: %+v (it served 2 checks)", via, own)
		}
		all := stats(via, "?scope=cluster")
		if all.Node != "cluster" || all.Members != 3 || all.Answered != 3 || all.Matched != 6 || all.Allowed != 4 || all.Throttled+all.Rejected != 2 {
			t.Fatalf("cluster counters via node-%d: %+v", via, all)
		}
	}
	// The decisions travel in 200 answers; the summary counts them by
	// outcome, summed over the members.
	for via := range c.Nodes {
		var tc moduleCounts
		for _, m := range read(via).Total {
			if m.Module == "Traffic control" {
				tc = m
			}
		}
		if tc.Decisions["allow"] != 4 || tc.Decisions["throttle"]+tc.Decisions["reject"] != 2 || tc.Throttled != 0 {
			t.Fatalf("via node-%d, traffic control: %+v", via, tc)
		}
	}
	if st, b, _ := c.Do(0, "GET", base+"/rate-limit-policies/"+pol.PolicyID+"/stats?scope=galaxy", nil); st != 400 {
		t.Fatalf("an unknown scope: %d %s", st, b)
	}

	// The console's overview on node-0 shows the cluster's totals.
	b := newConsoleBrowser(t, c.Nodes[0].APIURL())
	if st, body := b.post("/console/login", "/console/login", url.Values{"token": {AdminToken}}); st != 303 {
		t.Fatalf("console login: %d %s", st, body)
	}
	resp, err := b.hc.Get(b.base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "(3 of 3 members answered)") || !strings.Contains(string(page), `data-metrics="/console/metrics.json"`) {
		t.Fatalf("overview:\n%s", page)
	}

	// A stopped member: listed with its error, left out of the sum.
	c.Kill(2)
	Eventually(t, 15*time.Second, func() error {
		m := read(0)
		failed := 0
		for _, n := range m.Nodes {
			if n.Error != "" {
				failed++
			}
		}
		if m.Answered != 2 || m.Answered+failed != m.Members {
			return fmt.Errorf("after a kill: %d answered, %d failed, %d members", m.Answered, failed, m.Members)
		}
		return nil
	})
}
