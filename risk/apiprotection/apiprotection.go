// Package apiprotection scores API requests (spec 2.4, 2.5, 4.5): an
// assessment scores one request's shape against the workspace's API
// Protection policy for its route, adds velocity per subject, device and
// route, idempotency-key reuse with another payload and earlier feedback
// on the subject, and is kept for a day so the rate-limit check can use it
// for adaptive cost and feedback can label it. Identifiers reach actors
// only as keyed hashes. It never sees HTTP.
package apiprotection

import (
	"crypto/sha256"
	"encoding/base64"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// How long assessments, idempotency keys and subject labels are kept.
const (
	assessmentTTL     = 24 * time.Hour
	idempotencyTTL    = 24 * time.Hour
	subjectLabelTTL   = 7 * 24 * time.Hour
	feedbackDedupTime = 5 * time.Minute
)

// Risk bands: the classification and recommended decision follow from the
// score (and ratecheck.RiskMultiplier uses the same bands for adaptive cost).
const (
	riskMedium = 0.3
	riskHigh   = 0.7
)

// ErrUnknownAssessment is feedback on an assessment this workspace does
// not have (never made, another workspace's, or expired).
var ErrUnknownAssessment = errcode.ErrNotFound.Detail("no such assessment in this workspace")

// Classify returns the classification and recommended decision of a risk.
func Classify(risk float64) (classification string, recommended ratelimit.Decision) {
	switch {
	case risk >= riskHigh:
		return "high", ratelimit.Reject
	case risk >= riskMedium:
		return "medium", ratelimit.Throttle
	}
	return "low", ratelimit.Allow
}

// Caller is the workspace (and site, "" for a workspace credential) that
// authenticated.
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string
}

// Module assesses API requests. It is safe for concurrent use.
type Module struct {
	ask actors.Asker
	now func() time.Time
}

// New returns a module.
func New(ask actors.Asker, now func() time.Time) *Module { return &Module{ask: ask, now: now} }

// AssessRequest is the assessed request (spec 4.5).
type AssessRequest struct {
	Method                string  `json:"method" required:"true" doc:"HTTP method of the assessed request."`
	Path                  string  `json:"path" required:"true" doc:"URL path of the assessed request, no query string."`
	Action                string  `json:"action,omitempty"`
	AuthenticationPresent bool    `json:"authentication_present"`
	ContentType           string  `json:"content_type,omitempty"`
	SubjectID             string  `json:"subject_id,omitempty" doc:"Kept only as a keyed hash."`
	DeviceID              string  `json:"device_id,omitempty" doc:"Kept only as a keyed hash."`
	RequestID             string  `json:"request_id,omitempty"`
	IdempotencyKey        string  `json:"idempotency_key,omitempty"`
	PayloadFingerprint    string  `json:"payload_fingerprint,omitempty" doc:"The caller's digest of the payload; reuse of an idempotency key with another fingerprint raises risk."`
	BodyBytes             int64   `json:"body_bytes"`
	PageSize              int64   `json:"page_size"`
	QueryDepth            int64   `json:"query_depth"`
	ResourceCost          float64 `json:"resource_cost"`
}

// APIAssessment is the answer (spec 2.4).
type APIAssessment struct {
	Success             bool     `json:"success" required:"true"`
	AssessmentID        string   `json:"assessment_id" required:"true" format:"uuid" doc:"Usable for adaptive cost in the rate-limit check, and for feedback, for 24 hours."`
	PolicyName          string   `json:"policy_name" required:"true" doc:"The matching policy, or empty when none matched."`
	RiskScore           float64  `json:"risk_score" required:"true" doc:"0 to 1; higher is riskier."`
	Classification      string   `json:"classification" required:"true" enum:"low|medium|high"`
	RecommendedDecision string   `json:"recommended_decision" required:"true" enum:"allow|throttle|reject"`
	Decision            string   `json:"decision" required:"true" enum:"allow|throttle|reject" doc:"recommended_decision under enforce, allow under observe."`
	RetryAfterSeconds   int64    `json:"retry_after_seconds" required:"true" doc:"Until the exceeded velocity window ends; 0 when no wait helps."`
	ReasonCodes         []string `json:"reason_codes" required:"true"`
	EnforcementMode     string   `json:"enforcement_mode" required:"true" enum:"observe|enforce"`
}

