package nodetest

import (
	"testing"

	"github.com/trustd/trustd/node"
)

// DevNode is a started --dev node and its dev workspace's credentials:
// the start of the areas' own test environments (risk/api/trusttest,
// journeys/api/journeynode).
type DevNode struct {
	*Node
	Dev *node.DevCredentials
}

// StartDev starts a --dev node, changed by mutate; it stops when the test
// ends.
func StartDev(t testing.TB, mutate ...func(*node.Config)) *DevNode {
	t.Helper()
	tn := Start(t, append([]func(*node.Config){func(c *node.Config) { c.Dev = true }}, mutate...)...)
	dev := tn.N.Dev()
	if dev == nil {
		t.Fatal("a --dev node printed no dev credentials")
	}
	return &DevNode{Node: tn, Dev: dev}
}

// Post posts body to /v1+path with the dev site's secret in the body,
// unless body names one.
func (e *DevNode) Post(path string, body map[string]any) Response {
	e.T.Helper()
	if _, ok := body["secret"]; !ok {
		body["secret"] = e.Dev.Secret
	}
	return e.Do("POST", "/v1"+path, "", body)
}

// OK decodes r, which must be a 200, into a T; what names the call in the
// failure.
func OK[T any](t testing.TB, what string, r Response) T {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", what, r.Status, r.Body)
	}
	var v T
	r.Decode(t, &v)
	return v
}
