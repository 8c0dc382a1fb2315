package http_test

import (
	"testing"
)

// Deleting an agent deletes its approval requests: a pending one can no
// longer be approved, an approved one no longer consumed, and the agent's
// signed requests answer agent-unknown.
func TestDeleteAgentThroughHTTP(t *testing.T) {
	tn := mustStartNode(t)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	tn.mustCreate("/workspaces", map[string]any{"name": "delete-agent"}, &ws)
	var ag struct {
		ID     string `json:"agent_id"`
		Secret string `json:"secret"`
	}
	tn.mustCreate("/workspaces/"+ws.ID+"/agents", map[string]any{"name": "doomed", "allowed_actions": []string{"refund.*"},
		"allowed_scopes": []string{"billing"}, "approval_rules": []map[string]any{{"action": "refund.*"}}}, &ag)
	a := signedAgent{tn: tn, id: ag.ID, secret: ag.Secret}
	approval := func(req string) string {
		var d struct {
			ApprovalRequestID string `json:"approval_request_id"`
		}
		r := a.send("/agents/decision", agentDecisionBody(req, "refund.issue"))
		r.decode(t, &d)
		if r.status != 200 || d.ApprovalRequestID == "" {
			t.Fatalf("decision: %d %s", r.status, r.body)
		}
		return d.ApprovalRequestID
	}
	pending, approved := approval("del-1"), approval("del-2")
	if r := tn.admin("POST", "/workspaces/"+ws.ID+"/approvals/"+approved+"/approve", map[string]any{"by": "alice"}); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	r := tn.admin("DELETE", "/workspaces/"+ws.ID+"/agents/"+ag.ID, nil)
	var del struct {
		AgentID            string `json:"agent_id"`
		ApprovalsDeleted   int    `json:"approvals_deleted"`
		Pending            int    `json:"pending"`
		ApprovedUnconsumed int    `json:"approved_unconsumed"`
	}
	r.decode(t, &del)
	if r.status != 200 || del.AgentID != ag.ID || del.ApprovalsDeleted != 2 || del.Pending != 1 || del.ApprovedUnconsumed != 1 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := a.send("/agents/approval/status", `{"approval_id":"`+approved+`"}`); r.status != 401 || r.errorCode(t) != "agent-unknown" {
		t.Fatalf("consume after delete: %d %s", r.status, r.body)
	}
	if r := tn.admin("POST", "/workspaces/"+ws.ID+"/approvals/"+pending+"/approve", map[string]any{"by": "bob"}); r.status != 404 || r.errorCode(t) != "agent-approval-not-found" {
		t.Fatalf("approve after delete: %d %s", r.status, r.body)
	}
	if r := tn.admin("GET", "/workspaces/"+ws.ID+"/approvals", nil); r.status != 200 || contains(r.body, pending) || contains(r.body, approved) {
		t.Fatalf("approvals after delete: %d %s", r.status, r.body)
	}
	if r := tn.admin("DELETE", "/workspaces/"+ws.ID+"/agents/"+ag.ID, nil); r.status != 404 || r.errorCode(t) != "agent-not-found" {
		t.Fatalf("delete twice: %d %s", r.status, r.body)
	}
}
