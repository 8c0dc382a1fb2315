package scenario

import (
	"time"

	"github.com/valyala/fastjson"

	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
)

// CheckPath is trustd's rate-limit check route.
const CheckPath = "/v1/rate-limit/check"

// CheckBodies pre-builds the rate-limit check body of each of n keys: key k
// is subject "user-k" on device "dev-k", action "bench.op", which the bench
// policies match with "bench.*".
func CheckBodies(n int) *keys.Payloads {
	return keys.NewPayloads(n, keys.Template(
		`{"action":"bench.op","method":"POST","subject_id":"user-`, `","device_id":"dev-`, `"}`))
}

// RateLimit is a Worker that checks the next key's rate limit.
type RateLimit struct {
	op      uint8
	p       *poster
	bodies  *keys.Payloads
	chooser *keys.Chooser
	parser  fastjson.Parser
	buf     []byte
}

// NewRateLimit returns a rate-limit Worker reporting as operation op,
// authenticating with the site secret.
func NewRateLimit(op uint8, t *Targets, secret string, bodies *keys.Payloads, chooser *keys.Chooser) *RateLimit {
	h := map[string]string{}
	if secret != "" {
		h["Authorization"] = "Bearer " + secret
	}
	return &RateLimit{op: op, p: newPoster(t, CheckPath, "application/json", h), bodies: bodies, chooser: chooser}
}

// Do sends one check and classifies the decision.
func (w *RateLimit) Do() load.Outcome {
	body := w.bodies.Get(&w.buf, w.chooser.Next())
	v, fail, ok := w.p.exchange(w.op, body, &w.parser)
	if !ok {
		return fail
	}
	return checkOutcome(w.op, v)
}

// checkOutcome classifies a check's answer as operation op.
func checkOutcome(op uint8, v *fastjson.Value) load.Outcome {
	var d load.Decision
	switch string(v.GetStringBytes("decision")) {
	case "allow":
		d = load.Allow
	case "throttle":
		d = load.Throttle
	case "reject":
		d = load.Reject
	case "":
		return load.Outcome{Op: op, Kind: load.Decode}
	default:
		d = load.OtherDecision
	}
	return load.Outcome{Op: op, Decision: d}
}

// Probe sends checks through w until one is answered with a decision or
// the limit passes, and returns the last outcome, so a run against a node
// that is not ready (or a wrong secret) fails before measuring anything.
func Probe(w load.Worker, limit time.Duration) load.Outcome {
	deadline := time.Now().Add(limit)
	for {
		o := w.Do()
		if o.Kind == load.OK || time.Now().After(deadline) {
			return o
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
}
