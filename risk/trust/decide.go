package trust

import (
	"math"

	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Decisions and rule outcomes, in increasing friction. A decision is the
// most severe of its inputs, so nothing can lower another input's result.
const (
	Allow  = "allow"
	Verify = "verify"
	Review = "review"
	Block  = "block"
)

// Outcomes lists the outcomes in increasing friction.
var Outcomes = []string{Allow, Verify, Review, Block}

func severity(o string) int {
	for i, x := range Outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

func worse(a, b string) string {
	if severity(b) > severity(a) {
		return b
	}
	return a
}

// Rule modes.
const (
	ModeEnforce = "enforce"
	ModeObserve = "observe"
)

// Engine status of a decision (research §1.4): ok, every rule evaluated;
// degraded, a rule failed at run time (cost limit, overflow) and was
// skipped; failed, the service's own signals could not be read, so the
// decision failed closed to review.
const (
	EngineOK       = "ok"
	EngineDegraded = "degraded"
	EngineFailed   = "failed"
)

// Step-up methods a decision recommends.
const (
	MethodHuman    = "human_verification"
	MethodDocument = "document_verification"
	MethodFacial   = "facial_authorization"
)

// Hints are the caller's own risk figures: attacker-controllable when the
// caller is careless or compromised, so they only ever raise friction.
type Hints struct {
	RiskScore         float64
	RequestVelocity5m int64
	FailedAttempts5m  int64
	NewDevice         bool
}

// DecisionRequest is POST /trust/decision (spec 4.9) after decoding.
type DecisionRequest struct {
	Action    string
	SubjectID string
	// DeviceID is optional (an addition to spec 4.9): with it, a signal
	// source that knows devices (Account Defence) reports trusted ones.
	DeviceID           string
	RequestedAssurance string
	TransactionAmount  int64
	CountryCode        string
	NetworkType        string
	Hints              Hints
}

// ErrInvalidRequest is a Trust API request with a field out of range.
var ErrInvalidRequest = errcode.New("invalid-trust-request", errcode.Invalid, "a field of the trust request is missing or out of its documented range; the message names it")

// Validate checks every field.
func (r DecisionRequest) Validate() error {
	switch {
	case !ident.Action(r.Action):
		return ErrInvalidRequest.With("action: required, 1 to 64 of A-Z a-z 0-9 _ - . /")
	case !ident.Valid(r.SubjectID):
		return ErrInvalidRequest.With("subject_id: required, 1 to %d bytes of UTF-8 without control characters", ident.MaxLen)
	case r.DeviceID != "" && !ident.Valid(r.DeviceID):
		return ErrInvalidRequest.With("device_id: 1 to %d bytes of UTF-8 without control characters", ident.MaxLen)
	case r.Hints.RiskScore < 0 || r.Hints.RiskScore > 1 || math.IsNaN(r.Hints.RiskScore):
		return ErrInvalidRequest.With("risk_score: 0 to 1")
	case r.Hints.RequestVelocity5m < 0 || r.Hints.RequestVelocity5m > 1e9:
		return ErrInvalidRequest.With("request_velocity_5m: 0 to 1000000000")
	case r.Hints.FailedAttempts5m < 0 || r.Hints.FailedAttempts5m > 1e9:
		return ErrInvalidRequest.With("failed_attempts_5m: 0 to 1000000000")
	case r.TransactionAmount < 0 || r.TransactionAmount > 1e15:
		return ErrInvalidRequest.With("transaction_amount: 0 to 10^15 (minor units)")
	case r.CountryCode != "" && !upper2(r.CountryCode):
		return ErrInvalidRequest.With("country_code: two upper-case letters (ISO 3166-1 alpha-2)")
	case len(r.NetworkType) > 32 || !token64(r.NetworkType, true):
		return ErrInvalidRequest.With("network_type: at most 32 of a-z 0-9 _ -")
	}
	if _, ok := ParseLevel(r.RequestedAssurance); !ok || r.RequestedAssurance == "none" {
		return ErrInvalidRequest.With("requested_assurance: document_only, standard or high (empty: none)")
	}
	return nil
}

func upper2(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}

// token64 accepts a-z 0-9 _ - (and the empty string when empty is true).
func token64(s string, empty bool) bool {
	if s == "" {
		return empty
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Signals is what this service observed of a subject: the authority a
// decision rests on.
type Signals struct {
	Decisions5m      int64
	FailedAttempts5m int64
	// Label is the latest feedback label on the subject across modules
	// (API Protection and trust feedback): "abuse", "legitimate" or "".
	Label         string
	TrustedDevice bool
}

// ServiceScore is the service's own risk score of s, 0 to 1.
func ServiceScore(s Signals) float64 {
	score := 0.05
	if s.Label == "abuse" {
		score += 0.5
	}
	score += 0.15 * float64(min(s.FailedAttempts5m, 3))
	if s.Decisions5m > 30 {
		score += 0.2
	}
	if s.TrustedDevice {
		score -= 0.05
	}
	return round3(min(max(score, 0), 1))
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// EffectiveScore raises the service's score to the caller's hint when the
// hint is higher; a lower hint changes nothing.
func EffectiveScore(service float64, h Hints) float64 {
	return round3(max(service, h.RiskScore))
}

// Score thresholds: a score alone raises the decision at least this far,
// whatever the rules say.
const (
	ScoreVerify = 0.6
	ScoreReview = 0.85
)

// LevelOf names a score's band.
func LevelOf(score float64) string {
	switch {
	case score >= ScoreReview:
		return "critical"
	case score >= ScoreVerify:
		return "high"
	case score >= 0.3:
		return "medium"
	}
	return "low"
}

// Rule is one evaluable rule: a workspace's trust policy or a built-in.
type Rule struct {
	Name       string
	ReasonCode string
	Outcome    string
	Mode       string
	Program    *Program
}

// Match names a rule that fired.
type Match struct {
	PolicyName string `json:"policy_name"`
	ReasonCode string `json:"reason_code"`
}

// Requirements of the recommended step-up.
type Requirements struct {
	Identity      bool `json:"identity"`
	Liveness      bool `json:"liveness"`
	DeviceBinding bool `json:"device_binding"`
}

// Risk is the risk part of a decision (spec 2.8).
type Risk struct {
	Outcome      string  `json:"outcome"`
	Score        float64 `json:"score"`
	Level        string  `json:"level"`
	EngineStatus string  `json:"engine_status"`
	MatchedRules []Match `json:"matched_rules"`
}

// Decision is the module's answer (spec 2.8 decision response).
type Decision struct {
	Decision            string
	Method              string
	RequestedAssurance  Level
	EnrollmentAvailable bool
	Requirements        Requirements
	Risk                Risk
	// Observed lists the observe-mode rules that would have matched:
	// counted, never applied.
	Observed []Match
}

// Evaluate decides in against rules. signalsOK false means the service's
// own signals could not be read: the decision fails closed to review.
func Evaluate(rules []Rule, in Input, signalsOK bool) Decision {
	service := ServiceScore(in.Signals)
	score := EffectiveScore(service, in.Request.Hints)
	in.Score = score
	d := Decision{Risk: Risk{Score: score, Level: LevelOf(score), EngineStatus: EngineOK, MatchedRules: []Match{}}}
	outcome := Allow
	switch {
	case score >= ScoreReview:
		outcome = Review
		d.Risk.MatchedRules = append(d.Risk.MatchedRules, Match{"builtin/risk_score", "risk_score_critical"})
	case score >= ScoreVerify:
		outcome = Verify
		d.Risk.MatchedRules = append(d.Risk.MatchedRules, Match{"builtin/risk_score", "risk_score_high"})
	}
	for _, r := range rules {
		hit, err := r.Program.Eval(in)
		if err != nil {
			d.Risk.EngineStatus = EngineDegraded
			continue
		}
		if !hit {
			continue
		}
		m := Match{PolicyName: r.Name, ReasonCode: r.ReasonCode}
		if r.Mode == ModeObserve {
			d.Observed = append(d.Observed, m)
			continue
		}
		d.Risk.MatchedRules = append(d.Risk.MatchedRules, m)
		outcome = worse(outcome, r.Outcome)
	}
	if !signalsOK {
		d.Risk.EngineStatus = EngineFailed
		outcome = worse(outcome, Review)
		d.Risk.MatchedRules = append(d.Risk.MatchedRules, Match{"builtin/engine", "signals_unavailable"})
	}
	d.Decision, d.Risk.Outcome = outcome, outcome
	want, _ := ParseLevel(in.Request.RequestedAssurance)
	if score >= ScoreVerify && want < LevelStandard {
		// A high score asks for a proof of who, not only of presence.
		want = LevelStandard
	}
	d.RequestedAssurance = want
	d.Requirements = Requirements{Identity: want >= LevelDocumentOnly, Liveness: want >= LevelStandard, DeviceBinding: want >= LevelHigh}
	switch want {
	case LevelNone:
		d.Method = MethodHuman
	case LevelDocumentOnly:
		d.Method = MethodDocument
	default:
		d.Method = MethodFacial
	}
	// Only human verification needs no enrolment; this service holds no
	// face or document enrolments yet (identity/ will report them).
	d.EnrollmentAvailable = d.Method == MethodHuman
	return d
}
