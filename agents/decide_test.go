package agents

import (
	"slices"
	"testing"

	"github.com/trustd/trustd/platform/catalog"
)

func TestDecide(t *testing.T) {
	a := &catalog.Agent{AllowedActions: []string{"invoice.*", "refund.*"}, AllowedScopes: []string{"billing", "ops"},
		ApprovalRules: []catalog.AgentRule{{Action: "refund.*"}, {Scope: "ops", RiskAtLeast: 10}}}
	in := func(action, scope string) DecisionInput {
		return DecisionInput{RequestID: "r", Action: action, Scope: scope}
	}
	cases := []struct {
		name     string
		in       DecisionInput
		b        Behaviour
		decision string
		reason   string
	}{
		{"allowed", in("invoice.read", "billing"), Behaviour{}, DecisionAllow, ReasonWithinPolicy},
		{"action not allowed", in("user.delete", "billing"), Behaviour{}, DecisionDeny, ReasonActionNotAllowed},
		{"scope not allowed", in("invoice.read", "hr"), Behaviour{}, DecisionDeny, ReasonScopeNotAllowed},
		{"rule by action", in("refund.issue", "billing"), Behaviour{}, DecisionApproval, ReasonRuleRequires},
		{"rule threshold by scope", in("invoice.read", "ops"), Behaviour{NewScope: true}, DecisionApproval, ReasonRiskRequires},
		{"under the threshold", in("invoice.read", "ops"), Behaviour{}, DecisionAllow, ReasonWithinPolicy},
		{"default threshold", in("invoice.read", "billing"), Behaviour{Rate: 500, FailedSignatures: 5, DeniedApprovals: 1}, DecisionApproval, ReasonRiskRequires},
		{"velocity alone", in("invoice.read", "billing"), Behaviour{Rate: 40, Baseline: 10}, DecisionAllow, ReasonHighVelocity},
	}
	for _, c := range cases {
		o := Decide(a, c.in, c.b)
		if o.Decision != c.decision || !slices.Contains(o.ReasonCodes, c.reason) {
			t.Errorf("%s: %+v, want %s with %s", c.name, o, c.decision, c.reason)
		}
	}
}
