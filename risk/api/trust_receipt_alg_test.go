package api_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/trustd/trustd/risk/api/trusttest"
	"github.com/trustd/trustd/risk/trust"
)

// receiptFor orchestrates a fresh high-assurance proof for subject alice
// and returns the receipt, with extra request fields.
func (e *trustEnv) receiptFor(t *testing.T, operation string, extra map[string]any) string {
	t.Helper()
	p := e.Proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, Identity: true, Liveness: true,
		SubjectID: "alice", OperationReference: operation, Action: "pay", AuthTime: time.Now()})
	a := e.Siteverify(map[string]any{"response": p, "action": "pay", "operation_reference": operation})
	if !a.Success {
		t.Fatalf("siteverify: %+v", a)
	}
	body := map[string]any{"assessment_id": a.AssessmentID, "subject_id": "alice", "action": "pay", "operation_reference": operation}
	for k, v := range extra {
		body[k] = v
	}
	r := e.Post("/trust/orchestrate", body)
	var o trusttest.DecisionAnswer
	if r.Status != 200 {
		t.Fatalf("orchestrate: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &o)
	if o.Decision != "allow" || o.Receipt == "" {
		t.Fatalf("orchestrate: %s", r.Body)
	}
	return o.Receipt
}

// Receipts are signed alg Ed25519 (RFC 9864) by default and EdDSA on
// request; the JWKS lists each key under both names; trustd and the
// JOSE libraries customers use verify each as it is meant to.
func TestReceiptsAreEd25519WithEdDSAForOlderVerifiers(t *testing.T) {
	e := startTrustNode(t)
	modern := e.receiptFor(t, "pay-1", nil)
	legacy := e.receiptFor(t, "pay-2", map[string]any{"receipt_alg": "EdDSA"})
	explicit := e.receiptFor(t, "pay-3", map[string]any{"receipt_alg": "Ed25519"})
	for _, c := range []struct {
		name, receipt, alg string
	}{
		{"the default receipt is alg Ed25519", modern, "Ed25519"},
		{"receipt_alg EdDSA signs the deprecated name", legacy, "EdDSA"},
		{"receipt_alg Ed25519 is the default spelled out", explicit, "Ed25519"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if h := trusttest.ReceiptHeader(t, c.receipt); h["alg"] != c.alg || h["typ"] != "JWT" || len(h) != 3 {
				t.Fatalf("header %v, want alg %s", h, c.alg)
			}
			var v struct {
				Success    bool     `json:"success"`
				ErrorCodes []string `json:"error-codes"`
			}
			e.Post("/trust/receipts/verify", map[string]any{"receipt": c.receipt, "action": "pay", "subject_id": "alice"}).Decode(t, &v)
			if !v.Success || len(v.ErrorCodes) != 0 {
				t.Fatalf("/trust/receipts/verify: %+v", v)
			}
		})
	}
	p := e.Proof(trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh, AuthTime: time.Now()})
	a := e.Siteverify(map[string]any{"response": p})
	e.Post("/trust/orchestrate", map[string]any{"assessment_id": a.AssessmentID, "subject_id": "alice", "action": "pay",
		"operation_reference": "x", "receipt_alg": "ES256"}).Want(t,
		400, "invalid-trust-request")

	// The JWKS: every key twice, once per name, one kid.
	r := e.Do("GET", "/v1/.well-known/jwks.json", "", nil)
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	r.Decode(t, &set)
	kid, _ := trusttest.ReceiptHeader(t, modern)["kid"].(string)
	algs := map[string]string{}
	for _, k := range set.Keys {
		if k.Kid == kid {
			algs[k.Alg] = k.X
		}
	}
	if len(algs) != 2 || algs["Ed25519"] == "" || algs["Ed25519"] != algs["EdDSA"] {
		t.Fatalf("the JWKS lists kid %s as %v, want one key under Ed25519 and EdDSA: %s", kid, algs, r.Body)
	}

	// A current Go JOSE library (lestrrat-go/jwx v3) verifies the default
	// receipt with the JWKS as published, matching kid and alg.
	keys, err := jwk.Parse(r.Body)
	if err != nil {
		t.Fatalf("jwx parses the JWKS: %v", err)
	}
	for _, rc := range []struct {
		receipt string
		alg     jwa.SignatureAlgorithm
	}{{modern, jwa.EdDSAEd25519()}, {legacy, jwa.EdDSA()}} {
		payload, err := jws.Verify([]byte(rc.receipt), jws.WithKeySet(keys, jws.WithRequireKid(true)))
		if err != nil {
			t.Fatalf("jwx does not verify the %s receipt: %v", rc.alg, err)
		}
		var claims struct{ Iss, Aud, Action, Decision string }
		if err := json.Unmarshal(payload, &claims); err != nil || claims.Iss != "trustd" || claims.Aud != e.Dev.WorkspaceID || claims.Action != "pay" || claims.Decision != "allow" {
			t.Fatalf("jwx claims %+v %v", claims, err)
		}
	}
	tampered := strings.Split(modern, ".")
	tampered[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"trustd","decision":"allow"}`))
	if _, err := jws.Verify([]byte(strings.Join(tampered, ".")), jws.WithKeySet(keys, jws.WithRequireKid(true))); err == nil {
		t.Fatal("jwx verifies a tampered receipt")
	}

	// A JOSE library that predates RFC 9864 (go-jose v4 knows only EdDSA)
	// verifies the receipt it asked for with receipt_alg EdDSA.
	var old jose.JSONWebKeySet
	r.Decode(t, &old)
	tok, err := jwt.ParseSigned(legacy, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var pub ed25519.PublicKey
	for _, k := range old.Key(tok.Headers[0].KeyID) {
		if k.Algorithm == string(jose.EdDSA) {
			pub, _ = k.Key.(ed25519.PublicKey)
		}
	}
	if pub == nil {
		t.Fatalf("go-jose finds no EdDSA key for kid %s", tok.Headers[0].KeyID)
	}
	var std jwt.Claims
	if err := tok.Claims(pub, &std); err != nil {
		t.Fatalf("go-jose does not verify the EdDSA receipt: %v", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: "trustd", AnyAudience: jwt.Audience{e.Dev.WorkspaceID}, Time: time.Now()}, 0); err != nil {
		t.Fatalf("receipt claims: %v", err)
	}

	// panva's jose (npm), the library most Node backends use, verifies both
	// with createRemoteJWKSet on the node's JWKS URL.
	dir := "../trust/examples/jose"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: run risk/trust/examples/jose/setup.sh (test.sh does)")
	}
	if _, err := os.Stat(dir + "/node_modules/jose/package.json"); err != nil {
		t.Skip("jose is not installed: run risk/trust/examples/jose/setup.sh (test.sh does)")
	}
	type out struct {
		OK     bool           `json:"ok"`
		Alg    string         `json:"alg"`
		Code   string         `json:"code"`
		Error  string         `json:"error"`
		Claims map[string]any `json:"claims"`
	}
	npmJose := func(receipt string, algorithms ...string) out {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"jwks_url": e.N.APIURL() + "/v1/.well-known/jwks.json", "receipt": receipt,
			"audience": e.Dev.WorkspaceID, "algorithms": algorithms})
		cmd := exec.Command("node", dir+"/verify.mjs")
		cmd.Stdin = strings.NewReader(string(in))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node verify.mjs: %v %s", err, b)
		}
		var o out
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("node output %s: %v", b, err)
		}
		return o
	}
	if o := npmJose(modern, "Ed25519"); !o.OK || o.Alg != "Ed25519" || o.Claims["action"] != "pay" {
		t.Fatalf("jose verifies the Ed25519 receipt: %+v", o)
	}
	if o := npmJose(legacy, "EdDSA"); !o.OK || o.Alg != "EdDSA" {
		t.Fatalf("jose verifies the EdDSA receipt: %+v", o)
	}
	if o := npmJose(modern, "Ed25519", "EdDSA"); !o.OK {
		t.Fatalf("jose with both names allowed: %+v", o)
	}
	if o := npmJose(strings.Join(tampered, "."), "Ed25519"); o.OK || o.Code != "ERR_JWS_SIGNATURE_VERIFICATION_FAILED" {
		t.Fatalf("jose on a tampered receipt: %+v", o)
	}
}
