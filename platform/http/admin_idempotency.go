package http

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/catalog"
)

// Idempotency-Key on admin creates. A create whose answer was lost (a 503
// while the leader changed, a cut connection) may have committed; a client
// that retries it with the same Idempotency-Key gets the record the first
// attempt created, with the same id, instead of a second one. The key is
// recorded in Raft by the create's own log entry (catalog.IdempotentCreate),
// so "committed but answered 503" is caught on every node.
//
// What is kept: under the workspace, a hash of the caller's credential and
// the key (never the key), a hash of the request (method, path and the
// decoded body's canonical JSON), the
// created record as created, and the secret the create showed once sealed
// with AES-GCM under a key derived from the idempotency key and the
// credential, so neither the catalog nor a snapshot reveals it to whoever
// lacks the key. Kept 24 h, at most 1000 keys per workspace (the oldest
// make room).

// hdrIdempotencyKey is the request header of an idempotent create.
const hdrIdempotencyKey = "Idempotency-Key"

// maxIdempotencyKey bounds the header's length.
const maxIdempotencyKey = 128

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

// idempotentCreate adds the header and its error codes to a create route.
func idempotentCreate(r Route) Route {
	r.Params = append(append([]Param(nil), r.Params...), idempotencyParam)
	r.Errors = append(append([]ErrorCode(nil), r.Errors...), idempotencyErrors...)
	return r
}

// validIdempotencyKey accepts 1 to 128 visible ASCII characters.
func validIdempotencyKey(k []byte) bool {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return false
	}
	for _, ch := range k {
		if ch < 0x21 || ch > 0x7e {
			return false
		}
	}
	return true
}

// idemKey is an Idempotency-Key as the catalog keeps it.
type idemKey struct {
	raw         []byte
	cred        [32]byte
	lookup      string
	fingerprint catalog.Hash
}

// idempotencyKey reads the header: nil and true without one; nil and
// false when it is invalid (the 400 is written). in is the decoded body:
// the request's fingerprint is its canonical JSON, so a retry that
// encodes the same body with its members in another order or other
// whitespace is the same request.
func (c *Call) idempotencyKey(in any) (*idemKey, bool) {
	raw := c.Ctx.Request.Header.Peek(hdrIdempotencyKey)
	if len(raw) == 0 {
		return nil, true
	}
	if !validIdempotencyKey(raw) {
		c.fail(ErrInvalidIdempotencyKey, "Idempotency-Key must be 1 to 128 visible ASCII characters")
		return nil, false
	}
	k := &idemKey{raw: append([]byte(nil), raw...)}
	// The credential: a console session runs in-process for the admin
	// token's holder; an API caller is its bearer token.
	cred := "console"
	if !c.console {
		cred = "bearer\x00" + c.bearerView()
	}
	k.cred = sha256.Sum256([]byte(cred))
	h := sha256.New()
	h.Write([]byte("trustd admin idempotency key v1\x00"))
	h.Write(k.cred[:])
	h.Write(k.raw)
	k.lookup = hex.EncodeToString(h.Sum(nil))
	h.Reset()
	body, err := json.Marshal(in, json.Deterministic(true))
	if err != nil {
		body = c.Ctx.Request.Body()
	}
	for _, part := range [][]byte{c.Ctx.Method(), c.Ctx.Path(), body} {
		var n [8]byte
		for i, l := 0, len(part); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write(part)
	}
	copy(k.fingerprint[:], h.Sum(nil))
	return k, true
}

// aead is the cipher that seals a create's secret under this key.
func (k *idemKey) aead() cipher.AEAD {
	m := hmac.New(sha256.New, k.raw)
	m.Write([]byte("trustd admin idempotency seal v1\x00"))
	m.Write(k.cred[:])
	b, _ := aes.NewCipher(m.Sum(nil)) // a 32-byte key never fails
	g, _ := cipher.NewGCM(b)
	return g
}

func (k *idemKey) seal(secret string) []byte {
	if secret == "" {
		return nil
	}
	g := k.aead()
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(secret)+g.Overhead())
	_, _ = rand.Read(nonce)
	return g.Seal(nonce, nonce, []byte(secret), []byte(k.lookup))
}

func (k *idemKey) open(sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	g := k.aead()
	if len(sealed) < g.NonceSize() {
		return "", errors.New("sealed secret too short")
	}
	b, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], []byte(k.lookup))
	return string(b), err
}

// createOnce runs a create under the request's Idempotency-Key, if any.
// in is the decoded body (the request's fingerprint); build validates the request and returns the create command and the
// secret its answer shows once; answer writes the answer of the created
// (or, on a retry, the first created) record. A retry is answered from
// the node's catalog when the key is there already, before build runs,
// so checks against current state (a name or an email taken, by the
// first attempt) do not refuse it; else the create goes to Raft wrapped
// in catalog.IdempotentCreate, which creates at most once per key.
func createOnce[R any](c *Call, workspaceID string, in any, build func() (catalog.Command, string, error), answer func(rec *R, secret string)) {
	k, ok := c.idempotencyKey(in)
	if !ok {
		return
	}
	if k != nil {
		if r := c.cat.IdempotencyKeys[workspaceID][k.lookup]; r != nil && c.Now().Before(r.Expires) {
			if !r.Fingerprint.Equal(k.fingerprint) {
				c.failErr(catalog.ErrIdempotencyKeyReused)
				return
			}
			replayCreate(c, k, r.Record, r.Sealed, answer)
			return
		}
	}
	cmd, secret, err := build()
	if err != nil {
		c.failErr(err)
		return
	}
	if k == nil {
		if v, ok := c.apply(cmd); ok {
			answer(v.(*R), secret)
		}
		return
	}
	wrapped, err := catalog.NewIdempotentCreate(workspaceID, k.lookup, k.fingerprint, k.seal(secret), c.Now().UTC(), cmd)
	if err != nil {
		c.failErr(err)
		return
	}
	v, ok := c.apply(wrapped)
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
func replayCreate[R any](c *Call, k *idemKey, record, sealed []byte, answer func(rec *R, secret string)) {
	rec := new(R)
	err := json.Unmarshal(record, rec)
	var secret string
	if err == nil {
		secret, err = k.open(sealed)
	}
	if err != nil {
		c.s.log.ErrorContext(c.Context(), "idempotent replay", "request_id", c.RequestID(), "op", c.route.ID, "err", err)
		c.fail(ErrInternal, "internal error")
		return
	}
	c.Ctx.Response.Header.Set("Idempotent-Replayed", "true")
	answer(rec, secret)
}
