package agents

import (
	"path"
	"slices"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// DecisionInput is the signed body of POST /agents/decision (spec 4.4).
type DecisionInput struct {
	RequestID  string `json:"request_id"`
	Action     string `json:"action"`
	Scope      string `json:"scope"`
	ResourceID string `json:"resource_id"`
	SubjectID  string `json:"subject_id"`
	Summary    string `json:"summary"`
}

// ErrDecisionInput is a decision body whose fields are out of range.
var ErrDecisionInput = errcode.New("agent-decision-invalid", errcode.Invalid, "request_id, action and scope are 1 to 128 bytes; resource_id and subject_id at most 128; summary at most 1000")

// Validate checks the field lengths.
func (in DecisionInput) Validate() error {
	for _, f := range []string{in.RequestID, in.Action, in.Scope} {
		if f == "" || len(f) > 128 {
			return ErrDecisionInput
		}
	}
	if len(in.ResourceID) > 128 || len(in.SubjectID) > 128 || len(in.Summary) > 1000 {
		return ErrDecisionInput
	}
	return nil
}

// Behaviour is what the cluster observed of an agent (actor state).
type Behaviour struct {
	// Rate is the agent's decisions over the last minute, Baseline its
	// usual rate per minute (0 until known).
	Rate, Baseline float64
	// FailedSignatures and DeniedApprovals over the last hour.
	FailedSignatures, DeniedApprovals float64
	// NewScope: the agent never asked for this scope before.
	NewScope bool
}

// Reason codes of a decision.
const (
	ReasonActionNotAllowed = "action_not_allowed"
	ReasonScopeNotAllowed  = "scope_not_allowed"
	ReasonRuleRequires     = "approval_rule"
	ReasonRiskRequires     = "risk_over_threshold"
	ReasonHighVelocity     = "high_velocity"
	ReasonFailedSignatures = "failed_signatures"
	ReasonDeniedApprovals  = "denied_approvals"
	ReasonNewScope         = "new_scope"
	ReasonWithinPolicy     = "within_policy"
)

// Decisions.
const (
	DecisionAllow    = "allow"
	DecisionDeny     = "deny"
	DecisionApproval = "approval_required"
)

// DefaultRiskThreshold requires a human when no rule sets one.
const DefaultRiskThreshold = 70

// Outcome is the policy's answer before any approval exists.
type Outcome struct {
	Recommended    string
	Decision       string
	RiskScore      int
	Classification string // low | medium | high
	ReasonCodes    []string
}

// Risk scores observed behaviour 0–100.
func Risk(b Behaviour) (int, []string) {
	score, reasons := 0, []string{}
	if b.Baseline > 0 && b.Rate > 3*b.Baseline || b.Rate > 120 {
		score += 35
		reasons = append(reasons, ReasonHighVelocity)
	}
	if b.FailedSignatures >= 3 {
		score += 30
		reasons = append(reasons, ReasonFailedSignatures)
	}
	if b.DeniedApprovals >= 1 {
		score += 25
		reasons = append(reasons, ReasonDeniedApprovals)
	}
	if b.NewScope {
		score += 15
		reasons = append(reasons, ReasonNewScope)
	}
	return min(score, 100), reasons
}

// Decide applies the agent's registry rules and the risk to in.
func Decide(a *catalog.Agent, in DecisionInput, b Behaviour) Outcome {
	risk, reasons := Risk(b)
	o := Outcome{RiskScore: risk, Classification: classify(risk)}
	if !anyMatch(a.AllowedActions, in.Action) {
		o.Recommended, o.Decision = DecisionDeny, DecisionDeny
		o.ReasonCodes = append(reasons, ReasonActionNotAllowed)
		return o
	}
	if !slices.Contains(a.AllowedScopes, in.Scope) {
		o.Recommended, o.Decision = DecisionDeny, DecisionDeny
		o.ReasonCodes = append(reasons, ReasonScopeNotAllowed)
		return o
	}
	threshold := DefaultRiskThreshold
	needs := false
	for _, r := range a.ApprovalRules {
		if r.RiskAtLeast > 0 {
			if (r.Action == "" || match(r.Action, in.Action)) && (r.Scope == "" || r.Scope == in.Scope) {
				threshold = min(threshold, r.RiskAtLeast)
			}
			continue
		}
		if (r.Action == "" || match(r.Action, in.Action)) && (r.Scope == "" || r.Scope == in.Scope) {
			needs = true
		}
	}
	switch {
	case needs:
		reasons = append(reasons, ReasonRuleRequires)
	case risk >= threshold:
		needs = true
		reasons = append(reasons, ReasonRiskRequires)
	}
	if needs {
		o.Recommended, o.Decision = DecisionApproval, DecisionApproval
	} else {
		o.Recommended, o.Decision = DecisionAllow, DecisionAllow
		if len(reasons) == 0 {
			reasons = append(reasons, ReasonWithinPolicy)
		}
	}
	o.ReasonCodes = reasons
	return o
}

func classify(risk int) string {
	switch {
	case risk >= 70:
		return "high"
	case risk >= 30:
		return "medium"
	}
	return "low"
}

func match(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

func anyMatch(patterns []string, s string) bool {
	for _, p := range patterns {
		if match(p, s) {
			return true
		}
	}
	return false
}

// ScopeAllowed reports whether a may ask for scope.
func ScopeAllowed(a *catalog.Agent, scope string) bool {
	return slices.Contains(a.AllowedScopes, scope)
}
