package http

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
)

// The request id: a new one is the node's prefix and a base-36 sequence,
// the same in the header and in an error body; a caller's well-formed one
// is kept, a malformed one replaced.
func TestRequestIDHeaderAndBody(t *testing.T) {
	s := mustNewKernel(t)
	var ctx fasthttp.RequestCtx
	do := func(id string) (string, string) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/no-such-operation")
		if id != "" {
			ctx.Request.Header.Set("X-Request-Id", id)
		}
		ctx.Request.SetBodyString(`{"action":"a"}`) // an error
		s.serve(&ctx)
		return string(ctx.Response.Header.Peek("X-Request-Id")), string(ctx.Response.Body())
	}
	gen := regexp.MustCompile(`^` + s.reqPfx + `-[0-9a-z]+$`)
	h1, _ := do("")
	h2, _ := do("")
	if !gen.MatchString(h1) || !gen.MatchString(h2) || h1 == h2 {
		t.Fatalf("generated ids %q %q", h1, h2)
	}
	if h, _ := do("caller-id-1"); h != "caller-id-1" {
		t.Fatalf("caller's id %q", h)
	}
	if h, _ := do("bad id"); !gen.MatchString(h) {
		t.Fatalf("a malformed id was kept: %q", h)
	}
	if h, _ := do(strings.Repeat("a", 129)); !gen.MatchString(h) {
		t.Fatalf("an overlong id was kept: %q", h)
	}
	// An error answered through the common error shape carries the id in
	// its body too.
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/v1/no-such-operation")
	ctx.Request.Header.Set("X-Request-Id", "corr-7")
	s.serve(&ctx)
	var e struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(ctx.Response.Body(), &e, json.RejectUnknownMembers(false)); err != nil || e.RequestID != "corr-7" ||
		string(ctx.Response.Header.Peek("X-Request-Id")) != "corr-7" {
		t.Fatalf("%d %s %v", ctx.Response.StatusCode(), ctx.Response.Body(), err)
	}
}

// kernelStore is an in-memory catalog for the transport's own tests: the
// same commands as Raft applies, without the log.
type kernelStore struct {
	mu    sync.Mutex
	cat   *catalog.Catalog
	ready bool
}

func (m *kernelStore) Catalog() *catalog.Catalog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cat
}
func (m *kernelStore) Ready() bool { return m.ready }
func (m *kernelStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := catalog.Begin(m.cat)
	v, err := cmd.Apply(tx)
	if err != nil {
		return nil, err
	}
	m.cat = tx.Commit(m.cat.Index + 1)
	return v, nil
}

// mustNewKernel is a server with no area over an in-memory catalog.
func mustNewKernel(t testing.TB) *Server {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	t.Cleanup(sys.Stop)
	st := &kernelStore{cat: catalog.Empty(), ready: true}
	return New(Config{BaseURL: "http://test"}, st, cluster.SingleNode("n1", sys, time.Second), nil, nil)
}
