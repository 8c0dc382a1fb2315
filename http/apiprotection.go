package http

import (
	"crypto/sha256"
	"encoding/base64"
	"github.com/trustd/trustd/traffic/ratecheck"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/ratelimit"
)

// API Protection (spec 2.4, 2.5, 4.5): an assessment scores one API
// request's shape against the workspace's API Protection policy for that
// route, adds velocity per subject, device and route, idempotency-key
// reuse with another payload, and earlier feedback on the subject, and is
// kept for a day so the rate-limit check can use it for adaptive cost and
// feedback can label it. Identifiers reach actors only as keyed hashes.

// How long assessments, idempotency keys and subject labels are kept.
const (
	assessmentTTL     = 24 * time.Hour
	idempotencyTTL    = 24 * time.Hour
	subjectLabelTTL   = 7 * 24 * time.Hour
	feedbackDedupTime = 5 * time.Minute
)

// Risk bands: the classification, recommended decision and adaptive-cost
// multiplier all follow from the score.
const (
	riskMedium = 0.3
	riskHigh   = 0.7
)

func classify(risk float64) (classification string, recommended ratelimit.Decision) {
	switch {
	case risk >= riskHigh:
		return "high", ratelimit.Reject
	case risk >= riskMedium:
		return "medium", ratelimit.Throttle
	}
	return "low", ratelimit.Allow
}

// riskMultiplier is the adaptive-cost multiplier an assessment's risk
// earns: medium risk costs double, high risk four times.
func riskMultiplier(risk float64) int64 {
	switch {
	case risk >= riskHigh:
		return 4
	case risk >= riskMedium:
		return 2
	}
	return 1
}

func assessmentKey(id string) string { return "apa/" + strings.ToLower(id) }

type apiProtectionModule struct {
	s   *Server
	ask ratecheck.Asker
}

func newAPIProtectionModule(s *Server) *apiProtectionModule {
	m := &apiProtectionModule{s: s}
	if s.router != nil {
		m.ask = s.router
	}
	return m
}

