package clustertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

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
