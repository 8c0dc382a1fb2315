package api_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/node/nodetest"
)

// rfcAgent signs with HTTP Message Signatures (agents.SignHTTPSig, the
// reference signer of the contract's scheme).
type rfcAgent struct {
	tn   *nodetest.Node
	id   string
	priv ed25519.PrivateKey
}

func (a rfcAgent) headers(path, body string, edit func(*agents.HTTPSigInput)) map[string]string {
	now := time.Now().Unix()
	in := agents.HTTPSigInput{AgentID: a.id, Nonce: fmt.Sprintf("rfc-nonce-%016d", agentNonceSeq.Add(1)), Created: now, Expires: now + 60,
		Authority: agents.NormalizeAuthority(strings.TrimPrefix(a.tn.N.APIURL(), "http://")), Path: path, Body: []byte(body)}
	if edit != nil {
		edit(&in)
	}
	dg, input, sig := agents.SignHTTPSig(a.priv, in)
	return map[string]string{"Content-Digest": dg, "Signature-Input": input, "Signature": sig}
}

func (a rfcAgent) send(path, body string, h map[string]string) nodetest.Response {
	var hs []string
	for k, v := range h {
		hs = append(hs, k, v)
	}
	return a.tn.Do("POST", path, "", body, hs...)
}

func newRFCAgent(t *testing.T, tn *nodetest.Node, ws string, withKey bool) (rfcAgent, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"name": fmt.Sprintf("rfc-%d", agentNonceSeq.Add(1)), "allowed_actions": []string{"invoice.*", "refund.*"},
		"allowed_scopes": []string{"billing"}, "approval_rules": []map[string]any{{"action": "refund.*"}}}
	if withKey {
		in["ed25519_public_key"] = base64.RawURLEncoding.EncodeToString(pub)
	}
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws+"/agents", in, &ag)
	return rfcAgent{tn: tn, id: ag.ID, priv: priv}, ag.Secret
}

func agentDecisionBody(req, action string) string {
	return `{"request_id":"` + req + `","action":"` + action + `","scope":"billing","resource_id":"inv-1","subject_id":"cust-1","summary":"s"}`
}

