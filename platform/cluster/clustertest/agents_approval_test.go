package clustertest

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/agents"
)

// One approved approval, read concurrently through all three nodes by
// signed status requests (HMAC and RFC 9421 mixed), is consumed exactly
// once: one answer says consumed:true, every other is
// agent-approval-consumed.
func TestApprovalIsConsumedExactlyOnceAcrossNodes(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"approvals"}`), &ws); err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(nil)
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	b := c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/agents", `{"name":"bot","allowed_actions":["refund.*"],"allowed_scopes":["billing"],`+
		`"approval_rules":[{"action":"refund.*"}],"ed25519_public_key":"`+base64.RawURLEncoding.EncodeToString(pub)+`"}`)
	if err := json.Unmarshal(b, &ag); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, func() error {
		for i := range c.Nodes {
			if c.Nodes[i].Store().Catalog().Agents[ag.ID] == nil {
				return fmt.Errorf("agent not on node-%d yet", i)
			}
		}
		return nil
	})
	var seq atomic.Int64
	// sendAs signs with nonce at now; RFC 9421 signatures cover the
	// authority of signedFor's node.
	sendAs := func(i, signedFor int, path, body string, rfc bool, nonce string, now int64) (int, string) {
		req, err := nethttp.NewRequest("POST", c.Nodes[i].APIURL()+path, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("Content-Type", "application/json")
		if rfc {
			host := strings.TrimPrefix(strings.TrimPrefix(c.Nodes[signedFor].APIURL(), "http://"), "https://")
			req.Host = host
			dg, in, sig := agents.SignHTTPSig(priv, agents.HTTPSigInput{AgentID: ag.ID, Nonce: nonce, Created: now, Expires: now + 60,
				Authority: agents.NormalizeAuthority(host), Path: path, Body: []byte(body)})
			req.Header.Set("Content-Digest", dg)
			req.Header.Set("Signature-Input", in)
			req.Header.Set("Signature", sig)
		} else {
			ts := fmt.Sprint(now)
			req.Header.Set(agents.HeaderAgent, ag.ID)
			req.Header.Set(agents.HeaderTimestamp, ts)
			req.Header.Set(agents.HeaderNonce, nonce)
			req.Header.Set(agents.HeaderSignature, agents.Sign([]byte(ag.Secret), ts, nonce, []byte(body)))
		}
		resp, err := (&nethttp.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	send := func(i int, path, body string, rfc bool) (int, string) {
		return sendAs(i, i, path, body, rfc, fmt.Sprintf("cross-node-nonce-%08d", seq.Add(1)), time.Now().Unix())
	}
	var d struct {
		Decision          string `json:"decision"`
		ApprovalRequestID string `json:"approval_request_id"`
	}
	decision := `{"request_id":"x1","action":"refund.issue","scope":"billing","resource_id":"r","subject_id":"s","summary":"refund"}`
	now := time.Now().Unix()
	nonce := ""
	var st int
	var out string
	for a, deadline := 0, time.Now().Add(20*time.Second); ; a++ {
		// A 503 is retried with a fresh nonce, as a client would.
		nonce = fmt.Sprintf("rfc9421-cross-node-nonce-%d", a)
		if st, out = sendAs(2, 2, "/v1/agents/decision", decision, true, nonce, now); st != 503 || time.Now().After(deadline) {
			break
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || st != 200 || d.Decision != "approval_required" {
		t.Fatalf("decision through node-2: %d %s", st, out)
	}
	// The same RFC 9421 request (same Host, signature and nonce) replayed
	// through every node: one nonce store across the cluster.
	for i := range c.Nodes {
		st, out := sendAs(i, 2, "/v1/agents/decision", decision, true, nonce, now)
		for deadline := time.Now().Add(20 * time.Second); st == 503 && time.Now().Before(deadline); {
			st, out = sendAs(i, 2, "/v1/agents/decision", decision, true, nonce, now)
		}
		if st != 409 || !strings.Contains(out, "agent-nonce-reused") {
			t.Fatalf("RFC 9421 replay through node-%d: %d %s", i, st, out)
		}
	}
	Eventually(t, 10*time.Second, func() error {
		st, b, err := c.Do(1, "POST", "/admin/v1/workspaces/"+ws.ID+"/approvals/"+d.ApprovalRequestID+"/approve", []byte(`{"by":"alice"}`))
		if err != nil || st != 200 {
			return fmt.Errorf("approve through node-1: %d %s %v", st, b, err)
		}
		return nil
	})
	Eventually(t, 10*time.Second, func() error {
		for i := range c.Nodes {
			if a := c.Nodes[i].Store().Catalog().Approvals[d.ApprovalRequestID]; a == nil || a.Status != "approved" {
				return fmt.Errorf("approval not approved on node-%d yet", i)
			}
		}
		return nil
	})

	const perNode = 4
	type answer struct {
		node   int
		status int
		body   string
	}
	answers := make(chan answer, 3*perNode)
	start := make(chan struct{})
	var unavailable atomic.Int64
	var wg sync.WaitGroup
	for i := range c.Nodes {
		for k := range perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// A 503 (a nonce's owner did not answer in time on this
				// loaded machine) consumed nothing: the signature step
				// failed closed before the consume. The agent retries
				// with a fresh nonce, as a client would.
				for deadline := time.Now().Add(30 * time.Second); ; {
					st, out := send(i, "/v1/agents/approval/status", `{"approval_id":"`+d.ApprovalRequestID+`"}`, k%2 == 0)
					if st == 503 && time.Now().Before(deadline) {
						unavailable.Add(1)
						continue
					}
					answers <- answer{i, st, out}
					return
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(answers)
	consumed, refused := 0, 0
	for a := range answers {
		switch {
		case a.status == 200 && strings.Contains(a.body, `"consumed":true`) && strings.Contains(a.body, `"status":"approved"`):
			consumed++
		case a.status == 409 && strings.Contains(a.body, "agent-approval-consumed"):
			refused++
		default:
			t.Errorf("node-%d answered %d %s", a.node, a.status, a.body)
		}
	}
	t.Logf("%d reads were retried after a 503", unavailable.Load())
	if consumed != 1 || refused != 3*perNode-1 {
		t.Fatalf("%d reads consumed the approval and %d were refused, want 1 and %d", consumed, refused, 3*perNode-1)
	}
	for i := range c.Nodes {
		Eventually(t, 10*time.Second, func() error {
			if a := c.Nodes[i].Store().Catalog().Approvals[d.ApprovalRequestID]; a == nil || a.ConsumedAt.IsZero() {
				return fmt.Errorf("node-%d does not record the consumption", i)
			}
			return nil
		})
	}
}
