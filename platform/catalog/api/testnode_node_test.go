package api_test

import (
	nethttp "net/http"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// testNode is a real single node on loopback ports with a temporary data
// dir, and a small client for it (node/nodetest, in the spelling of
// the tests that came from platform/http/).
type testNode struct {
	t   *testing.T
	n   *node.Node
	cfg node.Config
	tn  *nodetest.Node
}

func mustStartNode(t *testing.T, mutate ...func(*node.Config)) *testNode {
	t.Helper()
	return startNode(t, nodetest.Config(t, mutate...))
}

func startNode(t *testing.T, cfg node.Config) *testNode {
	t.Helper()
	tn := nodetest.StartConfig(t, cfg)
	return &testNode{t: t, n: tn.N, cfg: cfg, tn: tn}
}

func (tn *testNode) stop() {
	tn.tn.Stop()
	tn.n = nil
}

type response struct {
	status int
	header nethttp.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	nodetest.Response{Body: r.body}.Decode(t, v)
}

func (r response) errorCode(t *testing.T) string {
	t.Helper()
	return nodetest.Response{Body: r.body}.ErrorCode(t)
}

// do sends a request; body may be nil, a string (sent as is) or a value
// encoded as JSON.
func (tn *testNode) do(method, path, token string, body any, headers ...string) response {
	tn.t.Helper()
	r := tn.tn.Do(method, path, token, body, headers...)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

func (tn *testNode) admin(method, path string, body any) response {
	tn.t.Helper()
	return tn.do(method, "/admin/v1"+path, tn.n.AdminToken(), body)
}

// mustCreate posts body and decodes the 201 answer into out.
func (tn *testNode) mustCreate(path string, body, out any) {
	tn.t.Helper()
	r := tn.admin("POST", path, body)
	if r.status != 201 {
		tn.t.Fatalf("POST %s: %d %s", path, r.status, r.body)
	}
	r.decode(tn.t, out)
}

func wantCode(t *testing.T, r response, status int, code string) {
	t.Helper()
	nodetest.Response{Status: r.status, Body: r.body}.Want(t, status, code)
}