// Every RFC 9421 failure answers its documented code through HTTP.
func TestAgentHTTPSignaturesThroughHTTP(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "rfc9421"}, &ws)
	a, secret := newRFCAgent(t, tn, ws.ID, true)
	nokey, _ := newRFCAgent(t, tn, ws.ID, false)
	const path = "/v1/agents/decision"
	body := agentDecisionBody("h1", "invoice.read")

	ok := a.headers(path, body, nil)
	if r := a.send(path, body, ok); r.Status != 200 || !strings.Contains(string(r.Body), `"decision":"allow"`) {
		t.Fatalf("signed request: %d %s", r.Status, r.Body)
	}
	if r := a.send(path, body, ok); r.Status != 409 || r.ErrorCode(t) != "agent-nonce-reused" {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	set := func(h map[string]string, k, v string) map[string]string { h[k] = v; return h }
	cases := []struct {
		name   string
		Body   string
		h      map[string]string
		Status int
		code   string
	}{
		{"both schemes", body, set(a.headers(path, body, nil), agents.HeaderSignature, agents.Sign([]byte(secret), "1", "2", nil)), 401, "agent-signature-ambiguous"},
		{"tampered body", agentDecisionBody("h2", "refund.all"), a.headers(path, body, nil), 401, "agent-httpsig-digest-mismatch"},
		{"tampered body and digest", agentDecisionBody("h2", "refund.all"), func() map[string]string {
			h := a.headers(path, body, nil)
			h2 := a.headers(path, agentDecisionBody("h2", "refund.all"), nil)
			h["Content-Digest"] = h2["Content-Digest"]
			return h
		}(), 401, "agent-httpsig-signature-invalid"},
		{"other path", body, a.headers("/v1/agents/approval/status", body, nil), 401, "agent-httpsig-signature-invalid"},
		{"no tag", body, func() map[string]string {
			h := a.headers(path, body, nil)
			h["Signature-Input"] = strings.Replace(h["Signature-Input"], `;tag="web-bot-auth"`, "", 1)
			return h
		}(), 401, "agent-httpsig-tag-missing"},
		{"keyid a thumbprint", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.AgentID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" }), 401, "agent-httpsig-keyid-invalid"},
		{"nonce too short", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.Nonce = "short" }), 401, "agent-httpsig-nonce-invalid"},
		{"no digest", body, func() map[string]string {
			h := a.headers(path, body, nil)
			h["Content-Digest"] = "md5=:AAAA:"
			return h
		}(), 401, "agent-httpsig-digest-invalid"},
		{"agent without a key", body, nokey.headers(path, body, nil), 401, "agent-httpsig-no-key"},
		{"stale", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.Created -= 400; in.Expires = in.Created + 10 }), 401, "agent-httpsig-created-stale"},
		{"future", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.Created += 400; in.Expires = in.Created + 10 }), 401, "agent-httpsig-created-future"},
		{"expires too far", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.Expires = in.Created + 3600 }), 401, "agent-httpsig-expires-invalid"},
		{"expired", body, a.headers(path, body, func(in *agents.HTTPSigInput) { in.Created -= 30; in.Expires = in.Created + 5 }), 401, "agent-httpsig-expired"},
		{"malformed", body, map[string]string{"Signature-Input": "((", "Signature": "x"}, 401, "agent-httpsig-invalid"},
	}
	for _, c := range cases {
		if r := a.send(path, c.Body, c.h); r.Status != c.Status || r.ErrorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.Status, c.code)
		}
	}
	// The HMAC scheme still works for the same agent.
	h := signedAgent{tn: tn, id: a.id, secret: secret}
	if r := h.send("/agents/decision", agentDecisionBody("h3", "invoice.read")); r.Status != 200 {
		t.Fatalf("HMAC beside RFC 9421: %d %s", r.Status, r.Body)
	}
	// Suspension applies to both schemes.
	if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/agents/"+a.id+"/suspend", nil); r.Status != 200 {
		t.Fatalf("suspend: %d %s", r.Status, r.Body)
	}
	b := agentDecisionBody("h4", "invoice.read")
	if r := a.send(path, b, a.headers(path, b, nil)); r.Status != 403 || r.ErrorCode(t) != "agent-suspended" {
		t.Fatalf("suspended: %d %s", r.Status, r.Body)
	}
}

