package http

import (
	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/catalog"
)

// Idempotency-Key on admin creates. A create whose answer was lost (a 503
// while the leader changed, a cut connection) may have committed; a client
// that retries it with the same Idempotency-Key gets the record the first
// attempt created, with the same id, instead of a second one. The key is
// recorded in Raft by the create's own log entry (catalog.IdempotentCreate),
// so "committed but answered 503" is caught on every node. What is kept and
// how the key, the request and the once-shown secret are hashed and sealed
// is the catalog's (catalog.IdempotencyKey); here are the header, its
// contract and the wrapping of admin creates.

// hdrIdempotencyKey is the request header of an idempotent create.
const hdrIdempotencyKey = "Idempotency-Key"

// The error codes of idempotent creates.
var (
	ErrInvalidIdempotencyKey = ErrorCode{"invalid-idempotency-key", 400, "The Idempotency-Key header is not 1 to 128 visible ASCII characters (a UUID is recommended)."}
	ErrIdempotencyKeyReused  = ErrorCode{"idempotency-key-reused", 409, "This Idempotency-Key already created something within the last 24 h with another request (another body or path) from this credential; send a new key for a new request."}
)

// idempotencyErrors are the codes every admin create may answer.
var idempotencyErrors = []ErrorCode{ErrInvalidIdempotencyKey, ErrIdempotencyKeyReused}

// idempotencyParam documents the header on every admin create.
var idempotencyParam = Param{Name: hdrIdempotencyKey, In: "header", Description: "Optional, a UUID recommended (1 to 128 visible ASCII " +
	"characters). A retry of this create with the same key, the same body (as JSON: member order and whitespace do not matter) and path and the same credential within 24 h answers " +
	"the record the first attempt created (same id, the same once-shown secret, status 201, header Idempotent-Replayed: true) " +
	"instead of creating another, also when the first attempt answered 503 or timed out after it committed. The same key with " +
	"another body or path answers 409 idempotency-key-reused. Keys are kept 24 h, at most 1000 per workspace (the oldest make room)."}

// IdempotentCreate adds the header and its error codes to a create route.
func IdempotentCreate(r Route) Route {
	r.Params = append(append([]Param(nil), r.Params...), idempotencyParam)
	r.Errors = append(append([]ErrorCode(nil), r.Errors...), idempotencyErrors...)
	return r
}

// idempotencyKey reads the header: nil and true without one; nil and
// false when it is invalid (the 400 is written). in is the decoded body,
// which the key's fingerprint hashes (catalog.NewIdempotencyKey).
func (c *Call) idempotencyKey(in any) (*catalog.IdempotencyKey, bool) {
	raw := c.Ctx.Request.Header.Peek(hdrIdempotencyKey)
	if len(raw) == 0 {
		return nil, true
	}
	if !catalog.ValidIdempotencyKey(raw) {
		c.fail(ErrInvalidIdempotencyKey, "Idempotency-Key must be 1 to 128 visible ASCII characters")
		return nil, false
	}
	// The credential: a console session runs in-process for the admin
	// token's holder; an API caller is its bearer token.
	cred := "console"
	if !c.console {
		cred = "bearer\x00" + c.bearerView()
	}
	return catalog.NewIdempotencyKey(raw, cred, c.Ctx.Method(), c.Ctx.Path(), in, c.Ctx.Request.Body()), true
}

// CreateOnce runs a create under the request's Idempotency-Key, if any.
// in is the decoded body (the request's fingerprint); build validates the request and returns the create command and the
// secret its answer shows once; answer writes the answer of the created
// (or, on a retry, the first created) record. A retry is answered from
// the node's catalog when the key is there already, before build runs,
// so checks against current state (a name or an email taken, by the
// first attempt) do not refuse it; else the create goes to Raft wrapped
// in catalog.IdempotentCreate, which creates at most once per key.
func CreateOnce[R any](c *Call, workspaceID string, in any, build func() (catalog.Command, string, error), answer func(rec *R, secret string)) {
	k, ok := c.idempotencyKey(in)
	if !ok {
		return
	}
	if k != nil {
		r, err := c.cat.KnownIdempotentCreate(workspaceID, k.Lookup, k.Fingerprint, c.Now())
		if err != nil {
			c.FailErr(err)
			return
		}
		if r != nil {
			replayCreate(c, k, r.Record, r.Sealed, answer)
			return
		}
	}
	cmd, secret, err := build()
	if err != nil {
		c.FailErr(err)
		return
	}
	if k == nil {
		if v, ok := c.Apply(cmd); ok {
			answer(v.(*R), secret)
		}
		return
	}
	wrapped, err := catalog.NewIdempotentCreate(workspaceID, k.Lookup, k.Fingerprint, k.Seal(secret), c.Now().UTC(), cmd)
	if err != nil {
		c.FailErr(err)
		return
	}
	v, ok := c.Apply(wrapped)
	if !ok {
		return
	}
	res := v.(*catalog.IdempotentResult)
	if res.Replayed {
		replayCreate(c, k, res.Record, res.Sealed, answer)
		return
	}
	answer(res.Value.(*R), secret)
}

// replayCreate answers a retried create with the record its key created.
func replayCreate[R any](c *Call, k *catalog.IdempotencyKey, record, sealed []byte, answer func(rec *R, secret string)) {
	rec := new(R)
	err := json.Unmarshal(record, rec)
	var secret string
	if err == nil {
		secret, err = k.Open(sealed)
	}
	if err != nil {
		c.s.log.ErrorContext(c.Context(), "idempotent replay", "request_id", c.RequestID(), "op", c.route.ID, "err", err)
		c.fail(ErrInternal, "internal error")
		return
	}
	c.Ctx.Response.Header.Set("Idempotent-Replayed", "true")
	answer(rec, secret)
}
