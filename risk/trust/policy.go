package trust

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
)

// ErrInvalidPolicy is a trust policy field out of its documented range.
var ErrInvalidPolicy = errcode.New("invalid-trust-policy", errcode.Invalid, "a trust policy field is out of range: name 1 to 64 of a-z 0-9 _ - ., reason_code 1 to 64 of a-z 0-9 _, outcome allow|verify|review|block, mode enforce|observe")

// ErrPolicyMissing is a trust policy id the workspace does not have.
var ErrPolicyMissing = errcode.New("trust-policy-not-found", errcode.NotFound, "the workspace has no trust policy with this id")

// PolicySpec is what an admin writes.
type PolicySpec struct {
	Name       string
	Condition  string
	ReasonCode string
	Outcome    string
	Mode       string
}

func (sp PolicySpec) validate(env *Env) error {
	if len(sp.Name) == 0 || len(sp.Name) > 64 || !nameChars(sp.Name) {
		return ErrInvalidPolicy.With("name must be 1 to 64 of a-z 0-9 _ - .")
	}
	if len(sp.ReasonCode) == 0 || len(sp.ReasonCode) > 64 || !token64(sp.ReasonCode, false) {
		return ErrInvalidPolicy.With("reason_code must be 1 to 64 of a-z 0-9 _ -")
	}
	if severity(sp.Outcome) < 0 {
		return ErrInvalidPolicy.With("outcome must be allow, verify, review or block")
	}
	if sp.Mode != ModeEnforce && sp.Mode != ModeObserve {
		return ErrInvalidPolicy.With("mode must be enforce or observe")
	}
	_, err := env.Compile(sp.Condition)
	return err
}

func nameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// NewPolicy validates sp (compiling its condition) and builds the record.
// Mode defaults to observe: a new rule is watched before it bites.
func NewPolicy(env *Env, workspace string, sp PolicySpec, now time.Time) (catalog.TrustPolicy, error) {
	if sp.Mode == "" {
		sp.Mode = ModeObserve
	}
	if err := sp.validate(env); err != nil {
		return catalog.TrustPolicy{}, err
	}
	return catalog.TrustPolicy{ID: uuid.NewString(), WorkspaceID: workspace, Name: sp.Name, Condition: sp.Condition,
		ReasonCode: sp.ReasonCode, Outcome: sp.Outcome, Mode: sp.Mode, CreatedAt: now, UpdatedAt: now}, nil
}

// UpdatePolicy lays sp over a copy of p.
func UpdatePolicy(env *Env, p catalog.TrustPolicy, sp PolicySpec, now time.Time) (catalog.TrustPolicy, error) {
	if sp.Mode == "" {
		sp.Mode = p.Mode
	}
	if err := sp.validate(env); err != nil {
		return p, err
	}
	p.Name, p.Condition, p.ReasonCode, p.Outcome, p.Mode, p.UpdatedAt = sp.Name, sp.Condition, sp.ReasonCode, sp.Outcome, sp.Mode, now
	return p, nil
}

// Builtins are the rules of a workspace that enforces none of its own, so
// a new workspace gets sensible decisions. They read the service's
// signals first; where they read a hint, it can only add friction.
var Builtins = []PolicySpec{
	{Name: "builtin/prior_abuse", Condition: `signals.label == "abuse"`, ReasonCode: "prior_abuse_feedback", Outcome: Review, Mode: ModeEnforce},
	{Name: "builtin/failed_attempts_burst", Condition: `signals.failed_attempts_5m >= 10`, ReasonCode: "failed_attempts_burst", Outcome: Block, Mode: ModeEnforce},
	{Name: "builtin/failed_attempts", Condition: `signals.failed_attempts_5m >= 3 || hints.failed_attempts_5m >= 3`, ReasonCode: "failed_attempts", Outcome: Verify, Mode: ModeEnforce},
	{Name: "builtin/new_device", Condition: `hints.new_device && !signals.trusted_device`, ReasonCode: "new_device", Outcome: Verify, Mode: ModeEnforce},
	{Name: "builtin/high_velocity", Condition: `signals.decisions_5m > 30 || hints.request_velocity_5m > 30`, ReasonCode: "high_velocity", Outcome: Verify, Mode: ModeEnforce},
	{Name: "builtin/high_value", Condition: `request.transaction_amount >= 100000`, ReasonCode: "high_value_transaction", Outcome: Verify, Mode: ModeEnforce},
	{Name: "builtin/anonymous_network", Condition: `request.network_type in ["tor", "vpn", "proxy"]`, ReasonCode: "anonymous_network", Outcome: Verify, Mode: ModeEnforce},
}

// RuleSet is the rules that apply to a workspace in one catalog version.
type RuleSet struct {
	Rules []Rule
	// BuiltinsActive: the workspace enforces no rule of its own, so the
	// built-ins apply (its observe rules run beside them).
	BuiltinsActive bool
	// Broken names stored policies whose condition no longer compiles
	// (an environment change between versions); they are skipped and the
	// decision says degraded.
	Broken []string
}

// Rules returns the rules of workspace in cat, compiling through cache.
func Rules(cache *Cache, cat *catalog.Catalog, workspace string) RuleSet {
	cache.Prune(cat.ConfigIndex, func(expr string) bool {
		for _, b := range Builtins {
			if b.Condition == expr {
				return true
			}
		}
		for _, p := range cat.TrustPolicies {
			if p.Condition == expr {
				return true
			}
		}
		return false
	})
	pols := cat.TrustPoliciesOf(workspace)
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	var rs RuleSet
	enforcing := false
	for _, p := range pols {
		prg, err := cache.Program(p.Condition)
		if err != nil {
			rs.Broken = append(rs.Broken, p.Name)
			continue
		}
		enforcing = enforcing || p.Mode == ModeEnforce
		rs.Rules = append(rs.Rules, Rule{Name: p.Name, ReasonCode: p.ReasonCode, Outcome: p.Outcome, Mode: p.Mode, Program: prg})
	}
	if !enforcing {
		rs.BuiltinsActive = true
		for _, b := range Builtins {
			prg, err := cache.Program(b.Condition)
			if err != nil {
				rs.Broken = append(rs.Broken, b.Name)
				continue
			}
			rs.Rules = append(rs.Rules, Rule{Name: b.Name, ReasonCode: b.ReasonCode, Outcome: b.Outcome, Mode: b.Mode, Program: prg})
		}
	}
	return rs
}
