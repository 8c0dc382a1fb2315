package api

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// Trust API transport (spec 4.9, 2.8): decode, authenticate, call
// risk/trust, encode. The decisions, rules, proof checks, receipts and what
// a widget token proves live in risk/trust; see risk/trust/DESIGN.md.

type trustAPI struct {
	m       *trust.Module
	proofs  ProofKeys
	widgets WidgetExchange
}

func (t trustAPI) routes() []kernel.Route {
	aerr := kernel.WithModuleCodes(kernel.AdminErrors(), []*errcode.Code{trust.ErrInvalidPolicy, trust.ErrInvalidRule, trust.ErrPolicyMissing})
	aerr = append(aerr, kernel.ErrConflict)
	site := []kernel.Auth{kernel.AuthSiteSecret}
	mob := []kernel.Auth{kernel.AuthMobile}
	base := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType,
		kernel.ErrBodyTooLarge, kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrRateLimited, kernel.ErrUnavailable}
	decErr := kernel.WithModuleCodes(base, []*errcode.Code{trust.ErrInvalidRequest})
	svErr := kernel.WithModuleCodes(base, []*errcode.Code{trust.ErrInvalidRequest})
	orErr := kernel.WithModuleErrors(base, trust.ErrInvalidRequest, trust.ErrUnknownAssessment, trust.ErrAssessmentUsed, trust.ErrContextMismatch, trust.ErrNoReceiptKey)
	fbErr := kernel.WithModuleCodes(base, []*errcode.Code{trust.ErrInvalidFeedback, trust.ErrUnknownDecision})
	tag := "Trust API"
	return append(t.policies(aerr).Routes(), []kernel.Route{
		{Method: "POST", Path: "/trust/decision", ID: "trustDecision", Tag: tag, Auth: site, Summary: "Decide allow, verify (step-up), review or block for an action of a subject; the caller's figures are hints that can only raise friction.",
			Body: &TrustDecisionInput{}, Result: &TrustDecision{}, Errors: decErr, Handle: kernel.AsSiteCaller(t.decide)},
		{Method: "POST", Path: "/mobile/trust/decision", ID: "mobileTrustDecision", Tag: tag, Auth: mob, Summary: "POST /trust/decision for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustDecisionInput{}, Result: &TrustDecision{}, Errors: append(decErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[TrustDecisionInput, MobileTrustDecisionInput](t.decide)},
		{Method: "POST", Path: "/trust/siteverify", ID: "trustSiteverify", Tag: tag, Auth: site, Summary: "Exchange a single-use proof once and check it against the expected assurance, identity, liveness and operation binding; HTTP 200 with error-codes for every processed proof.",
			Body: &TrustSiteverifyInput{}, Result: &TrustSiteverifyResult{}, Errors: svErr, Handle: kernel.AsSiteCaller(t.siteverify)},
		{Method: "POST", Path: "/mobile/trust/siteverify", ID: "mobileTrustSiteverify", Tag: tag, Auth: mob, Summary: "POST /trust/siteverify for a registered mobile app (step-up proofs only): Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustSiteverifyInput{}, Result: &TrustSiteverifyResult{}, Errors: append(svErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[TrustSiteverifyInput, MobileTrustSiteverifyInput](t.siteverify)},
		{Method: "POST", Path: "/trust/orchestrate", ID: "trustOrchestrate", Tag: tag, Auth: site, Summary: "Combine a successful verification with the subject's signals into a decision for one operation, with a signed decision receipt when it is allow (once per verification).",
			Body: &TrustOrchestrateInput{}, Result: &TrustOrchestrateResult{}, Errors: orErr, Handle: kernel.AsSiteCaller(t.orchestrate)},
		{Method: "POST", Path: "/mobile/trust/orchestrate", ID: "mobileTrustOrchestrate", Tag: tag, Auth: mob, Summary: "POST /trust/orchestrate for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustOrchestrateInput{}, Result: &TrustOrchestrateResult{}, Errors: append(orErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[TrustOrchestrateInput, MobileTrustOrchestrateInput](t.orchestrate)},
		{Method: "POST", Path: "/trust/receipts/verify", ID: "trustReceiptVerify", Tag: tag, Auth: site, Summary: "Verify a decision receipt's signature, lifetime, workspace and the bindings given.",
			Body: &TrustReceiptVerifyInput{}, Result: &TrustReceiptVerifyResult{}, Errors: kernel.WithModuleCodes(base, nil), Handle: kernel.AsSiteCaller(t.receiptVerify)},
		{Method: "POST", Path: "/mobile/trust/receipts/verify", ID: "mobileTrustReceiptVerify", Tag: tag, Auth: mob, Summary: "POST /trust/receipts/verify for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustReceiptVerifyInput{}, Result: &TrustReceiptVerifyResult{}, Errors: append(kernel.WithModuleCodes(base, nil), kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[TrustReceiptVerifyInput, MobileTrustReceiptVerifyInput](t.receiptVerify)},
		{Method: "POST", Path: "/trust/feedback", ID: "trustFeedback", Tag: tag, Auth: site, Summary: "Label a trust decision (exact retries within 5 minutes are de-duplicated); a fraudulent label raises the subject's later decisions.",
			Body: &TrustFeedbackInput{}, Result: &TrustFeedbackResult{}, Errors: fbErr, Handle: kernel.AsSiteCaller(t.feedback)},
		{Method: "POST", Path: "/mobile/trust/feedback", ID: "mobileTrustFeedback", Tag: tag, Auth: mob, Summary: "POST /trust/feedback for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustFeedbackInput{}, Result: &TrustFeedbackResult{}, Errors: append(fbErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[TrustFeedbackInput, MobileTrustFeedbackInput](t.feedback)},
		{Method: "GET", Path: "/.well-known/jwks.json", ID: "trustJWKS", Tag: tag, Summary: "The Ed25519 public keys (JWK Set, RFC 7517/8037) that verify decision receipts: each key twice, with alg Ed25519 (RFC 9864) and alg EdDSA, under one kid.",
			Result: &JWKS{}, Handle: jwks},
	}...)
}

// caller is the trust module's view of an authenticated application.
func caller(who kernel.Caller) trust.Caller {
	return trust.Caller{Workspace: who.Workspace, AppID: who.AppID, Channel: who.Channel}
}

// policies is the trust-policy collection on the generic admin path. It
// differs from the default in its names (PUT replaceTrustPolicy), its
// missing-record code (trust-policy-not-found) and its list answer, which
// adds the built-in rules with the workspace's match counts.
func (t trustAPI) policies(aerr []kernel.ErrorCode) *kernel.Resource[catalog.TrustPolicy, TrustPolicyInput, TrustPolicyView, TrustPolicyList] {
	return &kernel.Resource[catalog.TrustPolicy, TrustPolicyInput, TrustPolicyView, TrustPolicyList]{
		What: "trust policy", Path: "/workspaces/{workspace_id}/trust-policies", Param: "trust_policy_id",
		ID: "TrustPolicy", IDs: "TrustPolicies", Tag: "Trust API", UpdateMethod: "PUT", UpdateVerb: "replace",
		Summary: map[string]string{
			"create": "Add a trust policy: its CEL condition is compiled and type-checked now (400 invalid-trust-rule with the CEL error).",
			"list":   "A workspace's trust policies with today's match counts, and the built-in rules.",
			"get":    "Read a trust policy.",
			"update": "Replace a trust policy (compiled and type-checked now).",
			"delete": "Delete a trust policy.",
		},
		Errors: aerr, NotFound: trust.ErrPolicyMissing,
		Table: func(c *catalog.Catalog) map[string]*catalog.TrustPolicy { return c.TrustPolicies },
		Owner: func(p *catalog.TrustPolicy) string { return p.WorkspaceID },
		// The module compiles the condition and stamps the record.
		Build: func(c *kernel.Call, in *TrustPolicyInput, cur *catalog.TrustPolicy, workspaceID string) (catalog.TrustPolicy, string, error) {
			if cur == nil {
				p, err := trust.NewPolicy(t.m.Env(), workspaceID, in.spec(), c.Now().UTC())
				return p, "", err
			}
			p, err := trust.UpdatePolicy(t.m.Env(), *cur, in.spec(), c.Now().UTC())
			return p, "", err
		},
		Create: func(p catalog.TrustPolicy) catalog.Command { return &catalog.PutTrustPolicy{Policy: p} },
		Update: func(_ *TrustPolicyInput, p catalog.TrustPolicy) catalog.Command {
			return &catalog.PutTrustPolicy{Policy: p}
		},
		Delete: func(p *catalog.TrustPolicy, _ time.Time) catalog.Command {
			return &catalog.DeleteTrustPolicy{WorkspaceID: p.WorkspaceID, ID: p.ID}
		},
		View: func(_ *kernel.Call, p *catalog.TrustPolicy, _ string) *TrustPolicyView {
			v := t.policyView(p.WorkspaceID, p)
			return &v
		},
		SortID: func(v *TrustPolicyView) string { return v.Name },
		ListCall: func(c *kernel.Call, views []TrustPolicyView) *TrustPolicyList {
			ws := c.Param("workspace_id")
			out := TrustPolicyList{Policies: views, Builtins: []TrustPolicyView{}, BuiltinsActive: true}
			for _, v := range views {
				if v.Mode == trust.ModeEnforce {
					out.BuiltinsActive = false
				}
			}
			for _, b := range trust.Builtins {
				n, _ := t.m.Matches(ws, b.Name)
				out.Builtins = append(out.Builtins, TrustPolicyView{Name: b.Name, Condition: b.Condition, ReasonCode: b.ReasonCode,
					Outcome: b.Outcome, Mode: b.Mode, MatchesToday: n})
			}
			return &out
		},
	}
}

func (in TrustPolicyInput) spec() trust.PolicySpec {
	return trust.PolicySpec{Name: in.Name, Condition: in.Condition, ReasonCode: in.ReasonCode, Outcome: in.Outcome, Mode: in.Mode}
}

func (t trustAPI) policyView(ws string, p *catalog.TrustPolicy) TrustPolicyView {
	n, _ := t.m.Matches(ws, p.Name)
	return TrustPolicyView{TrustPolicyID: p.ID, Name: p.Name, Condition: p.Condition, ReasonCode: p.ReasonCode, Outcome: p.Outcome,
		Mode: p.Mode, MatchesToday: n, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func (in *TrustDecisionInput) request() trust.DecisionRequest {
	return trust.DecisionRequest{Action: in.Action, SubjectID: in.SubjectID, DeviceID: in.DeviceID, RequestedAssurance: in.RequestedAssurance,
		TransactionAmount: in.TransactionAmount, CountryCode: in.CountryCode, NetworkType: in.NetworkType,
		Hints: trust.Hints{RiskScore: in.RiskScore, RequestVelocity5m: in.RequestVelocity5m, FailedAttempts5m: in.FailedAttempts5m, NewDevice: in.NewDevice}}
}

func decisionView(r trust.DecisionResult) TrustDecision {
	d := r.Decision
	out := TrustDecision{Success: true, DecisionID: r.DecisionID, Decision: d.Decision, Method: d.Method,
		RequestedAssurance: d.RequestedAssurance.String(), EnrollmentAvailable: d.EnrollmentAvailable,
		Requirements: TrustRequirements{Identity: d.Requirements.Identity, Liveness: d.Requirements.Liveness, DeviceBinding: d.Requirements.DeviceBinding},
		Risk:         TrustRisk{Outcome: d.Risk.Outcome, Score: d.Risk.Score, Level: d.Risk.Level, EngineStatus: d.Risk.EngineStatus, MatchedRules: []TrustMatchedRule{}}}
	for _, m := range d.Risk.MatchedRules {
		out.Risk.MatchedRules = append(out.Risk.MatchedRules, TrustMatchedRule{PolicyName: m.PolicyName, ReasonCode: m.ReasonCode})
	}
	return out
}

func (t trustAPI) decide(c *kernel.Call, who kernel.Caller, in *TrustDecisionInput) {
	r, err := t.m.Decide(c.Ctx, c.Catalog(), caller(who), in.request())
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(decisionView(r))
}

func (in *TrustSiteverifyInput) request() trust.SiteverifyRequest {
	return trust.SiteverifyRequest{Response: in.Response, Action: in.Action, ExpectedAssurance: in.ExpectedAssurance,
		RequireIdentity: in.RequireIdentity, RequireLiveness: in.RequireLiveness, RequireOperationBinding: in.RequireOperationBinding,
		OperationReference: in.OperationReference, MaxAgeSeconds: in.MaxAgeSeconds}
}

// siteverify answers a trust siteverify. A step-up proof goes to the
// module, bound to a server caller's app (a mobile caller's app is checked
// by the proof's own binding); a widget response token (site callers only)
// is exchanged by the verify module exactly as /siteverify exchanges it,
// and risk/trust decides what it proves.
func (t trustAPI) siteverify(c *kernel.Call, who kernel.Caller, in *TrustSiteverifyInput) {
	siteID := ""
	if who.Channel == "server" {
		siteID = who.AppID
	}
	if in.Response == "" {
		c.Fail(kernel.ErrInvalidField, "response: required, the single-use proof")
		return
	}
	req := in.request()
	if err := req.Validate(); err != nil {
		c.FailErr(err)
		return
	}
	cat := c.Catalog()
	var res trust.ProofResult
	switch {
	case strings.HasPrefix(in.Response, token.ProofPrefix):
		r, err := t.m.VerifyProof(caller(who), siteID, req, func(id string) *token.Key { return t.proofs.Verifier(cat, id) })
		if err != nil {
			c.FailErr(err)
			return
		}
		res = r
	case strings.HasPrefix(in.Response, token.LivePrefix) && siteID != "":
		var w trust.WidgetToken
		if site := cat.Sites[siteID]; site != nil {
			x, err := t.widgets.ExchangeWidget(cat, site, req.Response, req.Action)
			if err != nil {
				c.FailErr(err)
				return
			}
			w = x
		}
		res = trust.WidgetProof(req, w, c.Now())
	default:
		res = trust.ProofResult{Codes: []string{errcode.CodeInvalidResponse}}
	}
	out := TrustSiteverifyResult{Success: res.Success(), ErrorCodes: res.Codes}
	if res.Known {
		a := res.Achieved
		out.Trust = &TrustProofResult{Method: a.Method, AssuranceLevel: a.Assurance.String(), IdentityBound: a.Identity, LivenessVerified: a.Liveness,
			DeviceBound: a.DeviceBound, OperationBound: a.OperationBound, AuthorizationCapable: a.AuthorizationCapable(), Action: a.Action}
	}
	if res.Success() {
		out.AssessmentID = res.AssessmentID
	}
	c.OK(&out)
}

func (t trustAPI) orchestrate(c *kernel.Call, who kernel.Caller, in *TrustOrchestrateInput) {
	r, err := t.m.Orchestrate(c.Catalog(), caller(who), trust.OrchestrateRequest{AssessmentID: in.AssessmentID, SubjectID: in.SubjectID,
		Action: in.Action, OperationReference: in.OperationReference, ReceiptAlg: in.ReceiptAlg})
	if err != nil {
		c.FailErr(err)
		return
	}
	out := TrustOrchestrateResult{TrustDecision: decisionView(r.DecisionResult), AssuranceLevel: r.AssuranceLevel.String(), Receipt: r.Receipt}
	if r.Claims != nil {
		out.ReceiptExpiresAt = r.Claims.Expires
	}
	c.OK(&out)
}

func (t trustAPI) receiptVerify(c *kernel.Call, who kernel.Caller, in *TrustReceiptVerifyInput) {
	if in.Receipt == "" {
		c.Fail(kernel.ErrInvalidField, "receipt: required")
		return
	}
	cl, codes := t.m.VerifyReceipt(c.Catalog(), caller(who), trust.VerifyReceiptRequest{Receipt: in.Receipt, Action: in.Action,
		OperationReference: in.OperationReference, SubjectID: in.SubjectID})
	out := TrustReceiptVerifyResult{Success: cl != nil && len(codes) == 0, ErrorCodes: codes}
	if cl != nil {
		v := TrustReceiptClaims(*cl)
		out.Claims = &v
	}
	c.OK(&out)
}

func (t trustAPI) feedback(c *kernel.Call, who kernel.Caller, in *TrustFeedbackInput) {
	r, err := t.m.Feedback(caller(who), trust.FeedbackRequest{DecisionID: in.DecisionID, Label: in.Label, ReasonCode: in.ReasonCode})
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&TrustFeedbackResult{Success: true, FeedbackID: r.FeedbackID, Duplicate: r.Duplicate})
}

func jwks(c *kernel.Call) {
	ids, pubs := trust.ReceiptKeys{Cat: c.Catalog()}.All()
	out := JWKS{Keys: []JWK{}}
	for i, id := range ids {
		// Each key twice, once per alg name (risk/trust/DESIGN.md, receipts):
		// libraries that match a JWK's alg to the header's find the entry of
		// the name the receipt carries, whichever it is.
		x := base64.RawURLEncoding.EncodeToString(pubs[i])
		for _, alg := range trust.ReceiptAlgs {
			out.Keys = append(out.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: x, Kid: id, Alg: alg, Use: "sig"})
		}
	}
	c.Ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	c.OK(&out)
}

func (in *TrustDecisionInput) SiteSecret() string      { return in.Secret }
func (in *TrustSiteverifyInput) SiteSecret() string    { return in.Secret }
func (in *TrustOrchestrateInput) SiteSecret() string   { return in.Secret }
func (in *TrustReceiptVerifyInput) SiteSecret() string { return in.Secret }
func (in *TrustFeedbackInput) SiteSecret() string      { return in.Secret }

func (in *MobileTrustDecisionInput) Site() *TrustDecisionInput     { return &in.TrustDecisionInput }
func (in *MobileTrustSiteverifyInput) Site() *TrustSiteverifyInput { return &in.TrustSiteverifyInput }
func (in *MobileTrustOrchestrateInput) Site() *TrustOrchestrateInput {
	return &in.TrustOrchestrateInput
}
func (in *MobileTrustReceiptVerifyInput) Site() *TrustReceiptVerifyInput {
	return &in.TrustReceiptVerifyInput
}
func (in *MobileTrustFeedbackInput) Site() *TrustFeedbackInput { return &in.TrustFeedbackInput }