// Cloudflare's web-bot-auth package (agents/examples/webbotauth, pinned
// in its package-lock.json) signs real requests that a real node accepts;
// a replay and a tampered body are refused.
func TestAgentWebBotAuthAgainstANode(t *testing.T) {
	dir := "../examples/webbotauth"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: run agents/examples/webbotauth/setup.sh (test.sh does)")
	}
	if _, err := os.Stat(dir + "/node_modules/web-bot-auth/package.json"); err != nil {
		t.Skip("web-bot-auth is not installed: run agents/examples/webbotauth/setup.sh (test.sh does)")
	}
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "webbotauth"}, &ws)
	a, _ := newRFCAgent(t, tn, ws.ID, true)
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519",
		"d": base64.RawURLEncoding.EncodeToString(a.priv.Seed()), "x": base64.RawURLEncoding.EncodeToString(a.priv.Public().(ed25519.PublicKey))})
	type out struct {
		Headers map[string]string `json:"headers"`
		Status  int               `json:"status"`
		Body    string            `json:"body"`
	}
	run := func(env []string, args ...string) out {
		t.Helper()
		cmd := exec.Command("node", append([]string{dir + "/sign.mjs"}, args...)...)
		cmd.Env = append(append(os.Environ(), "TRUSTD_URL="+tn.N.APIURL(), "AGENT_ID="+a.id, "AGENT_JWK="+string(jwk)), env...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node sign.mjs %v: %v %s", args, err, b)
		}
		var o out
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("node output %s: %v", b, err)
		}
		return o
	}
	const path = "/v1/agents/decision"

	// Signed and sent by node's fetch: accepted.
	body := agentDecisionBody("wba-1", "invoice.read")
	o := run(nil, "--send", path, body)
	if o.Status != 200 || !strings.Contains(o.Body, `"decision":"allow"`) || !strings.Contains(o.Body, `"identity_verified":true`) {
		t.Fatalf("web-bot-auth signed request: %d %s (headers %v)", o.Status, o.Body, o.Headers)
	}
	if !strings.Contains(o.Headers["Signature-Input"], `tag="web-bot-auth"`) || !strings.Contains(o.Headers["Signature-Input"], `keyid="`+a.id+`"`) {
		t.Fatalf("not a web-bot-auth signature: %v", o.Headers)
	}
	// The same headers again: the nonce was consumed.
	if r := a.send(path, body, o.Headers); r.Status != 409 || r.ErrorCode(t) != "agent-nonce-reused" {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	// Signed but not sent; sent with another body: refused.
	o = run(nil, path, body)
	if r := a.send(path, agentDecisionBody("wba-1", "refund.everything"), o.Headers); r.Status != 401 || r.ErrorCode(t) != "agent-httpsig-digest-mismatch" {
		t.Fatalf("tampered body: %d %s", r.Status, r.Body)
	}
	// The untampered request, never sent before, is still accepted.
	if r := a.send(path, body, o.Headers); r.Status != 200 {
		t.Fatalf("signed request sent by Go: %d %s", r.Status, r.Body)
	}
	// With a signed Signature-Agent header, as Web Bot Auth agents send it.
	o = run([]string{`SIGNATURE_AGENT="https://agent.example"`}, "--send", path, agentDecisionBody("wba-2", "invoice.read"))
	if o.Status != 200 || !strings.Contains(o.Headers["Signature-Input"], `"signature-agent"`) {
		t.Fatalf("with Signature-Agent: %d %s %v", o.Status, o.Body, o.Headers)
	}

	// The approval lifecycle signed by web-bot-auth end to end.
	o = run(nil, "--send", path, agentDecisionBody("wba-3", "refund.issue"))
	var d struct {
		Decision          string `json:"decision"`
		ApprovalRequestID string `json:"approval_request_id"`
	}
	if err := json.Unmarshal([]byte(o.Body), &d); err != nil || d.Decision != "approval_required" || d.ApprovalRequestID == "" {
		t.Fatalf("refund: %d %s", o.Status, o.Body)
	}
	if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+d.ApprovalRequestID+"/approve", map[string]any{"by": "alice"}); r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	st := `{"approval_id":"` + d.ApprovalRequestID + `"}`
	o = run(nil, "--send", "/v1/agents/approval/status", st)
	if o.Status != 200 || !strings.Contains(o.Body, `"consumed":true`) {
		t.Fatalf("consume: %d %s", o.Status, o.Body)
	}
	o = run(nil, "--send", "/v1/agents/approval/status", st)
	if o.Status != 409 || !strings.Contains(o.Body, "agent-approval-consumed") {
		t.Fatalf("second consume: %d %s", o.Status, o.Body)
	}
}

