package server

import (
	"io"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

func mustListen(t *testing.T) string {
	t.Helper()
	url, stop, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

func TestBaselineAnswers(t *testing.T) {
	url := mustListen(t)
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"a well-formed check is allowed", "POST", CheckPath, `{"action":"bench.op","method":"POST","subject_id":"u","device_id":"d"}`, 200},
		{"a body without subject is a bad request", "POST", CheckPath, `{"action":"bench.op","method":"POST"}`, 400},
		{"a body that is not JSON is a bad request", "POST", CheckPath, `{"action":`, 400},
		{"a GET is not allowed", "GET", CheckPath, ``, 405},
		{"another path is not found", "POST", "/v1/siteverify", `{}`, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(tt.method)
			req.SetRequestURI(url + tt.path)
			req.SetBodyString(tt.body)
			if err := fasthttp.Do(req, resp); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode() != tt.want {
				t.Fatalf("status %d want %d", resp.StatusCode(), tt.want)
			}
			if tt.want == 200 {
				v, err := fastjson.ParseBytes(resp.Body())
				if err != nil || string(v.GetStringBytes("decision")) != "allow" || !v.GetBool("success") {
					t.Fatalf("answer %s (%v) is not an allow decision", resp.Body(), err)
				}
			}
		})
	}
}

func TestStartBindsTheGivenAddress(t *testing.T) {
	stop, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := Start("not-an-address"); err == nil {
		t.Fatal("want an error for a bad address")
	}
}

// BenchmarkHandler is the bare handler in memory, the request built as
// traffic/api's check benchmarks build theirs (method, URI, content type,
// bearer, body), so their ns/op divide by this one's.
func BenchmarkHandler(b *testing.B) { benchHandler(b, false) }

// BenchmarkHandlerWritten is BenchmarkHandler with each answer serialised
// as the server writes it (status line, headers, body), against
// traffic/api's BenchmarkRateLimitCheckWritten*.
func BenchmarkHandlerWritten(b *testing.B) { benchHandler(b, true) }

func benchHandler(b *testing.B, written bool) {
	h := &handler{}
	body := `{"action":"payment.card","method":"POST","subject_id":"user-42","device_id":"dev-7","route":"/pay"}`
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(CheckPath)
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("Authorization", "Bearer sk_live_test")
		ctx.Request.SetBodyString(body)
		h.serve(&ctx)
		if written {
			if _, err := ctx.Response.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != Answer {
		b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