// FeedbackRequest labels an assessment (spec 2.5; fields designed here).
type FeedbackRequest struct {
	AssessmentID string `json:"assessment_id" required:"true" format:"uuid"`
	Label        string `json:"label" required:"true" enum:"legitimate|abuse|false_positive|false_negative|approved_automation"`
	ReasonCode   string `json:"reason_code" required:"true" enum:"confirmed-fraud|credential-stuffing|scraping|api-abuse|customer-verified|expected-automation|other"`
}

// FeedbackRecord is the answer of feedback (spec 2.5).
type FeedbackRecord struct {
	Success    bool   `json:"success" required:"true"`
	FeedbackID string `json:"feedback_id" required:"true" format:"uuid" doc:"An exact retry within 5 minutes answers with the first id."`
	Accepted   bool   `json:"accepted" required:"true"`
}

var (
	feedbackLabels  = []string{"legitimate", "abuse", "false_positive", "false_negative", "approved_automation"}
	feedbackReasons = []string{"confirmed-fraud", "credential-stuffing", "scraping", "api-abuse", "customer-verified", "expected-automation", "other"}
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func (in *AssessRequest) validate() error {
	if !ratelimit.ValidMethod(in.Method) {
		return errcode.Field("method", "required: an HTTP method")
	}
	if !ident.Route(in.Path) {
		return errcode.Field("path", "required: a URL path starting with /, no query string")
	}
	if in.Action != "" && !ratelimit.ValidAction(in.Action) {
		return errcode.Field("action", "malformed action name")
	}
	for _, f := range []struct{ name, v string }{{"subject_id", in.SubjectID}, {"device_id", in.DeviceID},
		{"request_id", in.RequestID}, {"idempotency_key", in.IdempotencyKey}, {"payload_fingerprint", in.PayloadFingerprint},
		{"content_type", in.ContentType}} {
		if f.v != "" && !ident.Valid(f.v) {
			return errcode.Field(f.name, "at most 256 characters, no control characters")
		}
	}
	if in.BodyBytes < 0 || in.PageSize < 0 || in.QueryDepth < 0 || in.ResourceCost < 0 || math.IsNaN(in.ResourceCost) || math.IsInf(in.ResourceCost, 0) {
		return errcode.Field("body_bytes", "body_bytes, page_size, query_depth and resource_cost must be non-negative")
	}
	return nil
}

// MatchPath reports whether pattern covers path: "*" covers all, a
// pattern ending in "/*" covers everything below that prefix, anything
// else must be equal.
func MatchPath(pattern, path string) bool {
	if pattern == "*" {
		return true
	}
	if strings.HasSuffix(pattern, "/*") {
		return strings.HasPrefix(path, pattern[:len(pattern)-1])
	}
	return pattern == path
}

// selectPolicy returns the most specific matching policy: site-targeted
// before workspace-wide, then the longest path pattern, then the id.
func selectPolicy(cat *catalog.Catalog, wsID, appID, method, path string) *catalog.APIProtectionPolicy {
	var best *catalog.APIProtectionPolicy
	rank := func(p *catalog.APIProtectionPolicy) int {
		r := len(p.PathPattern)
		if p.Target.Type != catalog.TargetWorkspace {
			r += 1 << 20
		}
		return r
	}
	for _, p := range cat.APIProtectionPoliciesOf(wsID) {
		if p.Target.Type != catalog.TargetWorkspace && p.Target.ID != appID {
			continue
		}
		if !ratelimit.MatchMethod(p.Method, method) || !MatchPath(p.PathPattern, path) {
			continue
		}
		if best == nil || rank(p) > rank(best) || rank(p) == rank(best) && p.ID < best.ID {
			best = p
		}
	}
	return best
}

// assessment accumulates a score and its reasons.
type assessment struct {
	risk    float64
	reasons []string
	retry   int64
}

func (a *assessment) add(risk float64, reason string) {
	a.risk += risk
	a.reasons = append(a.reasons, reason)
}

// Assess scores one API request for caller and keeps the assessment for
// adaptive cost and feedback.
func (m *Module) Assess(cat *catalog.Catalog, caller Caller, in *AssessRequest) (*APIAssessment, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	ws, appID := caller.Workspace, caller.AppID
	now := m.now()
	p := selectPolicy(cat, ws.ID, appID, in.Method, in.Path)
	a := &assessment{reasons: []string{}}
	mode := "observe"
	policyID, policyName := "", ""
	if p == nil {
		a.reasons = append(a.reasons, "no-matching-policy")
	} else {
		mode, policyID, policyName = p.EnforcementMode, p.ID, p.Name
		scoreShape(a, p, in)
		if err := m.velocity(a, ws, p, in, now); err != nil {
			return nil, err
		}
	}
	hash := func(kind, v string) string {
		h := ratelimit.HashScope(ws.ScopeKey, kind+"\x00"+v)
		return base64.RawURLEncoding.EncodeToString(h[:])
	}
	if in.IdempotencyKey != "" && in.PayloadFingerprint != "" {
		op := &actors.ClaimIdempotency{Key: actors.SpaceIdempotency + ws.ID + "/" + hash("idempotency", in.IdempotencyKey),
			Fingerprint: sha256.Sum256([]byte(in.PayloadFingerprint)), Expires: now.Add(idempotencyTTL).UnixNano()}
		if err := m.ask.Ask(op.Key, op); err != nil {
			return nil, err
		}
		switch op.Outcome {
		case actors.IdempotencyMismatch:
			a.add(0.6, "idempotency-key-reused-with-different-payload")
		case actors.IdempotencyReplay:
			a.reasons = append(a.reasons, "idempotent-retry")
		}
	}
	subjectKey := ""
	if in.SubjectID != "" {
		subjectKey = actors.SpaceReputation + ws.ID + "/" + hash("subject", in.SubjectID)
		op := &actors.SubjectLabel{Key: subjectKey}
		if err := m.ask.Ask(op.Key, op); err != nil {
			return nil, err
		}
		switch op.Label {
		case "abuse":
			a.add(0.3, "prior-abuse-feedback")
		case "legitimate":
			a.add(-0.2, "prior-legitimate-feedback")
		}
	}
	risk := math.Round(min(max(a.risk, 0), 1)*1000) / 1000
	class, recommended := Classify(risk)
	applied := ratelimit.Allow
	if mode == "enforce" {
		applied = recommended
	}
	if recommended == ratelimit.Allow {
		a.retry = 0
	}
	id := uuid.NewString()
	rec := actors.Assessment{ID: id, WorkspaceID: ws.ID, AppID: appID, PolicyID: policyID, Risk: risk,
		CreatedNs: now.UnixNano(), ExpiresNs: now.Add(assessmentTTL).UnixNano(), SubjectKey: subjectKey}
	if err := m.ask.Ask(actors.AssessmentKey(id), &actors.PutAssessment{Assessment: rec}); err != nil {
		return nil, err
	}
	return &APIAssessment{Success: true, AssessmentID: id, PolicyName: policyName, RiskScore: risk,
		Classification: class, RecommendedDecision: recommended.String(), Decision: applied.String(),
		RetryAfterSeconds: a.retry, ReasonCodes: a.reasons, EnforcementMode: mode}, nil
}

// scoreShape scores the request's shape against the policy's limits.
func scoreShape(a *assessment, p *catalog.APIProtectionPolicy, in *AssessRequest) {
	l := p.Limits
	if p.RequireAuthentication && !in.AuthenticationPresent {
		a.add(0.4, "authentication-missing")
	}
	if l.BodyBytes > 0 && in.BodyBytes > l.BodyBytes {
		a.add(0.35, "body-too-large")
	}
	if l.PageSize > 0 && in.PageSize > l.PageSize {
		a.add(0.25, "page-size-exceeded")
	}
	if l.QueryDepth > 0 && in.QueryDepth > l.QueryDepth {
		a.add(0.3, "query-depth-exceeded")
	}
	if l.ResourceCost > 0 && in.ResourceCost > l.ResourceCost {
		a.add(0.3, "resource-cost-exceeded")
	}
	if in.BodyBytes > 0 && in.ContentType != "" && !expectedContentType(in.ContentType) {
		a.add(0.15, "unexpected-content-type")
	}
}

func expectedContentType(ct string) bool {
	ct, _, _ = strings.Cut(strings.ToLower(ct), ";")
	ct = strings.TrimSpace(ct)
	return ct == "application/json" || ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data" ||
		strings.HasSuffix(ct, "+json")
}

// velocity counts the request against each tracked key of the policy, in
// parallel, and scores any count over its threshold.
func (m *Module) velocity(a *assessment, ws *catalog.Workspace, p *catalog.APIProtectionPolicy, in *AssessRequest, now time.Time) error {
	v := p.Velocity
	if v.WindowSeconds <= 0 {
		return nil
	}
	type track struct {
		kind, value string
		limit       int64
		reason      string
		op          actors.CountHit
		err         error
	}
	tracks := []*track{
		{kind: "subject", value: in.SubjectID, limit: v.PerSubject, reason: "velocity-subject-exceeded"},
		{kind: "device", value: in.DeviceID, limit: v.PerDevice, reason: "velocity-device-exceeded"},
		{kind: "route", value: in.Method + " " + in.Path, limit: v.PerRoute, reason: "velocity-route-exceeded"},
	}
	done := make(chan struct{}, len(tracks))
	n := 0
	for _, t := range tracks {
		if t.limit <= 0 || t.value == "" {
			continue
		}
		h := ratelimit.HashScope(ws.ScopeKey, t.kind+"\x00"+t.value)
		t.op = actors.CountHit{Key: actors.SpaceAPIVelocity + ws.ID + "/" + p.ID + "/" + t.kind + "/" + base64.RawURLEncoding.EncodeToString(h[:]),
			WindowNs: v.WindowSeconds * int64(time.Second)}
		n++
		go func(t *track) {
			t.err = m.ask.Ask(t.op.Key, &t.op)
			done <- struct{}{}
		}(t)
	}
	for ; n > 0; n-- {
		<-done
	}
	for _, t := range tracks {
		if t.err != nil {
			return t.err
		}
		if t.limit > 0 && t.op.Count > t.limit {
			a.add(0.4, t.reason)
			a.retry = max(a.retry, (t.op.EndNs-now.UnixNano()+int64(time.Second)-1)/int64(time.Second))
		}
	}
	return nil
}

// Feedback labels an assessment of caller's workspace; an exact retry
// within five minutes answers the first feedback id. A label on an
// assessment with a subject marks the subject for a week.
func (m *Module) Feedback(caller Caller, in *FeedbackRequest) (*FeedbackRecord, error) {
	switch {
	case !ident.UUID(in.AssessmentID):
		return nil, errcode.Field("assessment_id", "required: the UUID of an assessment")
	case !slices.Contains(feedbackLabels, in.Label):
		return nil, errcode.Field("label", "must be one of "+strings.Join(feedbackLabels, ", "))
	case !slices.Contains(feedbackReasons, in.ReasonCode):
		return nil, errcode.Field("reason_code", "must be one of "+strings.Join(feedbackReasons, ", "))
	}
	op := &actors.AnnotateAssessment{ID: in.AssessmentID, WorkspaceID: caller.Workspace.ID, FeedbackID: uuid.NewString(),
		Label: in.Label, Reason: in.ReasonCode, DedupNs: int64(feedbackDedupTime)}
	if err := m.ask.Ask(actors.AssessmentKey(in.AssessmentID), op); err != nil {
		return nil, err
	}
	if !op.Found {
		return nil, ErrUnknownAssessment.With("no assessment %s in this workspace (assessments are kept 24 hours)", in.AssessmentID)
	}
	if !op.Duplicate && op.SubjectKey != "" {
		label := "legitimate"
		if in.Label == "abuse" || in.Label == "false_negative" {
			label = "abuse"
		}
		lop := &actors.LabelSubject{Key: op.SubjectKey, Label: label, Expires: m.now().Add(subjectLabelTTL).UnixNano()}
		if err := m.ask.Ask(lop.Key, lop); err != nil {
			return nil, err
		}
	}
	return &FeedbackRecord{Success: true, FeedbackID: op.FeedbackID, Accepted: true}, nil
}
