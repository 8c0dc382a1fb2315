package api_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// The published signer examples (agents/examples) sign a decision that a
// real node accepts.
func TestAgentSignerExamplesAgainstANode(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "examples"}, &ws)
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.ID+"/agents", map[string]any{"name": "ex", "allowed_actions": []string{"*"}, "allowed_scopes": []string{"s"}}, &ag)
	env := append(os.Environ(), "TRUSTD_URL="+tn.N.APIURL(), "AGENT_ID="+ag.ID, "AGENT_SECRET="+ag.Secret)
	body := func(req string) string {
		return `{"request_id":"` + req + `","action":"a.b","scope":"s","resource_id":"r","subject_id":"u","summary":"x"}`
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "200 ") || !strings.Contains(string(out), `"decision":"allow"`) {
			t.Fatalf("%s %v: %v %s", name, args, err, out)
		}
	}
	run("go", "run", "../examples/gosigner", "/v1/agents/decision", body("go-1"))
	// The RFC 9421 Go example, for an agent with an Ed25519 key.
	pub, priv, _ := ed25519.GenerateKey(nil)
	var rag struct {
		ID string `json:"agent_id"`
	}
	tn.MustCreate("/workspaces/"+ws.ID+"/agents", map[string]any{"name": "ex-rfc", "allowed_actions": []string{"*"}, "allowed_scopes": []string{"s"},
		"ed25519_public_key": base64.RawURLEncoding.EncodeToString(pub)}, &rag)
	env = append(os.Environ(), "TRUSTD_URL="+tn.N.APIURL(), "AGENT_ID="+rag.ID, "AGENT_ED25519_SEED="+base64.RawURLEncoding.EncodeToString(priv.Seed()))
	run("go", "run", "../examples/gohttpsig", "/v1/agents/decision", body("go-rfc-1"))
	env = append(os.Environ(), "TRUSTD_URL="+tn.N.APIURL(), "AGENT_ID="+ag.ID, "AGENT_SECRET="+ag.Secret)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the Node signer example is not tested")
	}
	run("node", "../examples/sign.mjs", "/v1/agents/decision", body("node-1"))
}
