// Package deploy_test checks the deployment files against a real node:
// every metric the alert rules and the Grafana dashboard name is one a
// node exports, and the Helm chart renders to what it should.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"go.yaml.in/yaml/v3"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// metricRef finds the metric names an expression uses (the project's
// metrics all start trustd_); a histogram's _bucket/_sum/_count series are
// exported under those names, so they are matched as written.
var metricRef = regexp.MustCompile(`\btrustd_[a-z0-9_]+\b`)

// updateScrape rewrites testdata/node-metrics.prom, the scrape the rules
// are evaluated against by the PromQL check of deploy/promcheck (a module
// of its own, so Prometheus's dependencies stay out of trustd's go.mod).
var updateScrape = flag.Bool("update-scrape", false, "rewrite testdata/node-metrics.prom from a real node's /metrics")

const scrapeFile = "testdata/node-metrics.prom"

// series are the label sets a scrape exported, by metric name.
type series map[string][]map[string]string

var (
	labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	// selector is a metric with label matchers, as rules and panels write them.
	selector = regexp.MustCompile(`\b(trustd_[a-z0-9_]+)\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

// scrape starts a node with its ops listener, makes one rate-limit check
// (so the per-policy series exist: they appear with the policy's first
// check) and returns every series /metrics exports.
func scrape(t *testing.T) (series, []byte) {
	t.Helper()
	n := nodetest.Start(t, func(c *node.Config) { c.OpsAddr = "127.0.0.1:0" }).N
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
	out := series{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name := strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			if j := strings.LastIndexByte(line, '}'); j > i {
				for _, m := range labelPair.FindAllStringSubmatch(line[i+1:j], -1) {
					labels[m[1]] = m[2]
				}
			}
		}
		out[name] = append(out[name], labels)
	}
	return out, b
}

// checkSelectors reports the equality matchers of expr that no exported
// series of the metric satisfies (a label misspelt, a value in the wrong
// case): a rule on them would never fire. Matchers on the labels
// Prometheus adds (job, instance) and on dashboard variables are skipped.
func checkSelectors(exported series, expr string) []string {
	var bad []string
	for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
		name := sel[1]
		for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
			label, op, value := m[1], m[2], m[3]
			if op != "=" || label == "job" || label == "instance" || strings.Contains(value, "$") {
				continue
			}
			found := false
			for _, ls := range exported[name] {
				found = found || ls[label] == value
			}
			if !found {
				bad = append(bad, fmt.Sprintf("%s{%s=%q}", name, label, value))
			}
		}
	}
	return bad
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
	exported, raw := scrape(t)
	if *updateScrape {
		if err := os.WriteFile(scrapeFile, trimScrape(raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkScrapeFileIsCurrent(t, exported)
	// promtool check metrics is this linter: the exposition stays clean.
	problems, err := promlint.New(bytes.NewReader(raw)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}
	used := map[string][]string{} // metric -> where

	raw, err = os.ReadFile("prometheus/alerts.yaml")
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
			for _, b := range checkSelectors(exported, r.Expr) {
				t.Errorf("alert %s selects %s, which no exported series has", r.Alert, b)
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
			for _, b := range checkSelectors(exported, q.Expr) {
				t.Errorf("panel %q selects %s, which no exported series has", p.Title, b)
			}
		}
	}

	var missing []string
	for m, where := range used {
		if len(exported[m]) == 0 {
			missing = append(missing, fmt.Sprintf("%s (used by %s)", m, strings.Join(where, ", ")))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics a node does not export:\n%s", strings.Join(missing, "\n"))
	}
}

// checkScrapeFileIsCurrent: the recorded scrape has exactly the trustd
// metric families a node exports now, so the PromQL check evaluates the
// rules against what a node really exposes (go test ./deploy/
// -update-scrape rewrites it).
func checkScrapeFileIsCurrent(t *testing.T, live series) {
	t.Helper()
	b, err := os.ReadFile(scrapeFile)
	if err != nil {
		t.Fatalf("%v (go test ./deploy/ -run Alert -update-scrape writes it)", err)
	}
	recorded := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "trustd_") {
			recorded[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	for name := range live {
		if strings.HasPrefix(name, "trustd_") && !recorded[name] {
			t.Errorf("%s: %s is exported but not recorded; run go test ./deploy/ -run Alert -update-scrape", scrapeFile, name)
		}
	}
	for name := range recorded {
		if len(live[name]) == 0 {
			t.Errorf("%s: %s is recorded but no longer exported; run go test ./deploy/ -run Alert -update-scrape", scrapeFile, name)
		}
	}
}

// trimScrape keeps the trustd families of a scrape and at most 40 series
// of each (one operation's full histogram and every status of the first
// operations), which is all the PromQL check needs of label sets.
func trimScrape(raw []byte) []byte {
	var out bytes.Buffer
	seen := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			continue
		}
		name := line
		if strings.HasPrefix(line, "# ") {
			if f := strings.Fields(line); len(f) >= 3 {
				name = f[2]
			}
		} else {
			name = strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
		}
		if !strings.HasPrefix(name, "trustd_") {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			if seen[name]++; seen[name] > 40 {
				continue
			}
		}
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}
