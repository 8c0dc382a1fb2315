package clustertest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// A step-up proof is single use across the cluster: exchanged once
// through one node, its replay is refused through every node, also after
// the node that owns its marker is killed; its assessment backs one
// orchestration, through any node.
func TestTrustProofReplayIsRefusedOnEveryNodeAndAfterTheOwnerDies(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"trust"}`), &ws); err != nil {
		t.Fatal(err)
	}
	var site struct {
		ID     string `json:"site_id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/sites", `{"name":"shop","hostnames":["shop.example"]}`), &site); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, func() error {
		for i := range c.Nodes {
			if c.Nodes[i].Store().Catalog().Sites[site.ID] == nil {
				return fmt.Errorf("site not on node-%d yet", i)
			}
		}
		return nil
	})
	cat := c.Nodes[0].Store().Catalog()
	sk := cat.SigningKey(catalog.KeyLive)
	key := token.NewKey(sk.ID, sk.Secret)
	lookup := func(id string) *token.Key {
		if id == key.ID {
			return key
		}
		return nil
	}
	// A proof whose single-use marker node-0 owns, so killing node-0
	// leaves the replica to refuse the replay.
	var proof string
	for proof == "" {
		p := trust.IssueProof(key, cat.Workspaces[ws.ID], trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh,
			Identity: true, Liveness: true, SubjectID: "alice", OperationReference: "pay-1", Action: "pay", AuthTime: time.Now(), TTL: time.Minute}, time.Now())
		dec, err := token.DecodeProof(p, lookup)
		if err != nil {
			t.Fatal(err)
		}
		if c.Owner(1, "prf/"+hex.EncodeToString(dec.ID[:])) == 0 {
			proof = p
		}
	}
	type answer struct {
		Success      bool     `json:"success"`
		ErrorCodes   []string `json:"error-codes"`
		AssessmentID string   `json:"assessment_id"`
	}
	exchange := func(i int) answer {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"secret": site.Secret, "response": proof, "action": "pay", "expected_assurance": "standard",
			"require_operation_binding": true, "operation_reference": "pay-1"})
		st, out, err := c.DoAs(i, "POST", "/v1/trust/siteverify", site.Secret, body)
		if err != nil || st != 200 {
			t.Fatalf("trust siteverify through node-%d: %d %s %v", i, st, out, err)
		}
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	first := exchange(1)
	if !first.Success || first.AssessmentID == "" {
		t.Fatalf("first exchange through node-1: %+v", first)
	}
	replay := func(nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			if a := exchange(i); a.Success || strings.Join(a.ErrorCodes, ",") != "timeout-or-duplicate" || a.AssessmentID != "" {
				t.Fatalf("replay through node-%d: %+v", i, a)
			}
		}
	}
	replay(0, 1, 2)

	orchestrate := func(i int) (int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"secret": site.Secret, "assessment_id": first.AssessmentID, "subject_id": "alice",
			"action": "pay", "operation_reference": "pay-1"})
		st, out, err := c.DoAs(i, "POST", "/v1/trust/orchestrate", site.Secret, body)
		if err != nil {
			t.Fatal(err)
		}
		return st, string(out)
	}
	if st, out := orchestrate(2); st != 200 || !strings.Contains(out, `"receipt":"`) {
		t.Fatalf("orchestrate through node-2: %d %s", st, out)
	}
	for _, i := range []int{0, 1} {
		if st, out := orchestrate(i); st != 409 || !strings.Contains(out, "assessment-already-orchestrated") {
			t.Fatalf("a second orchestration through node-%d: %d %s", i, st, out)
		}
	}

	// Parallel exchanges of one fresh proof through all three nodes:
	// exactly one succeeds.
	proof = trust.IssueProof(key, cat.Workspaces[ws.ID], trust.ProofInput{Method: "facial_authorization", Assurance: trust.LevelHigh,
		Identity: true, Liveness: true, OperationReference: "pay-1", Action: "pay", AuthTime: time.Now(), TTL: time.Minute}, time.Now())
	var mu sync.Mutex
	wins := 0
	var wg sync.WaitGroup
	for k := 0; k < 12; k++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"secret": site.Secret, "response": proof, "action": "pay"})
			st, out, err := c.DoAs(i, "POST", "/v1/trust/siteverify", site.Secret, body)
			var a answer
			if err != nil || st != 200 || json.Unmarshal(out, &a) != nil {
				t.Errorf("parallel exchange through node-%d: %d %s %v", i, st, out, err)
				return
			}
			if a.Success {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}(k % 3)
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d parallel exchanges of one proof succeeded, want exactly 1", wins)
	}

	c.Kill(0)
	c.WaitRing(2)
	replay(1, 2)
}
