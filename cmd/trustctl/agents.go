package main

// agentDeletedColumns prints the answer of `trustctl agents delete <id>`:
// the agent's approval requests are deleted with it, and the answer says
// how many were still pending (no longer approvable) or approved and
// unconsumed (no longer consumable).
var agentDeletedColumns = resource{cols: []string{"agent_id", "approvals_deleted", "pending", "approved_unconsumed"}}
