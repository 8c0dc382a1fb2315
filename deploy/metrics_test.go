// Package deploy_test checks the deployment files against a real node:
// every metric the alert rules and the Grafana dashboard name is one a
// node exports, and the Helm chart renders to what it should.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trustd/trustd/node"
)

// metricRef finds the metric names an expression uses (the project's
// metrics all start trustd_); a histogram's _bucket/_sum/_count series are
// exported under those names, so they are matched as written.
var metricRef = regexp.MustCompile(`\btrustd_[a-z0-9_]+\b`)

// scrape starts a node with its ops listener, makes one rate-limit check
// (so the per-policy series exist: they appear with the policy's first
// check) and returns the names of every series /metrics exports.
func scrape(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", FastRaft: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	call := func(path, bearer string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := nethttp.NewRequest("POST", n.APIURL()+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, rb)
		}
		var out map[string]any
		_ = json.Unmarshal(rb, &out)
		return out
	}
	adm := n.AdminToken()
	ws := call("/admin/v1/workspaces", adm, map[string]any{"name": "metrics"})["workspace_id"].(string)
	site := call("/admin/v1/workspaces/"+ws+"/sites", adm, map[string]any{"name": "shop", "hostnames": []string{"shop.example"}})
	call("/admin/v1/workspaces/"+ws+"/rate-limit-policies", adm, map[string]any{"name": "p", "target": map[string]any{"type": "workspace"},
		"action_pattern": "*", "scope": "workspace", "bucket": map[string]any{"capacity": 5, "refill_amount": 1, "refill_interval_seconds": 3600}, "mode": "enforce"})
	call("/v1/rate-limit/check", site["secret"].(string), map[string]any{"action": "login"})

	resp, err := nethttp.Get("http://" + n.OpsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestAlertRulesAndDashboardNameOnlyExportedMetrics reads
// deploy/prometheus/alerts.yaml and deploy/grafana/trustd.json and checks
// every trustd_ metric they use against a real node's /metrics, and that
// the alerts the operator's kit promises are there.
func TestAlertRulesAndDashboardNameOnlyExportedMetrics(t *testing.T) {
	exported := scrape(t)
	used := map[string][]string{} // metric -> where

	raw, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q of group %s lacks alert, expr, a severity or a summary", r.Alert, g.Name)
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: unbalanced parentheses in %s", r.Alert, r.Expr)
			}
			for _, m := range metricRef.FindAllString(r.Expr, -1) {
				used[m] = append(used[m], "alert "+r.Alert)
			}
		}
	}
	for _, want := range []string{"TrustdNoRaftLeader", "TrustdNodeOutOfRing", "TrustdDegradedDecisions", "TrustdFailOpenAdmits",
		"TrustdWebhookBacklog", "TrustdCertificateExpiresSoon", "TrustdRaftDiskLow", "TrustdRaftFollowerOutOfContact"} {
		if !alerts[want] {
			t.Errorf("alert %s is missing", want)
		}
	}

	raw, err = os.ReadFile("grafana/trustd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("trustd.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			refs := metricRef.FindAllString(q.Expr, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q: query %q names no trustd metric", p.Title, q.Expr)
			}
			for _, m := range refs {
				used[m] = append(used[m], fmt.Sprintf("panel %q", p.Title))
			}
		}
	}

	var missing []string
	for m, where := range used {
		if !exported[m] {
			missing = append(missing, fmt.Sprintf("%s (used by %s)", m, strings.Join(where, ", ")))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics a node does not export:\n%s", strings.Join(missing, "\n"))
	}
}