// The contract carries both signature schemes' test vectors, and they are
// the ones the code computes: a client written from the contract alone
// can check itself against them.
func TestContractCarriesTheAgentSignatureVectors(t *testing.T) {
	tn := nodetest.Start(t)
	r := tn.Do("GET", "/v1/openapi.json", "", nil)
	var doc struct {
		Components struct {
			SecuritySchemes map[string]struct {
				Description string `json:"description"`
			} `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Security []map[string]any `json:"security"`
		} `json:"paths"`
	}
	r.Decode(t, &doc)
	hmacDoc := doc.Components.SecuritySchemes["agent_signature"].Description
	if want := agents.Sign([]byte("secret"), "1700000000", "0123456789abcdef", []byte(`{"a":1}`)); !strings.Contains(hmacDoc, want) {
		t.Fatalf("the HMAC scheme's vector %s is not in the contract: %s", want, hmacDoc)
	}
	rfcDoc := doc.Components.SecuritySchemes["agent_http_signature"].Description
	seed, _ := base64.RawURLEncoding.DecodeString("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU")
	dg, in, sig := agents.SignHTTPSig(ed25519.NewKeyFromSeed(seed), agents.HTTPSigInput{AgentID: "6d1f2c3a-8b4e-4f5a-9c6d-7e8f9a0b1c2d",
		Nonce: "0123456789abcdef0123456789abcdef", Created: 1700000000, Expires: 1700000300, Authority: "trustd.example",
		Path: "/v1/agents/approval/status", Body: []byte(`{"approval_id":"3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b"}`)})
	for _, want := range []string{dg, in, sig, "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU", "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"} {
		if !strings.Contains(rfcDoc, want) {
			t.Fatalf("the RFC 9421 scheme's vector part %s is not in the contract: %s", want, rfcDoc)
		}
	}
	var codes struct {
		Components struct {
			Schemas map[string]struct {
				Description string `json:"description"`
			} `json:"schemas"`
		} `json:"components"`
	}
	r.Decode(t, &codes)
	for _, c := range append(agents.Codes(), agents.HTTPSigCodes()...) {
		if !strings.Contains(codes.Components.Schemas["ApiError"].Description, c.Code+" (") {
			t.Errorf("ApiError does not list %s", c.Code)
		}
	}
	for _, p := range []string{"/v1/agents/decision", "/v1/agents/approval/status"} {
		sec := doc.Paths[p]["post"].Security
		if len(sec) != 2 || sec[0]["agent_signature"] == nil || sec[1]["agent_http_signature"] == nil {
			t.Fatalf("%s security: %v", p, sec)
		}
	}
}

// web-bot-auth signing exactly as its README shows (signerFromJWK, so the
// keyid is the key's JWK thumbprint, and its default components, only
// "@authority") is accepted for an agent of the workspace the request
// names in X-Service-Workspace, and only there: another tenant that
// registered the same public key never receives the request as its own.
// An agent set to the strict profile refuses those defaults.
func TestAgentWebBotAuthDefaultsAgainstANode(t *testing.T) {
	dir := "../examples/webbotauth"
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: run agents/examples/webbotauth/setup.sh (test.sh does)")
	}
	if _, err := os.Stat(dir + "/node_modules/web-bot-auth/package.json"); err != nil {
		t.Skip("web-bot-auth is not installed: run agents/examples/webbotauth/setup.sh (test.sh does)")
	}
	tn := nodetest.Start(t)
	var wsA, wsB struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "wba-a"}, &wsA)
	tn.MustCreate("/workspaces", map[string]any{"name": "wba-b"}, &wsB)
	a, _ := newRFCAgent(t, tn, wsA.ID, true)
	// Tenant B registers A's public key on its own agent.
	pub := base64.RawURLEncoding.EncodeToString(a.priv.Public().(ed25519.PublicKey))
	var b struct {
		ID         string `json:"agent_id"`
		Thumbprint string `json:"ed25519_thumbprint"`
		Profile    string `json:"httpsig_profile"`
	}
	tn.MustCreate("/workspaces/"+wsB.ID+"/agents", map[string]any{"name": "copycat", "ed25519_public_key": pub,
		"allowed_actions": []string{"invoice.*"}, "allowed_scopes": []string{"billing"}}, &b)
	if b.Profile != "web-bot-auth" || b.Thumbprint == "" {
		t.Fatalf("agent view: %+v", b)
	}
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519",
		"d": base64.RawURLEncoding.EncodeToString(a.priv.Seed()), "x": pub})
	type out struct {
		Headers map[string]string `json:"headers"`
		Status  int               `json:"status"`
		Body    string            `json:"body"`
	}
	run := func(env []string, args ...string) out {
		t.Helper()
		cmd := exec.Command("node", append([]string{dir + "/sign.mjs"}, args...)...)
		cmd.Env = append(append(os.Environ(), "TRUSTD_URL="+tn.N.APIURL(), "AGENT_ID="+a.id, "AGENT_JWK="+string(jwk)), env...)
		out2, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node sign.mjs %v: %v %s", args, err, out2)
		}
		var o out
		if err := json.Unmarshal(out2, &o); err != nil {
			t.Fatalf("node output %s: %v", out2, err)
		}
		return o
	}
	const path = "/v1/agents/decision"
	agentOf := func(o out) string {
		t.Helper()
		var d struct {
			AgentID          string `json:"agent_id"`
			Decision         string `json:"decision"`
			IdentityVerified bool   `json:"identity_verified"`
		}
		if o.Status != 200 || json.Unmarshal([]byte(o.Body), &d) != nil || !d.IdentityVerified {
			t.Fatalf("web-bot-auth defaults: %d %s (headers %v)", o.Status, o.Body, o.Headers)
		}
		return d.AgentID
	}

	o := run([]string{"WBA_DEFAULTS=1", "WORKSPACE_ID=" + wsA.ID}, "--send", path, agentDecisionBody("d-1", "invoice.read"))
	if got := agentOf(o); got != a.id {
		t.Fatalf("workspace A's request was answered as agent %s, want %s", got, a.id)
	}
	in := o.Headers["Signature-Input"]
	if !strings.HasPrefix(in, `sig1=("@authority");`) || !strings.Contains(in, `keyid="`+b.Thumbprint+`"`) || o.Headers["Content-Digest"] != "" {
		t.Fatalf("not web-bot-auth's defaults with the thumbprint keyid %s: %v", b.Thumbprint, o.Headers)
	}
	if r := a.send(path, agentDecisionBody("d-1", "invoice.read"), o.Headers); r.Status != 409 || r.ErrorCode(t) != "agent-nonce-reused" {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	// The same key, naming workspace B, is B's agent (B's rules, B's
	// records), never A's.
	o = run([]string{"WBA_DEFAULTS=1", "WORKSPACE_ID=" + wsB.ID}, "--send", path, agentDecisionBody("d-2", "invoice.read"))
	if got := agentOf(o); got != b.ID {
		t.Fatalf("workspace B's request was answered as agent %s, want B's own %s", got, b.ID)
	}
	// No workspace named: the thumbprint resolves nowhere.
	o = run([]string{"WBA_DEFAULTS=1"}, "--send", path, agentDecisionBody("d-3", "invoice.read"))
	if o.Status != 401 || !strings.Contains(o.Body, "agent-httpsig-keyid-invalid") {
		t.Fatalf("thumbprint without X-Service-Workspace: %d %s", o.Status, o.Body)
	}
	// A workspace without that key: unknown.
	var wsC struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "wba-c"}, &wsC)
	o = run([]string{"WBA_DEFAULTS=1", "WORKSPACE_ID=" + wsC.ID}, "--send", path, agentDecisionBody("d-4", "invoice.read"))
	if o.Status != 401 || !strings.Contains(o.Body, "agent-unknown") {
		t.Fatalf("thumbprint in a workspace without the key: %d %s", o.Status, o.Body)
	}

	// Agent A opts into the strict profile: the defaults are refused, the
	// strict signer (agent_id, path and digest covered) still works.
	if r := tn.Admin("PUT", "/workspaces/"+wsA.ID+"/agents/"+a.id, map[string]any{"name": "strict-a", "ed25519_public_key": pub,
		"httpsig_profile": "strict", "allowed_actions": []string{"invoice.*"}, "allowed_scopes": []string{"billing"}}); r.Status != 200 ||
		!strings.Contains(string(r.Body), `"httpsig_profile":"strict"`) {
		t.Fatalf("set strict: %d %s", r.Status, r.Body)
	}
	o = run([]string{"WBA_DEFAULTS=1", "WORKSPACE_ID=" + wsA.ID}, "--send", path, agentDecisionBody("d-5", "invoice.read"))
	if o.Status != 401 || !strings.Contains(o.Body, "agent-httpsig-keyid-invalid") {
		t.Fatalf("strict agent, thumbprint keyid: %d %s", o.Status, o.Body)
	}
	o = run(nil, "--send", path, agentDecisionBody("d-6", "invoice.read"))
	if got := agentOf(o); got != a.id {
		t.Fatalf("strict signer: %s", got)
	}
	if r := tn.Admin("PUT", "/workspaces/"+wsA.ID+"/agents/"+a.id, map[string]any{"name": "strict-a", "httpsig_profile": "lax"}); r.Status != 400 {
		t.Fatalf("unknown profile: %d %s", r.Status, r.Body)
	}
}
