package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/agents"
	"github.com/trustd/trustd/node/nodetest"
)

var agentNonceSeq atomic.Int64

type signedAgent struct {
	tn     *nodetest.Node
	id     string
	secret string
}

// send signs body with the agent's secret (the documented scheme) and
// posts it; mutate may change the headers after signing.
func (a signedAgent) send(path, body string, mutate ...func(h map[string]string)) nodetest.Response {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	nonce := fmt.Sprintf("nonce-%016d", agentNonceSeq.Add(1))
	h := map[string]string{
		agents.HeaderAgent: a.id, agents.HeaderTimestamp: ts, agents.HeaderNonce: nonce,
		agents.HeaderSignature: agents.Sign([]byte(a.secret), ts, nonce, []byte(body)),
	}
	for _, m := range mutate {
		m(h)
	}
	var hs []string
	for k, v := range h {
		hs = append(hs, k, v)
	}
	return a.tn.Do("POST", "/v1"+path, "", body, hs...)
}

func TestAgentTrustThroughHTTP(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "agents"}, &ws)
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.ID+"/agents", map[string]any{
		"name": "billing-bot", "allowed_actions": []string{"invoice.*", "refund.*"}, "allowed_scopes": []string{"billing"},
		"approval_rules": []map[string]any{{"action": "refund.*"}},
	}, &ag)
	if ag.Secret == "" {
		t.Fatal("no secret in the create answer")
	}
	if r := tn.Admin("GET", "/workspaces/"+ws.ID+"/agents/"+ag.ID, nil); r.Status != 200 || string(r.Body) == "" || contains(r.Body, ag.Secret) {
		t.Fatalf("get agent: %d %s", r.Status, r.Body)
	}
	a := signedAgent{tn: tn, id: ag.ID, secret: ag.Secret}
	decision := func(req, action string) string {
		return `{"request_id":"` + req + `","action":"` + action + `","scope":"billing","resource_id":"inv-1","subject_id":"cust-1","summary":"s"}`
	}

	t.Run("every failure has its code", func(t *testing.T) {
		body := decision("f1", "invoice.read")
		cases := []struct {
			name   string
			mutate func(h map[string]string)
			Status int
			code   string
		}{
			{"agent not a uuid", func(h map[string]string) { h[agents.HeaderAgent] = "x" }, 401, "agent-id-invalid"},
			{"unknown agent", func(h map[string]string) { h[agents.HeaderAgent] = uuid.NewString() }, 401, "agent-unknown"},
			{"timestamp format", func(h map[string]string) { h[agents.HeaderTimestamp] = "12345" }, 401, "agent-timestamp-invalid"},
			{"stale", func(h map[string]string) { h[agents.HeaderTimestamp] = strconv.FormatInt(time.Now().Unix()-400, 10) }, 401, "agent-timestamp-stale"},
			{"future", func(h map[string]string) { h[agents.HeaderTimestamp] = strconv.FormatInt(time.Now().Unix()+400, 10) }, 401, "agent-timestamp-future"},
			{"bad nonce", func(h map[string]string) { h[agents.HeaderNonce] = "short" }, 401, "agent-nonce-invalid"},
			{"bad signature", func(h map[string]string) { h[agents.HeaderSignature] = agents.Sign([]byte("wrong"), "0", "0", nil) }, 401, "agent-signature-invalid"},
		}
		for _, c := range cases {
			r := a.send("/agents/decision", body, c.mutate)
			if r.Status != c.Status || r.ErrorCode(t) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.Status, c.code)
			}
		}
		// Replay: the same headers and body twice.
		var saved map[string]string
		r := a.send("/agents/decision", decision("replay", "invoice.read"), func(h map[string]string) { saved = maps(h) })
		if r.Status != 200 {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		r = a.send("/agents/decision", decision("replay", "invoice.read"), func(h map[string]string) {
			for k, v := range saved {
				h[k] = v
			}
		})
		if r.Status != 409 || r.ErrorCode(t) != "agent-nonce-reused" {
			t.Fatalf("replay: %d %s", r.Status, r.Body)
		}
	})

	t.Run("signed bodies are decoded strictly", func(t *testing.T) {
		for _, b := range []string{
			`{"request_id":"a","request_id":"b","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":""}`,
			`{"REQUEST_ID":"a","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":""}`,
			`{"request_id":"a","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":"","x":1}`,
			`{"request_id":"a","action":"invoice.read","scope":"billing","resource_id":"","subject_id":"","summary":""} {}`,
			"{\"request_id\":\"\xff\",\"action\":\"invoice.read\",\"scope\":\"billing\",\"resource_id\":\"\",\"subject_id\":\"\",\"summary\":\"\"}",
		} {
			if r := a.send("/agents/decision", b); r.Status != 400 || r.ErrorCode(t) != "agent-body-invalid" {
				t.Errorf("%q: %d %s", b, r.Status, r.Body)
			}
		}
	})

	t.Run("allow, deny and idempotent approval_required", func(t *testing.T) {
		var d struct {
			Decision          string   `json:"decision"`
			DecisionID        string   `json:"decision_id"`
			ApprovalRequestID string   `json:"approval_request_id"`
			ReasonCodes       []string `json:"reason_codes"`
		}
		get := func(r nodetest.Response) {
			t.Helper()
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			d.ApprovalRequestID = ""
			r.Decode(t, &d)
		}
		get(a.send("/agents/decision", decision("d1", "invoice.read")))
		if d.Decision != "allow" {
			t.Fatalf("invoice.read: %+v", d)
		}
		get(a.send("/agents/decision", decision("d2", "account.delete")))
		if d.Decision != "deny" {
			t.Fatalf("account.delete: %+v", d)
		}
		get(a.send("/agents/decision", decision("d3", "refund.issue")))
		if d.Decision != "approval_required" || d.ApprovalRequestID == "" {
			t.Fatalf("refund.issue: %+v", d)
		}
		first := d
		get(a.send("/agents/decision", decision("d3", "refund.issue")))
		if d.DecisionID != first.DecisionID || d.ApprovalRequestID != first.ApprovalRequestID {
			t.Fatalf("retry got another answer: %+v vs %+v", d, first)
		}
		if r := a.send("/agents/decision", decision("d3", "refund.other")); r.Status != 409 || r.ErrorCode(t) != "agent-request-id-reused" {
			t.Fatalf("reused request_id: %d %s", r.Status, r.Body)
		}
		var list struct {
			Approvals []struct {
				ApprovalID string `json:"approval_id"`
				Status     string `json:"status"`
			} `json:"approvals"`
		}
		r := tn.Admin("GET", "/workspaces/"+ws.ID+"/approvals", nil)
		r.Decode(t, &list)
		if len(list.Approvals) != 1 || list.Approvals[0].Status != "pending" {
			t.Fatalf("approvals after a retried decision: %s", r.Body)
		}

		status := func() nodetest.Response {
			return a.send("/agents/approval/status", `{"approval_id":"`+first.ApprovalRequestID+`"}`)
		}
		var st struct {
			Status   string `json:"status"`
			Consumed bool   `json:"consumed"`
		}
		r = status()
		r.Decode(t, &st)
		if r.Status != 200 || st.Status != "pending" || st.Consumed {
			t.Fatalf("pending status: %d %s", r.Status, r.Body)
		}
		if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+first.ApprovalRequestID+"/approve", map[string]any{"by": "alice"}); r.Status != 200 {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+first.ApprovalRequestID+"/deny", map[string]any{"by": "bob"}); r.Status != 409 {
			t.Fatalf("deny after approve: %d %s", r.Status, r.Body)
		}
		r = status()
		r.Decode(t, &st)
		if r.Status != 200 || st.Status != "approved" || !st.Consumed {
			t.Fatalf("consuming status: %d %s", r.Status, r.Body)
		}
		if r := status(); r.Status != 409 || r.ErrorCode(t) != "agent-approval-consumed" {
			t.Fatalf("second consume: %d %s", r.Status, r.Body)
		}
	})

	t.Run("concurrent status reads consume an approval once", func(t *testing.T) {
		var d struct {
			ApprovalRequestID string `json:"approval_request_id"`
		}
		r := a.send("/agents/decision", decision("c1", "refund.big"))
		r.Decode(t, &d)
		if d.ApprovalRequestID == "" {
			t.Fatalf("no approval: %s", r.Body)
		}
		if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+d.ApprovalRequestID+"/approve", map[string]any{"by": "carol"}); r.Status != 200 {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		const n = 12
		results := make(chan nodetest.Response, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- a.send("/agents/approval/status", `{"approval_id":"`+d.ApprovalRequestID+`"}`)
			}()
		}
		wg.Wait()
		close(results)
		consumed, refused := 0, 0
		for r := range results {
			switch {
			case r.Status == 200 && strings.Contains(string(r.Body), `"consumed":true`):
				consumed++
			case r.Status == 409 && strings.Contains(string(r.Body), "agent-approval-consumed"):
				refused++
			default:
				t.Errorf("unexpected answer %d %s", r.Status, r.Body)
			}
		}
		if consumed != 1 || refused != n-1 {
			t.Fatalf("%d reads consumed and %d were refused, want 1 and %d", consumed, refused, n-1)
		}
	})

	t.Run("suspended and rotated", func(t *testing.T) {
		var rot struct {
			Secret       string `json:"secret"`
			SecretsValid int    `json:"secrets_valid"`
		}
		r := tn.Admin("POST", "/workspaces/"+ws.ID+"/agents/"+ag.ID+"/rotate-secret", map[string]any{"overlap_seconds": 60})
		r.Decode(t, &rot)
		if r.Status != 200 || rot.Secret == "" || rot.SecretsValid != 2 {
			t.Fatalf("rotate: %d %s", r.Status, r.Body)
		}
		for _, sec := range []string{ag.Secret, rot.Secret} {
			b := signedAgent{tn: tn, id: ag.ID, secret: sec}
			if r := b.send("/agents/decision", decision("rot-"+sec[:8], "invoice.read")); r.Status != 200 {
				t.Fatalf("secret valid in the overlap: %d %s", r.Status, r.Body)
			}
		}
		if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/agents/"+ag.ID+"/suspend", nil); r.Status != 200 {
			t.Fatalf("suspend: %d %s", r.Status, r.Body)
		}
		if r := a.send("/agents/decision", decision("s1", "invoice.read")); r.Status != 403 || r.ErrorCode(t) != "agent-suspended" {
			t.Fatalf("suspended: %d %s", r.Status, r.Body)
		}
	})
}

func maps(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	return out
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
