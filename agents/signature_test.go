package agents

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
)

type dir map[uuid.UUID]Identity

func (d dir) Agent(id uuid.UUID) (Identity, bool) { a, ok := d[id]; return a, ok }

func (d dir) AgentsByThumbprint(ws, tp string) []Identity {
	var out []Identity
	for _, a := range d {
		if a.Workspace == ws && catalog.Ed25519Thumbprint(a.Ed25519) == tp {
			out = append(out, a)
		}
	}
	return out
}

type memNonces struct {
	mu sync.Mutex
	m  map[string]int64
}

func (n *memNonces) Consume(id string, expires int64) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.m[id]; ok {
		return false, nil
	}
	n.m[id] = expires
	return true, nil
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	active := uuid.MustParse("0b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	susp := uuid.MustParse("1b6f3c2e-5d1a-4c7e-9a50-1f2e3d4c5b6a")
	secret, old := []byte("s3cret-current"), []byte("s3cret-old")
	d := dir{
		active: {ID: active, Status: StatusActive, Keys: []Key{{Secret: secret}, {Secret: old, NotAfter: now.Add(-time.Second)}}},
		susp:   {ID: susp, Status: StatusSuspended, Keys: []Key{{Secret: secret}}},
	}
	ts := "1800000000"
	nonce := "abcdefghijklmnop"
	body := []byte(`{"request_id":"r1"}`)
	good := Request{Agent: active.String(), Timestamp: ts, Nonce: nonce, Signature: Sign(secret, ts, nonce, body), Body: body}
	with := func(f func(*Request)) Request { r := good; f(&r); return r }
	signed := func(f func(*Request)) Request {
		r := with(f)
		r.Signature = Sign(secret, r.Timestamp, r.Nonce, r.Body)
		return r
	}
	cases := []struct {
		name string
		req  Request
		want error
	}{
		{"ok", good, nil},
		{"bad agent id", with(func(r *Request) { r.Agent = "not-a-uuid" }), ErrAgentID},
		{"agent id without dashes", with(func(r *Request) { r.Agent = "0b6f3c2e5d1a4c7e9a501f2e3d4c5b6a" }), ErrAgentID},
		{"unknown agent", with(func(r *Request) { r.Agent = uuid.NewString() }), ErrUnknownAgent},
		{"suspended", with(func(r *Request) { r.Agent = susp.String() }), ErrAgentSuspended},
		{"timestamp 9 digits", signed(func(r *Request) { r.Timestamp = "180000000" }), ErrTimestampFormat},
		{"timestamp sign", signed(func(r *Request) { r.Timestamp = "+800000000" }), ErrTimestampFormat},
		{"timestamp ms", signed(func(r *Request) { r.Timestamp = "1800000000000" }), ErrTimestampFormat},
		{"stale", signed(func(r *Request) { r.Timestamp = "1799999699" }), ErrTimestampStale},
		{"edge past", signed(func(r *Request) { r.Timestamp = "1799999700"; r.Nonce = "edge-past-nonce-1" }), nil},
		{"future", signed(func(r *Request) { r.Timestamp = "1800000301" }), ErrTimestampFuture},
		{"edge future", signed(func(r *Request) { r.Timestamp = "1800000300"; r.Nonce = "edge-future-nonce" }), nil},
		{"nonce short", signed(func(r *Request) { r.Nonce = "short" }), ErrNonceInvalid},
		{"nonce long", signed(func(r *Request) { r.Nonce = string(make([]byte, 129)) }), ErrNonceInvalid},
		{"nonce char", signed(func(r *Request) { r.Nonce = "abcdefghijklmno/" }), ErrNonceInvalid},
		{"replay", good, ErrNonceReused},
		{"signature missing", with(func(r *Request) { r.Signature = ""; r.Nonce = "fresh-nonce-00001" }), ErrSignatureInvalid},
		{"signature uppercase", with(func(r *Request) {
			r.Nonce = "fresh-nonce-00002"
			r.Signature = "v1=" + "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
		}), ErrSignatureInvalid},
		{"body changed", with(func(r *Request) {
			r.Nonce = "fresh-nonce-00003"
			r.Signature = Sign(secret, ts, r.Nonce, body)
			r.Body = []byte(`{"request_id":"r2"}`)
		}), ErrSignatureInvalid},
		{"expired old key", with(func(r *Request) { r.Nonce = "fresh-nonce-00004"; r.Signature = Sign(old, ts, r.Nonce, body) }), ErrSignatureInvalid},
	}
	n := &memNonces{m: map[string]int64{}}
	v := &Verifier{Dir: d, Nonces: n, Now: func() time.Time { return now }}
	for _, c := range cases {
		_, err := v.Verify(c.req)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// A bad signature must not burn the nonce: the correctly signed
	// request with the same nonce still passes.
	r := with(func(r *Request) { r.Nonce = "fresh-nonce-00003"; r.Signature = Sign(secret, ts, r.Nonce, body) })
	if _, err := v.Verify(r); err != nil {
		t.Fatalf("nonce burnt by a bad signature: %v", err)
	}
	if exp := n.m[NonceKey(active, nonce)]; exp != now.Add(DefaultTolerance+NonceSkew).UnixNano() {
		t.Fatalf("nonce retention %d", exp)
	}
}

func TestSignKnownVector(t *testing.T) {
	// Documented in the contract: a client can check its implementation.
	got := Sign([]byte("secret"), "1700000000", "0123456789abcdef", []byte(`{"a":1}`))
	// printf '1700000000\n0123456789abcdef\n{"a":1}' | openssl dgst -sha256 -hmac secret
	if got != "v1=408efeeeb6cac7fbcb94b94dd873c3df9dbea56f20e407c0948ba408586aaca8" {
		t.Fatalf("signature %q", got)
	}
}

func TestDecodeBodyStrict(t *testing.T) {
	type in struct {
		RequestID string `json:"request_id"`
	}
	bad := []string{
		`{"request_id":"a","request_id":"b"}`,
		`{"Request_ID":"a"}`,
		`{"request_id":"a","x":1}`,
		`{"request_id":"a"} {}`,
		"{\"request_id\":\"\xff\"}",
		`[]`,
	}
	for _, b := range bad {
		var v in
		if err := DecodeBody([]byte(b), &v); !errors.Is(err, ErrBodyInvalid) {
			t.Errorf("%q: got %v", b, err)
		}
	}
	var v in
	if err := DecodeBody([]byte(`{"request_id":"a"}`), &v); err != nil || v.RequestID != "a" {
		t.Fatalf("good body: %v %+v", err, v)
	}
}
