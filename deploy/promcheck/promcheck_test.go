package promcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
)

const (
	rulesFile     = "../prometheus/alerts.yaml"
	dashboardFile = "../grafana/trustd.json"
	scrapeFile    = "../testdata/node-metrics.prom"
)

var pql = parser.NewParser(parser.Options{})

// query is one expression to check and where it comes from.
type query struct{ where, expr string }

func mustRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, pql, promslog.NewNopLogger())
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return groups
}

func queries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, g := range mustRules(t).Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr})
		}
	}
	b, err := os.ReadFile(dashboardFile)
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
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			// $job is the dashboard's variable; any value parses the same.
			out = append(out, query{fmt.Sprintf("panel %q", p.Title), strings.ReplaceAll(q.Expr, "$job", ".*")})
		}
	}
	return out
}

// TestRulesPassPromtoolsChecks is `promtool check rules`: the file
// parses, every expression is valid PromQL, every template renders.
func TestRulesPassPromtoolsChecks(t *testing.T) {
	if n := len(mustRules(t).Groups); n == 0 {
		t.Fatal("no rule groups")
	}
}

// loadScrape turns the recorded exposition into a promqltest load block:
// each series holds its recorded value for 11 minutes (counters grow by it
// per minute, so rate() has something to see).
func loadScrape(t *testing.T) string {
	t.Helper()
	f, err := os.Open(scrapeFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", scrapeFile, err)
	}
	var b strings.Builder
	b.WriteString("load 1m\n")
	num := func(v float64) string {
		switch {
		case math.IsInf(v, 1):
			return "Inf"
		case math.IsNaN(v):
			return "NaN"
		}
		return fmt.Sprint(v)
	}
	series := func(name string, ls map[string]string, v float64, counter bool) {
		keys := make([]string, 0, len(ls))
		for k := range ls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := []string{`job="trustd"`, `instance="node-0"`}
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%q", k, ls[k]))
		}
		step := "0"
		if counter {
			step = num(max(v, 1))
		}
		fmt.Fprintf(&b, "  %s{%s} %s+%sx10\n", name, strings.Join(parts, ","), num(v), step)
	}
	for name, fam := range fams {
		for _, m := range fam.Metric {
			ls := map[string]string{}
			for _, l := range m.Label {
				ls[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				series(name, ls, m.Counter.GetValue(), true)
			case m.Gauge != nil:
				series(name, ls, m.Gauge.GetValue(), false)
			case m.Untyped != nil:
				series(name, ls, m.Untyped.GetValue(), false)
			case m.Histogram != nil:
				for _, bk := range m.Histogram.Bucket {
					l2 := map[string]string{"le": num(bk.GetUpperBound())}
					for k, v := range ls {
						l2[k] = v
					}
					series(name+"_bucket", l2, float64(bk.GetCumulativeCount()), true)
				}
				inf := map[string]string{"le": "+Inf"}
				for k, v := range ls {
					inf[k] = v
				}
				series(name+"_bucket", inf, float64(m.Histogram.GetSampleCount()), true)
				series(name+"_sum", ls, m.Histogram.GetSampleSum(), true)
				series(name+"_count", ls, float64(m.Histogram.GetSampleCount()), true)
			}
		}
	}
	return b.String()
}

func instant(t *testing.T, eng promql.QueryEngine, st storage.Queryable, expr string, at time.Time) (promql.Vector, error) {
	t.Helper()
	q, err := eng.NewInstantQuery(context.Background(), st, nil, expr, at)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{F: v.V}}, nil
	}
	return nil, fmt.Errorf("unexpected result type %T", res.Value)
}

