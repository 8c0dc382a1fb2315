// Package promcheck checks deploy/prometheus/alerts.yaml and
// deploy/grafana/trustd.json with Prometheus's own code, as
// `promtool check rules` does (promtool itself does not `go install`: the
// prometheus module has replace directives), and evaluates every rule and
// panel query against a real node's recorded scrape
// (deploy/testdata/node-metrics.prom, kept current by go test ./deploy/).
//
// It is a module of its own so Prometheus's dependency tree stays out of
// trustd's go.mod: run it with (cd deploy/promcheck && go test ./...).
package promcheck
