package http

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
)

// Every 503 the kernel writes carries Retry-After: 1 second unless the
// handler set its own; no other error gains one.
func TestA503CarriesRetryAfter(t *testing.T) {
	errBusy := errcode.New("test-busy", errcode.Unavailable, "busy")
	routes := []Route{
		{Method: "POST", Path: "/test/unavailable", ID: "testUnavailable", Summary: "s", Handle: func(c *Call) {
			c.FailErr(cluster.ErrUnavailable)
		}},
		{Method: "POST", Path: "/test/module-busy", ID: "testModuleBusy", Summary: "s", Handle: func(c *Call) {
			c.FailErr(errBusy.With("try later"))
		}},
		{Method: "POST", Path: "/test/knows-better", ID: "testKnowsBetter", Summary: "s", Handle: func(c *Call) {
			c.SetRetryAfter(7)
			c.Fail(ErrUnavailable, "the module knows how long")
		}},
		{Method: "POST", Path: "/test/spec-shape", ID: "testSpecShape", Summary: "s", SpecErrors: true, Handle: func(c *Call) {
			c.SpecFail(ErrUnavailable)
		}},
		{Method: "POST", Path: "/test/conflict", ID: "testConflict", Summary: "s", Handle: func(c *Call) {
			c.Fail(ErrConflict, "no")
		}},
	}
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	t.Cleanup(sys.Stop)
	s := New(Config{BaseURL: "http://test", Areas: []Area{{Name: "retry-test", Routes: routes}}},
		&kernelStore{cat: catalog.Empty(), ready: true}, cluster.SingleNode("n1", sys, time.Second), nil, nil)
	for _, tc := range []struct {
		name, path string
		status     int
		retryAfter string
	}{
		{"an unreachable owner's 503 says 1 second", "/v1/test/unavailable", 503, "1"},
		{"a module's own 503 code says 1 second", "/v1/test/module-busy", 503, "1"},
		{"a handler that knows better keeps its value", "/v1/test/knows-better", 503, "7"},
		{"the spec's own error shape says 1 second", "/v1/test/spec-shape", 503, "1"},
		{"a 409 carries none", "/v1/test/conflict", 409, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI(tc.path)
			ctx.Request.Header.SetContentType("application/json")
			ctx.Request.SetBodyString(`{}`)
			s.serve(&ctx)
			if st, got := ctx.Response.StatusCode(), string(ctx.Response.Header.Peek("Retry-After")); st != tc.status || got != tc.retryAfter {
				t.Fatalf("%d Retry-After %q (%s), want %d %q", st, got, ctx.Response.Body(), tc.status, tc.retryAfter)
			}
		})
	}
}
