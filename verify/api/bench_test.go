package api

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/token"
)

// benchVerify runs siteverify through the full handler (routing, common
// headers, ingress, parsing, token check, actor round trip, encoding) on an
// in-memory RequestCtx: no network.
func benchVerify(b *testing.B, e *hvEnv, tokens func(i int) string) {
	benchVerifyBody(b, e, "application/x-www-form-urlencoded", "secret="+e.secret+"&remoteip=203.0.113.7&action=login&response=", "", tokens)
}

// benchVerifyBody is benchVerify with a body of prefix, token, suffix.
func benchVerifyBody(b *testing.B, e *hvEnv, ctype, prefix, suffix string, tokens func(i int) string) {
	var ctx fasthttp.RequestCtx
	var fr fasthttp.Request
	addr := &net.TCPAddr{IP: e.ip, Port: 40000}
	body := make([]byte, 0, 512)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := tokens(i)
		fr.Reset()
		fr.Header.SetMethod("POST")
		fr.SetRequestURI("/v1/siteverify")
		fr.Header.SetContentType(ctype)
		body = append(append(append(body[:0], prefix...), tok...), suffix...)
		fr.SetBody(body)
		ctx.Init(&fr, addr, nil)
		e.serve(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkSiteverifySuccess verifies a fresh token each time: the first,
// consuming use (assessment stored, marker consumed).
func BenchmarkSiteverifySuccess(b *testing.B) {
	e := mustNewHVEnv(b)
	toks := make([]string, b.N)
	for i := range toks {
		toks[i] = e.mint(nil)
	}
	benchVerify(b, e, func(i int) string { return toks[i] })
}

// BenchmarkSiteverifyDuplicate verifies an already consumed token.
func BenchmarkSiteverifyDuplicate(b *testing.B) {
	e := mustNewHVEnv(b)
	tok := e.mint(nil)
	benchVerify(b, e, func(int) string { return tok })
}

// BenchmarkSiteverifyInvalid answers a forged token without an actor.
func BenchmarkSiteverifyInvalid(b *testing.B) {
	benchVerify(b, mustNewHVEnv(b), func(int) string {
		return token.LivePrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	})
}

// BenchmarkSiteverifyJSON is BenchmarkSiteverifySuccess with a JSON body
// (read by the transport's one strict scanner), an escaped value and an
// ignored unknown member included.
func BenchmarkSiteverifyJSON(b *testing.B) {
	e := mustNewHVEnv(b)
	toks := make([]string, b.N)
	for i := range toks {
		toks[i] = e.mint(nil)
	}
	benchVerifyBody(b, e, "application/json", `{"secret":"`+e.secret+`","remoteip":"203.0.113.7","action":"log\u0069n","extra":{"a":[1]},"response":"`, `"}`,
		func(i int) string { return toks[i] })
}
