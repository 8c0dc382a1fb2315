package clustertest

import (
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/google/uuid"

	"github.com/trustd/trustd/agents"
)

type oneAgent agents.Identity

func (a oneAgent) Agent(id uuid.UUID) (agents.Identity, bool) {
	return agents.Identity(a), id == a.ID
}

// A signed agent request's nonce, consumed through one node, is refused
// through every node, and still after the node that owned it is killed.
func TestAgentNonceReplayIsRefusedOnEveryNodeAndAfterTheOwnerDies(t *testing.T) {
	c := Start(t, 3)
	secret := []byte("agent-secret")
	ag := oneAgent{ID: uuid.New(), Status: agents.StatusActive, Keys: []agents.Key{{Secret: secret}}}
	verifier := func(i int) *agents.Verifier {
		return &agents.Verifier{Dir: ag, Nonces: agents.MarkerNonces{Router: c.Nodes[i].Router()}}
	}
	body := []byte(`{"request_id":"r"}`)
	req := func(nonce string) agents.Request {
		ts := fmt.Sprint(time.Now().Unix())
		return agents.Request{Agent: ag.ID.String(), Timestamp: ts, Nonce: nonce, Signature: agents.Sign(secret, ts, nonce, body), Body: body}
	}
	// Nonces whose marker node-0 owns, each first used through node-1.
	var owned []string
	for k := 0; len(owned) < 10; k++ {
		n := fmt.Sprintf("nonce-owned-by-0-%04d", k)
		if c.Owner(1, agents.NonceKey(ag.ID, n)) != 0 {
			continue
		}
		if _, err := verifier(1).Verify(req(n)); err != nil {
			t.Fatalf("first use of %s: %v", n, err)
		}
		owned = append(owned, n)
	}
	for _, n := range owned {
		for i := 0; i < 3; i++ {
			if _, err := verifier(i).Verify(req(n)); !errors.Is(err, agents.ErrNonceReused) {
				t.Fatalf("replay of %s through node-%d: %v", n, i, err)
			}
		}
	}
	c.Kill(0)
	c.WaitRing(2)
	for _, n := range owned {
		for _, i := range []int{1, 2} {
			if _, err := verifier(i).Verify(req(n)); !errors.Is(err, agents.ErrNonceReused) {
				t.Fatalf("replay of %s through node-%d after its owner died: %v", n, i, err)
			}
		}
	}
}

// The same through HTTP: a signed decision whose nonce node-0 owns is sent
// through node-1; the identical request is refused through all three
// nodes, and through the survivors after node-0 is killed.
func TestSignedAgentRequestReplayIsRefusedOverHTTPOnEveryNode(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"agents"}`), &ws); err != nil {
		t.Fatal(err)
	}
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	b := c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/agents", `{"name":"bot","allowed_actions":["*"],"allowed_scopes":["s"]}`)
	if err := json.Unmarshal(b, &ag); err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(ag.ID)
	nonce := ""
	for k := 0; nonce == ""; k++ {
		if n := fmt.Sprintf("http-nonce-owned-by-0-%04d", k); c.Owner(1, agents.NonceKey(id, n)) == 0 {
			nonce = n
		}
	}
	body := `{"request_id":"r1","action":"a","scope":"s","resource_id":"","subject_id":"","summary":""}`
	ts := fmt.Sprint(time.Now().Unix())
	send := func(i int) (int, string) {
		req, err := nethttp.NewRequest("POST", c.Nodes[i].APIURL()+"/v1/agents/decision", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(agents.HeaderAgent, ag.ID)
		req.Header.Set(agents.HeaderTimestamp, ts)
		req.Header.Set(agents.HeaderNonce, nonce)
		req.Header.Set(agents.HeaderSignature, agents.Sign([]byte(ag.Secret), ts, nonce, []byte(body)))
		resp, err := (&nethttp.Client{Timeout: 15 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	// The agent must be known on node-1 before the first use: wait for
	// the catalog to reach it (an unknown agent consumes no nonce).
	Eventually(t, 10*time.Second, func() error {
		if c.Nodes[1].Store().Catalog().Agents[ag.ID] == nil || c.Nodes[2].Store().Catalog().Agents[ag.ID] == nil {
			return fmt.Errorf("agent not replicated yet")
		}
		return nil
	})
	if st, out := send(1); st != 200 {
		t.Fatalf("first use through node-1: %d %s", st, out)
	}
	replay := func(nodes ...int) {
		for _, i := range nodes {
			if st, out := send(i); st != 409 || !strings.Contains(out, "agent-nonce-reused") {
				t.Fatalf("replay through node-%d: %d %s", i, st, out)
			}
		}
	}
	replay(0, 1, 2)
	c.Kill(0)
	c.WaitRing(2)
	replay(1, 2)
}
