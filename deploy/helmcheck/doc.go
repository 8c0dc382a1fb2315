// Package helmcheck renders and lints deploy/helm/trustd with Helm's own
// code (helm.sh/helm/v3: the chart loader, the template engine with its
// full function set, and `helm lint`), then decodes every rendered object
// strictly into its Kubernetes API type, so a misspelt or misplaced field
// fails as the API server would refuse it.
//
// It is a module of its own so Helm's and Kubernetes' dependency trees stay
// out of trustd's go.mod: run it with (cd deploy/helmcheck && go test ./...);
// test.sh does. Not covered: admission by a real API server (defaults,
// webhooks, quotas) and the images themselves.
package helmcheck
