// Package server is the baseline every trustd figure is divided by: a bare
// fasthttp server that parses the rate-limit check body with the codec trustd
// uses on that path (a pooled fastjson parser) and answers a fixed decision.
// It owns no state and makes no decision: whatever trustd costs beyond this
// is the price of actually limiting.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// CheckPath is the rate-limit check route the baseline mimics.
const CheckPath = "/v1/rate-limit/check"

// Answer is the fixed body of a successful check, shaped like a trustd
// rate-limit decision so the client decodes the same number of bytes.
const Answer = `{"success":true,"decision_id":"00000000-0000-0000-0000-000000000000","allowed":true,` +
	`"decision":"allow","recommended_decision":"allow","remaining":999999999,"reason_codes":[],` +
	`"policy_id":"00000000-0000-0000-0000-000000000000","mode":"enforce"}`

const badRequest = `{"success":false,"error":{"code":"invalid_request","message":"body must be a JSON object with action, method and subject_id"}}`

var (
	answerBytes     = []byte(Answer)
	badRequestBytes = []byte(badRequest)
	contentJSON     = []byte("application/json")
)

// handler parses and answers; its parser pool is per server, not global.
type handler struct {
	parsers fastjson.ParserPool
}

func (h *handler) serve(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) != CheckPath {
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	if !ctx.IsPost() {
		ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	ctx.SetContentTypeBytes(contentJSON)
	p := h.parsers.Get()
	v, err := p.ParseBytes(ctx.PostBody())
	ok := err == nil &&
		len(v.GetStringBytes("action")) > 0 &&
		len(v.GetStringBytes("method")) > 0 &&
		len(v.GetStringBytes("subject_id")) > 0
	h.parsers.Put(p)
	if !ok {
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBody(badRequestBytes)
		return
	}
	ctx.SetBody(answerBytes)
}

// Serve serves the baseline on ln until the returned stop is called; stop
// waits (up to 5 s) for open connections to finish.
func Serve(ln net.Listener) (stop func()) {
	h := &handler{}
	srv := &fasthttp.Server{
		Handler:               h.serve,
		NoDefaultServerHeader: true,
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           30 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.ShutdownWithContext(ctx)
		// Shutdown does nothing if Serve has not registered the listener
		// yet; closing it ourselves makes Serve return in that case too.
		_ = ln.Close()
		<-done
	}
}

// Start listens on addr (host:port; port 0 picks a free one, see Listen) and
// serves the baseline until stop is called.
func Start(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("baseline: listen %s: %w", addr, err)
	}
	return Serve(ln), nil
}

// Listen starts the baseline on a free 127.0.0.1 port and returns its base
// URL, for running it in-process next to the load generator.
func Listen() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("baseline: listen: %w", err)
	}
	if _, ok := ln.Addr().(*net.TCPAddr); !ok {
		ln.Close()
		return "", nil, errors.New("baseline: not a TCP listener")
	}
	return "http://" + ln.Addr().String(), Serve(ln), nil
}
