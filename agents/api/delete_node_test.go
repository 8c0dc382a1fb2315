package api_test

import (
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// Deleting an agent deletes its approval requests: a pending one can no
// longer be approved, an approved one no longer consumed, and the agent's
// signed requests answer agent-unknown.
func TestDeleteAgentThroughHTTP(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "delete-agent"}, &ws)
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.MustCreate("/workspaces/"+ws.ID+"/agents", map[string]any{"name": "doomed", "allowed_actions": []string{"refund.*"},
		"allowed_scopes": []string{"billing"}, "approval_rules": []map[string]any{{"action": "refund.*"}}}, &ag)
	a := signedAgent{tn: tn, id: ag.ID, secret: ag.Secret}
	approval := func(req string) string {
		var d struct {
			ApprovalRequestID string `json:"approval_request_id"`
		}
		r := a.send("/agents/decision", agentDecisionBody(req, "refund.issue"))
		r.Decode(t, &d)
		if r.Status != 200 || d.ApprovalRequestID == "" {
			t.Fatalf("decision: %d %s", r.Status, r.Body)
		}
		return d.ApprovalRequestID
	}
	pending, approved := approval("del-1"), approval("del-2")
	if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+approved+"/approve", map[string]any{"by": "alice"}); r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	r := tn.Admin("DELETE", "/workspaces/"+ws.ID+"/agents/"+ag.ID, nil)
	var del struct {
		AgentID            string `json:"agent_id"`
		ApprovalsDeleted   int    `json:"approvals_deleted"`
		Pending            int    `json:"pending"`
		ApprovedUnconsumed int    `json:"approved_unconsumed"`
	}
	r.Decode(t, &del)
	if r.Status != 200 || del.AgentID != ag.ID || del.ApprovalsDeleted != 2 || del.Pending != 1 || del.ApprovedUnconsumed != 1 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := a.send("/agents/approval/status", `{"approval_id":"`+approved+`"}`); r.Status != 401 || r.ErrorCode(t) != "agent-unknown" {
		t.Fatalf("consume after delete: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("POST", "/workspaces/"+ws.ID+"/approvals/"+pending+"/approve", map[string]any{"by": "bob"}); r.Status != 404 || r.ErrorCode(t) != "agent-approval-not-found" {
		t.Fatalf("approve after delete: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("GET", "/workspaces/"+ws.ID+"/approvals", nil); r.Status != 200 || contains(r.Body, pending) || contains(r.Body, approved) {
		t.Fatalf("approvals after delete: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("DELETE", "/workspaces/"+ws.ID+"/agents/"+ag.ID, nil); r.Status != 404 || r.ErrorCode(t) != "agent-not-found" {
		t.Fatalf("delete twice: %d %s", r.Status, r.Body)
	}
}