// TestRulesAndPanelsEvaluateAgainstARealNodesMetrics parses every rule and
// panel query, evaluates it over the recorded scrape of a real node, and
// checks each of its selectors (minus the job and instance labels
// Prometheus adds) selects at least one series the node exports: a
// misspelt label or value would select nothing and never fire.
func TestRulesAndPanelsEvaluateAgainstARealNodesMetrics(t *testing.T) {
	st := promqltest.LoadedStorage(t, loadScrape(t))
	eng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	at := time.Unix(600, 0)
	for _, q := range queries(t) {
		expr, err := pql.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if _, err := instant(t, eng, st, q.expr, at); err != nil {
			t.Errorf("%s: evaluating %s: %v", q.where, q.expr, err)
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			var ms []*labels.Matcher
			for _, m := range vs.LabelMatchers {
				if m.Name != "job" && m.Name != "instance" {
					ms = append(ms, m)
				}
			}
			sel := (&parser.VectorSelector{Name: vs.Name, LabelMatchers: ms}).String()
			if v, err := instant(t, eng, st, "count("+sel+")", at); err != nil || len(v) == 0 {
				t.Errorf("%s: %s selects no series a node exports (%v)", q.where, sel, err)
			}
			return nil
		})
	}
}

// TestAlertsFireOnWhatTheyAreAbout evaluates some rules over made-up
// series: each fires on its condition and stays quiet without it.
func TestAlertsFireOnWhatTheyAreAbout(t *testing.T) {
	exprs := map[string]string{}
	for _, g := range mustRules(t).Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
		}
	}
	eng := promqltest.NewTestEngine(t, false, 0, 100_000)
	at := time.Unix(600, 0)
	for _, tc := range []struct {
		name, alert, load string
		fires             bool
	}{
		{"no node leads", "TrustdNoRaftLeader", `
  trustd_raft_state{job="trustd",instance="a",state="Leader"} 0x10
  trustd_raft_state{job="trustd",instance="b",state="Leader"} 0x10`, true},
		{"one node leads", "TrustdNoRaftLeader", `
  trustd_raft_state{job="trustd",instance="a",state="Leader"} 1x10
  trustd_raft_state{job="trustd",instance="b",state="Leader"} 0x10`, false},
		{"a certificate expires in 10 days", "TrustdCertificateExpiresSoon", `
  trustd_tls_cert_not_after_timestamp_seconds{job="trustd",instance="a"} 864600x10`, true},
		{"a certificate expires in 30 days", "TrustdCertificateExpiresSoon", `
  trustd_tls_cert_not_after_timestamp_seconds{job="trustd",instance="a"} 2592600x10`, false},
		{"a policy admits fail-open", "TrustdFailOpenAdmits", `
  trustd_ratelimit_policy_degraded_total{job="trustd",instance="a",workspace_id="w",policy_id="p",behaviour="fail_open"} 0+5x10`, true},
		{"a policy fails closed only", "TrustdFailOpenAdmits", `
  trustd_ratelimit_policy_degraded_total{job="trustd",instance="a",workspace_id="w",policy_id="p",behaviour="fail_open"} 0x10
  trustd_ratelimit_policy_degraded_total{job="trustd",instance="a",workspace_id="w",policy_id="p",behaviour="fail_closed"} 0+5x10`, false},
		{"a node is out of the ring", "TrustdNodeOutOfRing", `
  trustd_node_in_ring{job="trustd",instance="a"} 0x10`, true},
		{"the Raft disk is 95% full", "TrustdRaftDiskLow", `
  trustd_raft_disk_free_bytes{job="trustd",instance="a"} 5x10
  trustd_raft_disk_size_bytes{job="trustd",instance="a"} 100x10`, true},
		{"a webhook event waits two hours", "TrustdWebhookBacklog", `
  trustd_webhook_outbox_oldest_pending_seconds{job="trustd",instance="a"} 7200x10`, true},
		{"a follower out of contact for a minute", "TrustdRaftFollowerOutOfContact", `
  trustd_raft_last_contact_seconds{job="trustd",instance="a"} 60x10`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expr, ok := exprs[tc.alert]
			if !ok {
				t.Fatalf("no alert %s", tc.alert)
			}
			st := promqltest.LoadedStorage(t, "load 1m"+tc.load)
			v, err := instant(t, eng, st, expr, at)
			if err != nil {
				t.Fatal(err)
			}
			if fired := len(v) > 0; fired != tc.fires {
				t.Fatalf("%s fired %v (%v), want %v", tc.alert, fired, v, tc.fires)
			}
		})
	}
}