// APIAssessInput is the body of POST /api-protection/assess (spec 4.5).
type APIAssessInput struct {
	Secret                string  `json:"secret,omitempty" doc:"Site secret, when no scoped credential is sent as Authorization: Bearer."`
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

// APIFeedbackInput labels an assessment (spec 2.5; fields designed here).
type APIFeedbackInput struct {
	Secret       string `json:"secret,omitempty"`
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

// authSiteVerify authenticates scope site.verify: a scoped credential as
// bearer, or a site secret in the body. appID is the site's id, or "" for
// a workspace credential.
func (c *Call) authSiteVerify(bodySecret string) (ws *catalog.Workspace, appID string, ok bool) {
	ws, appID, _, ok = c.authServer(bodySecret, "site.verify", false)
	return ws, appID, ok
}

// authServer authenticates a server operation: a scoped credential with
// scope as bearer, or a site's private secret in the body. A sandbox site
// secret passes only when allowSandbox (the operation then simulates);
// sandbox reports that it did.
func (c *Call) authServer(bodySecret, scope string, allowSandbox bool) (ws *catalog.Workspace, appID string, sandbox, ok bool) {
	if tok := c.bearer(); tok != "" {
		cr := c.cat.CredentialByToken(tok)
		if cr == nil {
			c.fail(ErrUnauthorized, "the bearer credential is not valid")
			return nil, "", false, false
		}
		if !cr.HasScope(scope) {
			c.fail(ErrForbidden, "the credential lacks scope "+scope)
			return nil, "", false, false
		}
		ws = c.cat.Workspaces[cr.WorkspaceID]
		if ws == nil || !c.admitCredential(cr.ID, cr.WorkspaceID) {
			if ws == nil {
				c.fail(ErrUnauthorized, "the bearer credential is not valid")
			}
			return nil, "", false, false
		}
		return ws, "", false, true
	}
	if bodySecret == "" {
		c.fail(ErrUnauthorized, "a scoped credential (Authorization: Bearer) or the site secret (body field secret) is required")
		return nil, "", false, false
	}
	site := c.cat.SiteBySecret(bodySecret, c.Now())
	if site == nil || (site.Sandbox() && !allowSandbox) {
		c.fail(ErrUnauthorized, "the secret is not valid")
		return nil, "", false, false
	}
	ws = c.cat.Workspaces[site.WorkspaceID]
	if ws == nil {
		c.fail(ErrUnauthorized, "the secret is not valid")
		return nil, "", false, false
	}
	if !c.admitCredential(site.ID, ws.ID) {
		return nil, "", false, false
	}
	return ws, site.ID, site.Sandbox(), true
}

func (in *APIAssessInput) validate() error {
	if !ratelimit.ValidMethod(in.Method) {
		return invalid("method", "required: an HTTP method")
	}
	if !ratecheck.ValidRoute([]byte(in.Path)) {
		return invalid("path", "required: a URL path starting with /, no query string")
	}
	if in.Action != "" && !ratelimit.ValidAction(in.Action) {
		return invalid("action", "malformed action name")
	}
	for _, f := range []struct{ name, v string }{{"subject_id", in.SubjectID}, {"device_id", in.DeviceID},
		{"request_id", in.RequestID}, {"idempotency_key", in.IdempotencyKey}, {"payload_fingerprint", in.PayloadFingerprint},
		{"content_type", in.ContentType}} {
		if f.v != "" && !ident.Valid(f.v) {
			return invalid(f.name, "at most 256 characters, no control characters")
		}
	}
	if in.BodyBytes < 0 || in.PageSize < 0 || in.QueryDepth < 0 || in.ResourceCost < 0 || math.IsNaN(in.ResourceCost) || math.IsInf(in.ResourceCost, 0) {
		return invalid("body_bytes", "body_bytes, page_size, query_depth and resource_cost must be non-negative")
	}
	return nil
}

// matchPath reports whether pattern covers path: "*" covers all, a
// pattern ending in "/*" covers everything below that prefix, anything
// else must be equal.
func matchPath(pattern, path string) bool {
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
		if !ratelimit.MatchMethod(p.Method, method) || !matchPath(p.PathPattern, path) {
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

func (s *Server) apiProtectionAssess(c *Call) {
	var in APIAssessInput
	if !c.decode(&in) {
		return
	}
	ws, appID, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	if err := in.validate(); err != nil {
		c.failErr(err)
		return
	}
	m := s.mods.ap
	now := c.Now()
	p := selectPolicy(c.cat, ws.ID, appID, in.Method, in.Path)
	a := &assessment{reasons: []string{}}
	mode := "observe"
	policyID, policyName := "", ""
	if p == nil {
		a.reasons = append(a.reasons, "no-matching-policy")
	} else {
		mode, policyID, policyName = p.EnforcementMode, p.ID, p.Name
		scoreShape(a, p, &in)
		if err := m.velocity(a, ws, p, &in, now); err != nil {
			c.failErr(err)
			return
		}
	}
	hash := func(kind, v string) string {
		h := ratelimit.HashScope(ws.ScopeKey, kind+"\x00"+v)
		return base64.RawURLEncoding.EncodeToString(h[:])
	}
	if in.IdempotencyKey != "" && in.PayloadFingerprint != "" {
		op := &actors.ClaimIdempotency{Key: "idem/" + ws.ID + "/" + hash("idempotency", in.IdempotencyKey),
			Fingerprint: sha256.Sum256([]byte(in.PayloadFingerprint)), Expires: now.Add(idempotencyTTL).UnixNano()}
		if err := m.ask.Ask(op.Key, op); err != nil {
			c.failErr(err)
			return
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
		subjectKey = "rep/" + ws.ID + "/" + hash("subject", in.SubjectID)
		op := &actors.SubjectLabel{Key: subjectKey}
		if err := m.ask.Ask(op.Key, op); err != nil {
			c.failErr(err)
			return
		}
		switch op.Label {
		case "abuse":
			a.add(0.3, "prior-abuse-feedback")
		case "legitimate":
			a.add(-0.2, "prior-legitimate-feedback")
		}
	}
	risk := math.Round(min(max(a.risk, 0), 1)*1000) / 1000
	class, recommended := classify(risk)
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
	if err := m.ask.Ask(assessmentKey(id), &actors.PutAssessment{Assessment: rec}); err != nil {
		c.failErr(err)
		return
	}
	c.ok(&APIAssessment{Success: true, AssessmentID: id, PolicyName: policyName, RiskScore: risk,
		Classification: class, RecommendedDecision: recommended.String(), Decision: applied.String(),
		RetryAfterSeconds: a.retry, ReasonCodes: a.reasons, EnforcementMode: mode})
}

// scoreShape scores the request's shape against the policy's limits.
func scoreShape(a *assessment, p *catalog.APIProtectionPolicy, in *APIAssessInput) {
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
func (m *apiProtectionModule) velocity(a *assessment, ws *catalog.Workspace, p *catalog.APIProtectionPolicy, in *APIAssessInput, now time.Time) error {
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
		t.op = actors.CountHit{Key: "apv/" + ws.ID + "/" + p.ID + "/" + t.kind + "/" + base64.RawURLEncoding.EncodeToString(h[:]),
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

func (s *Server) apiProtectionFeedback(c *Call) {
	var in APIFeedbackInput
	if !c.decode(&in) {
		return
	}
	ws, _, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	switch {
	case !ident.UUID(in.AssessmentID):
		c.failErr(invalid("assessment_id", "required: the UUID of an assessment"))
		return
	case !oneOf(in.Label, feedbackLabels):
		c.failErr(invalid("label", "must be one of "+strings.Join(feedbackLabels, ", ")))
		return
	case !oneOf(in.ReasonCode, feedbackReasons):
		c.failErr(invalid("reason_code", "must be one of "+strings.Join(feedbackReasons, ", ")))
		return
	}
	m := s.mods.ap
	op := &actors.AnnotateAssessment{ID: in.AssessmentID, WorkspaceID: ws.ID, FeedbackID: uuid.NewString(),
		Label: in.Label, Reason: in.ReasonCode, DedupNs: int64(feedbackDedupTime)}
	if err := m.ask.Ask(assessmentKey(in.AssessmentID), op); err != nil {
		c.failErr(err)
		return
	}
	if !op.Found {
		c.fail(ErrNotFound, "no assessment "+in.AssessmentID+" in this workspace (assessments are kept 24 hours)")
		return
	}
	if !op.Duplicate && op.SubjectKey != "" {
		label := "legitimate"
		if in.Label == "abuse" || in.Label == "false_negative" {
			label = "abuse"
		}
		lop := &actors.LabelSubject{Key: op.SubjectKey, Label: label, Expires: c.Now().Add(subjectLabelTTL).UnixNano()}
		if err := m.ask.Ask(lop.Key, lop); err != nil {
			c.failErr(err)
			return
		}
	}
	c.ok(&FeedbackRecord{Success: true, FeedbackID: op.FeedbackID, Accepted: true})
}
