package trust

import (
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/trustd/trustd/platform/errcode"
)

// The environment a rule's condition is written in. Every variable is
// declared with its type, so a rule is type-checked when it is written
// and a typo or a comparison of a string with a number is refused then,
// never discovered per request. Three families:
//
//	request.*  what the caller sent about the operation (its own view)
//	hints.*    the caller's own risk figures: they can raise the decision
//	           (a rule may read them) but never lower what signals.* say
//	signals.*  what this service observed itself (authoritative)
//	risk.score the effective score: max(service score, hints.risk_score)
//
// Variables holds the declarations, for the contract and DESIGN.md.
var Variables = []Variable{
	{"request.action", "string", "the action the decision is for"},
	{"request.requested_assurance", "string", "none, document_only, standard or high"},
	{"request.requested_assurance_rank", "int", "0 none, 1 document_only, 2 standard, 3 high: compare ranks, not names"},
	{"request.transaction_amount", "int", "amount in minor units; 0 when absent"},
	{"request.country_code", "string", "ISO 3166-1 alpha-2 as sent, or empty"},
	{"request.network_type", "string", "as sent (for example mobile, wifi, vpn, tor), or empty"},
	{"request.channel", "string", "server or mobile: which operation was called"},
	{"hints.risk_score", "double", "the caller's own risk score, 0 to 1"},
	{"hints.request_velocity_5m", "int", "the caller's count of requests in 5 minutes"},
	{"hints.failed_attempts_5m", "int", "the caller's count of failed attempts in 5 minutes"},
	{"hints.new_device", "bool", "the caller says the device is new"},
	{"signals.decisions_5m", "int", "trust decisions this service made for the subject in the current 5-minute window"},
	{"signals.failed_attempts_5m", "int", "failed step-up proofs and fraudulent feedback for the subject in the current 5-minute window"},
	{"signals.label", "string", "latest feedback label on the subject across modules: abuse, legitimate or empty"},
	{"signals.trusted_device", "bool", "the device is trusted for the subject (Account Defence); false until it reports"},
	{"risk.score", "double", "effective score 0 to 1: the service's, raised to hints.risk_score when that is higher"},
}

// Variable is one declared name of the rule environment.
type Variable struct {
	Name, Type, Doc string
}

// Limits of a rule.
const (
	MaxExpressionLen = 2048
	// CostLimit bounds one evaluation (CEL cost units): rules have no
	// loops over unbounded data, so a sane rule costs well under 100.
	CostLimit = 10000
)

// ErrInvalidRule is a rule whose condition does not compile or type-check.
var ErrInvalidRule = errcode.New("invalid-trust-rule", errcode.Invalid, "the rule's CEL condition does not parse or type-check as a bool over the documented variables; the message holds the CEL error")

// Env is the compiled rule environment. It is safe for concurrent use.
type Env struct{ env *cel.Env }

// NewEnv declares the rule environment.
func NewEnv() (*Env, error) {
	var opts []cel.EnvOption
	for _, v := range Variables {
		var t *cel.Type
		switch v.Type {
		case "string":
			t = cel.StringType
		case "int":
			t = cel.IntType
		case "double":
			t = cel.DoubleType
		case "bool":
			t = cel.BoolType
		}
		opts = append(opts, cel.Variable(v.Name, t))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("trust: rule environment: %w", err)
	}
	return &Env{env: e}, nil
}

// Program is a compiled, type-checked condition.
type Program struct {
	prg cel.Program
}

// Compile parses and type-checks expr; the error is ErrInvalidRule with
// CEL's message.
func (e *Env) Compile(expr string) (*Program, error) {
	if strings.TrimSpace(expr) == "" || len(expr) > MaxExpressionLen {
		return nil, ErrInvalidRule.With("condition must be 1 to %d bytes", MaxExpressionLen)
	}
	ast, iss := e.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, ErrInvalidRule.With("%s", iss.Err().Error())
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, ErrInvalidRule.With("condition must be a bool, not %s", ast.OutputType())
	}
	prg, err := e.env.Program(ast, cel.CostLimit(CostLimit))
	if err != nil {
		return nil, ErrInvalidRule.With("%s", err.Error())
	}
	return &Program{prg: prg}, nil
}

// Eval runs p over in; an error (cost limit, a runtime error such as an
// overflow) means the rule was not evaluated.
func (p *Program) Eval(in Input) (bool, error) {
	out, _, err := p.prg.Eval(in.activation())
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("trust: rule result is %T", out.Value())
	}
	return b, nil
}

// Input is everything a rule can read.
type Input struct {
	Request DecisionRequest
	Channel string
	Signals Signals
	Score   float64
}

func (in Input) activation() map[string]any {
	r, h, s := in.Request, in.Request.Hints, in.Signals
	lvl, _ := ParseLevel(r.RequestedAssurance)
	return map[string]any{
		"request.action":                   r.Action,
		"request.requested_assurance":      lvl.String(),
		"request.requested_assurance_rank": int64(lvl),
		"request.transaction_amount":       r.TransactionAmount,
		"request.country_code":             r.CountryCode,
		"request.network_type":             r.NetworkType,
		"request.channel":                  in.Channel,
		"hints.risk_score":                 h.RiskScore,
		"hints.request_velocity_5m":        h.RequestVelocity5m,
		"hints.failed_attempts_5m":         h.FailedAttempts5m,
		"hints.new_device":                 h.NewDevice,
		"signals.decisions_5m":             s.Decisions5m,
		"signals.failed_attempts_5m":       s.FailedAttempts5m,
		"signals.label":                    s.Label,
		"signals.trusted_device":           s.TrustedDevice,
		"risk.score":                       in.Score,
	}
}

// Cache holds compiled programs by condition text, so a condition is
// compiled once per node when it is first needed after being written,
// never per request. Prune drops programs no rule of the current catalog
// version uses, so the cache is bounded by the catalog's caps.
type Cache struct {
	env *Env
	mu  sync.Mutex
	m   map[string]*Program
	ver uint64
}

// NewCache returns an empty cache over env.
func NewCache(env *Env) *Cache { return &Cache{env: env, m: map[string]*Program{}} }

// Program returns the compiled expr, compiling it on first use.
func (c *Cache) Program(expr string) (*Program, error) {
	c.mu.Lock()
	p := c.m[expr]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := c.env.Compile(expr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[expr] = p
	c.mu.Unlock()
	return p, nil
}

// Prune keeps only the programs of live, once per catalog version.
func (c *Cache) Prune(version uint64, live func(expr string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version == c.ver {
		return
	}
	c.ver = version
	for k := range c.m {
		if !live(k) {
			delete(c.m, k)
		}
	}
}

// Len is the number of cached programs.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
