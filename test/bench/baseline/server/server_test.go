package server

import (
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
