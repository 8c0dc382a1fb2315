package scenario

import (
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/traffic/client"
)

// RoutedRateLimit is a Worker that sends the next key's check through the
// reference client (traffic/client), which routes it to the owner of its
// bucket once it has learnt the key's partition. The client is shared by
// every worker of a run (its cache and ring are the run's).
type RoutedRateLimit struct {
	op      uint8
	c       *client.Client
	bodies  *keys.Payloads
	chooser *keys.Chooser
	resp    fasthttp.Response
	parser  fastjson.Parser
	buf     []byte
}

// NewRoutedRateLimit returns a routed rate-limit Worker reporting as
// operation op.
func NewRoutedRateLimit(op uint8, c *client.Client, bodies *keys.Payloads, chooser *keys.Chooser) *RoutedRateLimit {
	return &RoutedRateLimit{op: op, c: c, bodies: bodies, chooser: chooser}
}

// Do sends one check and classifies the decision.
func (w *RoutedRateLimit) Do() load.Outcome {
	body := w.bodies.Get(&w.buf, w.chooser.Next())
	if err := w.c.Do(w.c.KeyOf(body), body, &w.resp); err != nil {
		return load.Outcome{Op: w.op, Kind: load.Transport}
	}
	if code := w.resp.StatusCode(); code != 200 {
		return load.Outcome{Op: w.op, Kind: load.Status, Status: uint16(code)}
	}
	v, err := w.parser.ParseBytes(w.resp.Body())
	if err != nil {
		return load.Outcome{Op: w.op, Kind: load.Decode}
	}
	return checkOutcome(w.op, v)
}
