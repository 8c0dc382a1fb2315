package scenario

import (
	"encoding/json"
	"sync/atomic"

	"github.com/valyala/fastjson"

	"github.com/trustd/trustd/test/bench/load"
)

// VerifyPath is trustd's siteverify route.
const VerifyPath = "/v1/siteverify"

// Tokens hands out pre-built siteverify bodies, each exactly once, to any
// number of Workers.
type Tokens struct {
	bodies [][]byte
	next   atomic.Int64
}

// NewTokens pre-builds the siteverify body of every token for secret.
func NewTokens(secret string, tokens []string) *Tokens {
	t := &Tokens{bodies: make([][]byte, len(tokens))}
	for i, tok := range tokens {
		t.bodies[i], _ = json.Marshal(struct {
			Secret   string `json:"secret"`
			Response string `json:"response"`
		}{secret, tok}) // marshalling two strings cannot fail
	}
	return t
}

// take returns the next unused body, or false when all are used.
func (t *Tokens) take() ([]byte, bool) {
	i := t.next.Add(1) - 1
	if i >= int64(len(t.bodies)) {
		return nil, false
	}
	return t.bodies[i], true
}

// Used is how many tokens were handed out.
func (t *Tokens) Used() int { return int(min(t.next.Load(), int64(len(t.bodies)))) }

// Len is how many tokens there are.
func (t *Tokens) Len() int { return len(t.bodies) }

// Siteverify is a Worker that verifies the next unused token.
type Siteverify struct {
	op     uint8
	p      *poster
	tokens *Tokens
	parser fastjson.Parser
}

// NewSiteverify returns a siteverify Worker reporting as operation op.
func NewSiteverify(op uint8, t *Targets, tokens *Tokens) *Siteverify {
	return &Siteverify{op: op, p: newPoster(t, VerifyPath, "application/json", nil), tokens: tokens}
}

// Do verifies one token; when none is left it reports load.Exhausted.
func (w *Siteverify) Do() load.Outcome {
	body, ok := w.tokens.take()
	if !ok {
		return load.Outcome{Op: w.op, Kind: load.Exhausted}
	}
	v, fail, ok := w.p.exchange(w.op, body, &w.parser)
	if !ok {
		return fail
	}
	switch v.Get("success").Type() {
	case fastjson.TypeTrue:
		return load.Outcome{Op: w.op, Decision: load.VerifySuccess}
	case fastjson.TypeFalse:
		return load.Outcome{Op: w.op, Decision: load.VerifyFailure}
	}
	return load.Outcome{Op: w.op, Kind: load.Decode}
}
