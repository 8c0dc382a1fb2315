package http

import (
	"context"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/risk/account"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/token"
	"github.com/trustd/trustd/verify"
)

// Trust API transport (spec 4.9, 2.8): decode, authenticate, call
// risk/trust, encode. The decisions, rules, proof checks and receipts live
// in risk/trust; see risk/trust/DESIGN.md.

func (s *Server) newTrustModule() *trust.Module {
	m, err := trust.New(s.router, nil, func() time.Time { return s.clock() })
	if err != nil {
		// The environment is static: failing to declare it is a bug.
		panic(err)
	}
	return m
}

func (s *Server) trustRoutes() []Route {
	ws := "/workspaces/{workspace_id}/trust-policies"
	a := []Auth{AuthAdmin}
	aerr := withModuleCodes(append([]ErrorCode(nil), adminErrors...), []*errcode.Code{trust.ErrInvalidPolicy, trust.ErrInvalidRule, trust.ErrPolicyMissing})
	aerr = append(aerr, ErrConflict)
	site := []Auth{AuthSiteSecret}
	mob := []Auth{AuthMobile}
	base := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrUnavailable}
	decErr := withModuleCodes(base, []*errcode.Code{trust.ErrInvalidRequest})
	svErr := withModuleCodes(base, []*errcode.Code{trust.ErrInvalidRequest})
	orErr := withModuleCodes(base, []*errcode.Code{trust.ErrInvalidRequest, trust.ErrUnknownAssessment, trust.ErrAssessmentUsed, trust.ErrContextMismatch, trust.ErrNoReceiptKey})
	fbErr := withModuleCodes(base, []*errcode.Code{trust.ErrInvalidFeedback, trust.ErrUnknownDecision})
	tag := "Trust API"
	return []Route{
		idempotentCreate(Route{Method: "POST", Path: ws, Admin: true, ID: "createTrustPolicy", Tag: tag, Auth: a, Summary: "Add a trust policy: its CEL condition is compiled and type-checked now (400 invalid-trust-rule with the CEL error).",
			Body: &TrustPolicyInput{}, Status: 201, Result: &TrustPolicyView{}, Errors: aerr, Handle: s.admin(s.createTrustPolicy)}),
		{Method: "GET", Path: ws, Admin: true, ID: "listTrustPolicies", Tag: tag, Auth: a, Summary: "A workspace's trust policies with today's match counts, and the built-in rules.",
			Result: &TrustPolicyList{}, Errors: aerr, Handle: s.admin(s.listTrustPolicies)},
		{Method: "GET", Path: ws + "/{trust_policy_id}", Admin: true, ID: "getTrustPolicy", Tag: tag, Auth: a, Summary: "Read a trust policy.",
			Result: &TrustPolicyView{}, Errors: aerr, Handle: s.admin(s.getTrustPolicy)},
		{Method: "PUT", Path: ws + "/{trust_policy_id}", Admin: true, ID: "replaceTrustPolicy", Tag: tag, Auth: a, Summary: "Replace a trust policy (compiled and type-checked now).",
			Body: &TrustPolicyInput{}, Result: &TrustPolicyView{}, Errors: aerr, Handle: s.admin(s.replaceTrustPolicy)},
		{Method: "DELETE", Path: ws + "/{trust_policy_id}", Admin: true, ID: "deleteTrustPolicy", Tag: tag, Auth: a, Summary: "Delete a trust policy.",
			Status: 204, Errors: aerr, Handle: s.admin(s.deleteTrustPolicy)},
		{Method: "POST", Path: "/trust/decision", ID: "trustDecision", Tag: tag, Auth: site, Summary: "Decide allow, verify (step-up), review or block for an action of a subject; the caller's figures are hints that can only raise friction.",
			Body: &TrustDecisionInput{}, Result: &TrustDecision{}, Errors: decErr, Handle: asTrust((*Call).decide)},
		{Method: "POST", Path: "/mobile/trust/decision", ID: "mobileTrustDecision", Tag: tag, Auth: mob, Summary: "POST /trust/decision for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustDecisionInput{}, Result: &TrustDecision{}, Errors: append(decErr, ErrInvalidAppIdentity), Handle: asTrustMobile[TrustDecisionInput, MobileTrustDecisionInput]((*Call).decide)},
		{Method: "POST", Path: "/trust/siteverify", ID: "trustSiteverify", Tag: tag, Auth: site, Summary: "Exchange a single-use proof once and check it against the expected assurance, identity, liveness and operation binding; HTTP 200 with error-codes for every processed proof.",
			Body: &TrustSiteverifyInput{}, Result: &TrustSiteverifyResult{}, Errors: svErr, Handle: asTrust((*Call).trustSiteverify)},
		{Method: "POST", Path: "/mobile/trust/siteverify", ID: "mobileTrustSiteverify", Tag: tag, Auth: mob, Summary: "POST /trust/siteverify for a registered mobile app (step-up proofs only): Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustSiteverifyInput{}, Result: &TrustSiteverifyResult{}, Errors: append(svErr, ErrInvalidAppIdentity), Handle: asTrustMobile[TrustSiteverifyInput, MobileTrustSiteverifyInput]((*Call).trustSiteverify)},
		{Method: "POST", Path: "/trust/orchestrate", ID: "trustOrchestrate", Tag: tag, Auth: site, Summary: "Combine a successful verification with the subject's signals into a decision for one operation, with a signed decision receipt when it is allow (once per verification).",
			Body: &TrustOrchestrateInput{}, Result: &TrustOrchestrateResult{}, Errors: orErr, Handle: asTrust((*Call).orchestrate)},
		{Method: "POST", Path: "/mobile/trust/orchestrate", ID: "mobileTrustOrchestrate", Tag: tag, Auth: mob, Summary: "POST /trust/orchestrate for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustOrchestrateInput{}, Result: &TrustOrchestrateResult{}, Errors: append(orErr, ErrInvalidAppIdentity), Handle: asTrustMobile[TrustOrchestrateInput, MobileTrustOrchestrateInput]((*Call).orchestrate)},
		{Method: "POST", Path: "/trust/receipts/verify", ID: "trustReceiptVerify", Tag: tag, Auth: site, Summary: "Verify a decision receipt's signature, lifetime, workspace and the bindings given.",
			Body: &TrustReceiptVerifyInput{}, Result: &TrustReceiptVerifyResult{}, Errors: withModuleCodes(base, nil), Handle: asTrust((*Call).receiptVerify)},
		{Method: "POST", Path: "/mobile/trust/receipts/verify", ID: "mobileTrustReceiptVerify", Tag: tag, Auth: mob, Summary: "POST /trust/receipts/verify for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustReceiptVerifyInput{}, Result: &TrustReceiptVerifyResult{}, Errors: append(withModuleCodes(base, nil), ErrInvalidAppIdentity), Handle: asTrustMobile[TrustReceiptVerifyInput, MobileTrustReceiptVerifyInput]((*Call).receiptVerify)},
		{Method: "POST", Path: "/trust/feedback", ID: "trustFeedback", Tag: tag, Auth: site, Summary: "Label a trust decision (exact retries within 5 minutes are de-duplicated); a fraudulent label raises the subject's later decisions.",
			Body: &TrustFeedbackInput{}, Result: &TrustFeedbackResult{}, Errors: fbErr, Handle: asTrust((*Call).trustFeedback)},
		{Method: "POST", Path: "/mobile/trust/feedback", ID: "mobileTrustFeedback", Tag: tag, Auth: mob, Summary: "POST /trust/feedback for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity).",
			Body: &MobileTrustFeedbackInput{}, Result: &TrustFeedbackResult{}, Errors: append(fbErr, ErrInvalidAppIdentity), Handle: asTrustMobile[TrustFeedbackInput, MobileTrustFeedbackInput]((*Call).trustFeedback)},
		{Method: "GET", Path: "/.well-known/jwks.json", ID: "trustJWKS", Tag: tag, Summary: "The Ed25519 public keys (JWK Set, RFC 7517/8037) that verify decision receipts: each key twice, with alg Ed25519 (RFC 9864) and alg EdDSA, under one kid.",
			Result: &JWKS{}, Handle: s.trustJWKS},
	}
}

func (c *Call) trustModule() *trust.Module { return c.s.mods.trust }

func (c *Call) trustPolicy() (*catalog.Workspace, *catalog.TrustPolicy) {
	w := c.workspace()
	if w == nil {
		return nil, nil
	}
	p := c.cat.TrustPolicies[c.Param("trust_policy_id")]
	if p == nil || p.WorkspaceID != w.ID {
		c.failErr(trust.ErrPolicyMissing)
		return nil, nil
	}
	return w, p
}

func (in TrustPolicyInput) spec() trust.PolicySpec {
	return trust.PolicySpec{Name: in.Name, Condition: in.Condition, ReasonCode: in.ReasonCode, Outcome: in.Outcome, Mode: in.Mode}
}

func (c *Call) trustPolicyView(ws string, p *catalog.TrustPolicy) TrustPolicyView {
	n, _ := c.trustModule().Matches(ws, p.Name)
	return TrustPolicyView{TrustPolicyID: p.ID, Name: p.Name, Condition: p.Condition, ReasonCode: p.ReasonCode, Outcome: p.Outcome,
		Mode: p.Mode, MatchesToday: n, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func (s *Server) createTrustPolicy(c *Call) {
	w := c.workspace()
	var in TrustPolicyInput
	if w == nil || !c.decode(&in) {
		return
	}
	createOnce(c, w.ID, &in, func() (catalog.Command, string, error) {
		p, err := trust.NewPolicy(c.trustModule().Env(), w.ID, in.spec(), s.clock().UTC())
		if err != nil {
			return nil, "", err
		}
		return &catalog.PutTrustPolicy{Policy: p}, "", nil
	}, func(p *catalog.TrustPolicy, _ string) { c.json(201, c.trustPolicyView(w.ID, p)) })
}

func (s *Server) listTrustPolicies(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	out := TrustPolicyList{Policies: []TrustPolicyView{}, Builtins: []TrustPolicyView{}, BuiltinsActive: true}
	for _, p := range c.cat.TrustPoliciesOf(w.ID) {
		out.Policies = append(out.Policies, c.trustPolicyView(w.ID, p))
		if p.Mode == trust.ModeEnforce {
			out.BuiltinsActive = false
		}
	}
	sort.Slice(out.Policies, func(i, j int) bool { return out.Policies[i].Name < out.Policies[j].Name })
	for _, b := range trust.Builtins {
		n, _ := c.trustModule().Matches(w.ID, b.Name)
		out.Builtins = append(out.Builtins, TrustPolicyView{Name: b.Name, Condition: b.Condition, ReasonCode: b.ReasonCode,
			Outcome: b.Outcome, Mode: b.Mode, MatchesToday: n})
	}
	c.ok(&out)
}

func (s *Server) getTrustPolicy(c *Call) {
	if w, p := c.trustPolicy(); p != nil {
		c.ok(c.trustPolicyView(w.ID, p))
	}
}

func (s *Server) replaceTrustPolicy(c *Call) {
	w, cur := c.trustPolicy()
	var in TrustPolicyInput
	if cur == nil || !c.decode(&in) {
		return
	}
	p, err := trust.UpdatePolicy(c.trustModule().Env(), *cur, in.spec(), s.clock().UTC())
	if err != nil {
		c.failErr(err)
		return
	}
	if v, ok := c.apply(&catalog.PutTrustPolicy{Policy: p}); ok {
		c.ok(c.trustPolicyView(w.ID, v.(*catalog.TrustPolicy)))
	}
}

func (s *Server) deleteTrustPolicy(c *Call) {
	w, cur := c.trustPolicy()
	if cur == nil {
		return
	}
	if _, ok := c.apply(&catalog.DeleteTrustPolicy{WorkspaceID: w.ID, ID: cur.ID}); ok {
		c.noContent()
	}
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

// trustCaller authenticates a site's private secret (bearer or body).
func (c *Call) trustCaller(secret string) (trust.Caller, bool) {
	tc, ok := c.siteCaller(secret)
	if !ok {
		return trust.Caller{}, false
	}
	return trust.Caller{Workspace: tc.ws, AppID: tc.appID, Channel: "server"}, true
}

func (c *Call) trustMobileCaller(bodySecret, platform, appID string) (trust.Caller, bool) {
	if bodySecret != "" {
		c.fail(ErrInvalidField, "secret: mobile operations take the mobile secret in Authorization: Bearer only")
		return trust.Caller{}, false
	}
	tc, ok := c.mobileCaller(platform, appID)
	if !ok {
		return trust.Caller{}, false
	}
	return trust.Caller{Workspace: tc.ws, AppID: tc.appID, Channel: "mobile"}, true
}

func (c *Call) decide(who trust.Caller, in *TrustDecisionInput) {
	r, err := c.trustModule().Decide(c.Ctx, c.cat, who, in.request())
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(decisionView(r))
}

func (in *TrustSiteverifyInput) request() trust.SiteverifyRequest {
	return trust.SiteverifyRequest{Response: in.Response, Action: in.Action, ExpectedAssurance: in.ExpectedAssurance,
		RequireIdentity: in.RequireIdentity, RequireLiveness: in.RequireLiveness, RequireOperationBinding: in.RequireOperationBinding,
		OperationReference: in.OperationReference, MaxAgeSeconds: in.MaxAgeSeconds}
}

// trustSiteverify binds a server caller's proofs to its app; a mobile
// caller's app is checked by the proof's own binding.
func (c *Call) trustSiteverify(who trust.Caller, in *TrustSiteverifyInput) {
	appID := ""
	if who.Channel == "server" {
		appID = who.AppID
	}
	c.exchangeProof(who, appID, in)
}

// asTrust is the handler of a trust-caller operation (trust API, journeys)
// on body In: decode, authenticate the site secret (bearer, else the
// body's), run op.
func asTrust[In any, P interface {
	*In
	siteSecretBody
}](op func(c *Call, who trust.Caller, in *In)) func(*Call) {
	return func(c *Call) {
		in := P(new(In))
		if !c.decode(in) {
			return
		}
		if who, ok := c.trustCaller(in.siteSecret()); ok {
			op(c, who, (*In)(in))
		}
	}
}

// asTrustMobile is asTrust for the mobile variant M of body In: the mobile
// secret (bearer only) and the app's declared identity.
func asTrustMobile[In, M any, P interface {
	*M
	siteSecretBody
	mobileBody
	site() *In
}](op func(c *Call, who trust.Caller, in *In)) func(*Call) {
	return func(c *Call) {
		in := P(new(M))
		if !c.decode(in) {
			return
		}
		platform, appID := in.mobileIdentity()
		if who, ok := c.trustMobileCaller(in.siteSecret(), platform, appID); ok {
			op(c, who, in.site())
		}
	}
}

func (in *TrustDecisionInput) siteSecret() string      { return in.Secret }
func (in *TrustSiteverifyInput) siteSecret() string    { return in.Secret }
func (in *TrustOrchestrateInput) siteSecret() string   { return in.Secret }
func (in *TrustReceiptVerifyInput) siteSecret() string { return in.Secret }
func (in *TrustFeedbackInput) siteSecret() string      { return in.Secret }
func (in *JourneyStartInput) siteSecret() string       { return in.Secret }
func (in *JourneySiteverifyInput) siteSecret() string  { return in.Secret }
func (in *JourneySessionInput) siteSecret() string     { return in.Secret }
func (in *JourneyEscalateInput) siteSecret() string    { return in.Secret }

func (in *MobileTrustDecisionInput) site() *TrustDecisionInput     { return &in.TrustDecisionInput }
func (in *MobileTrustSiteverifyInput) site() *TrustSiteverifyInput { return &in.TrustSiteverifyInput }
func (in *MobileTrustOrchestrateInput) site() *TrustOrchestrateInput {
	return &in.TrustOrchestrateInput
}
func (in *MobileTrustReceiptVerifyInput) site() *TrustReceiptVerifyInput {
	return &in.TrustReceiptVerifyInput
}
func (in *MobileTrustFeedbackInput) site() *TrustFeedbackInput { return &in.TrustFeedbackInput }
func (in *MobileJourneyStartInput) site() *JourneyStartInput   { return &in.JourneyStartInput }
func (in *MobileJourneySiteverifyInput) site() *JourneySiteverifyInput {
	return &in.JourneySiteverifyInput
}
func (in *MobileJourneySessionInput) site() *JourneySessionInput   { return &in.JourneySessionInput }
func (in *MobileJourneyEscalateInput) site() *JourneyEscalateInput { return &in.JourneyEscalateInput }

func (in *MobileTrustDecisionInput) mobileIdentity() (string, string)   { return in.Platform, in.AppID }
func (in *MobileTrustSiteverifyInput) mobileIdentity() (string, string) { return in.Platform, in.AppID }
func (in *MobileTrustOrchestrateInput) mobileIdentity() (string, string) {
	return in.Platform, in.AppID
}
func (in *MobileTrustReceiptVerifyInput) mobileIdentity() (string, string) {
	return in.Platform, in.AppID
}
func (in *MobileTrustFeedbackInput) mobileIdentity() (string, string) { return in.Platform, in.AppID }
func (in *MobileJourneyStartInput) mobileIdentity() (string, string)  { return in.Platform, in.AppID }
func (in *MobileJourneySiteverifyInput) mobileIdentity() (string, string) {
	return in.Platform, in.AppID
}
func (in *MobileJourneySessionInput) mobileIdentity() (string, string)  { return in.Platform, in.AppID }
func (in *MobileJourneyEscalateInput) mobileIdentity() (string, string) { return in.Platform, in.AppID }

// exchangeProof answers a trust siteverify. A step-up proof goes to the
// module; a widget response token is consumed by the same code as
// /siteverify (verifyToken: one marker per token, so a token exchanged at
// either endpoint is spent at both), then checked against the trust
// requirements as a proof of presence (assurance none).
func (c *Call) exchangeProof(who trust.Caller, siteID string, in *TrustSiteverifyInput) {
	if in.Response == "" {
		c.fail(ErrInvalidField, "response: required, the single-use proof")
		return
	}
	req := in.request()
	if err := req.Validate(); err != nil {
		c.failErr(err)
		return
	}
	m := c.trustModule()
	var res trust.ProofResult
	switch {
	case strings.HasPrefix(in.Response, token.ProofPrefix):
		hv, cat := c.s.mods.verify, c.cat
		r, err := m.VerifyProof(who, siteID, req, func(id string) *token.Key { return hv.Verifier(cat, catalog.KeyLive, id) })
		if err != nil {
			c.failErr(err)
			return
		}
		res = r
	case strings.HasPrefix(in.Response, token.LivePrefix) && siteID != "":
		r, err := c.exchangeWidgetToken(c.cat.Sites[siteID], req)
		if err != nil {
			c.failErr(err)
			return
		}
		res = r
	default:
		res = trust.ProofResult{Codes: []string{trust.CodeInvalidResponse}}
	}
	out := TrustSiteverifyResult{Success: res.Success(), ErrorCodes: res.Codes}
	if res.Known {
		a := res.Achieved
		out.Trust = &TrustProofResult{Method: a.Method, AssuranceLevel: a.Assurance.String(), IdentityBound: a.Identity, LivenessVerified: a.Liveness,
			DeviceBound: a.DeviceBound, OperationBound: a.OperationBound, AuthorizationCapable: a.Identity && a.OperationBound, Action: a.Action}
	}
	if res.Success() {
		out.AssessmentID = res.AssessmentID
	}
	c.ok(&out)
}

// exchangeWidgetToken consumes a human-verification response token of
// site through verify.Siteverify (the /siteverify path, unchanged), then applies
// the trust requirements to it as a proof of presence. The widget's own
// failures keep their /siteverify codes. When only the trust requirements
// fail, the verification Siteverify kept is never handed out: its id is
// dropped here and the record expires with its TTL.
func (c *Call) exchangeWidgetToken(site *catalog.Site, req trust.SiteverifyRequest) (trust.ProofResult, error) {
	if site == nil {
		return trust.ProofResult{Codes: []string{trust.CodeInvalidResponse}}, nil
	}
	b := c.s.svBufs.Get().(*svBuf)
	defer c.s.svBufs.Put(b)
	q := verify.Request{Response: []byte(req.Response), Action: []byte(req.Action)}
	v, err := c.s.mods.verify.Siteverify(c.cat, site, &q, b.tokenScratch())
	if err != nil {
		return trust.ProofResult{}, err
	}
	if !v.Known {
		return trust.ProofResult{Codes: []string{trust.CodeInvalidResponse}}, nil
	}
	// A widget token proves presence at its issue time: assurance none.
	a := trust.Achieved{Method: trust.MethodHuman, Assurance: trust.LevelNone, Action: v.Token.Action, AuthTime: time.Unix(v.Token.Issued, 0)}
	res := trust.ProofResult{Known: true, Achieved: a, Codes: v.CodeNames([]string{})}
	if v.Codes&verify.CodeTimeoutOrDuplicate == 0 {
		// The action was checked by Siteverify; the rest here.
		req.Action = ""
		res.Codes = append(res.Codes, trust.Check(req, a, [16]byte{}, c.Now())...)
	}
	if len(res.Codes) == 0 {
		res.AssessmentID = v.AssessmentID
	}
	return res, nil
}

func (c *Call) orchestrate(who trust.Caller, in *TrustOrchestrateInput) {
	r, err := c.trustModule().Orchestrate(c.cat, who, trust.OrchestrateRequest{AssessmentID: in.AssessmentID, SubjectID: in.SubjectID,
		Action: in.Action, OperationReference: in.OperationReference, ReceiptAlg: in.ReceiptAlg})
	if err != nil {
		c.failErr(err)
		return
	}
	out := TrustOrchestrateResult{TrustDecision: decisionView(r.DecisionResult), AssuranceLevel: r.AssuranceLevel.String(), Receipt: r.Receipt}
	if r.Claims != nil {
		out.ReceiptExpiresAt = r.Claims.Expires
	}
	c.ok(&out)
}

func (c *Call) receiptVerify(who trust.Caller, in *TrustReceiptVerifyInput) {
	if in.Receipt == "" {
		c.fail(ErrInvalidField, "receipt: required")
		return
	}
	cl, codes := c.trustModule().VerifyReceipt(c.cat, who, trust.VerifyReceiptRequest{Receipt: in.Receipt, Action: in.Action,
		OperationReference: in.OperationReference, SubjectID: in.SubjectID})
	out := TrustReceiptVerifyResult{Success: cl != nil && len(codes) == 0, ErrorCodes: codes}
	if cl != nil {
		v := TrustReceiptClaims(*cl)
		out.Claims = &v
	}
	c.ok(&out)
}

func (c *Call) trustFeedback(who trust.Caller, in *TrustFeedbackInput) {
	r, err := c.trustModule().Feedback(who, trust.FeedbackRequest{DecisionID: in.DecisionID, Label: in.Label, ReasonCode: in.ReasonCode})
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&TrustFeedbackResult{Success: true, FeedbackID: r.FeedbackID, Duplicate: r.Duplicate})
}

func (s *Server) trustJWKS(c *Call) {
	ids, pubs := trust.ReceiptKeys{Cat: c.cat}.All()
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
	c.ok(&out)
}

// accountSignals adds Account Defence's observations to what a trust
// decision rests on: a subject or device labelled fraudulent counts as
// abuse, failed authentications the account module saw (its one-hour
// window) count as failed attempts when they are more than the trust
// module's own five-minute count, and the customer's trusted-device list
// is the account module's. Both sources only raise what the other says,
// except the trusted device, which the customer asserted through the
// authenticated trusted-device operation.
type accountSignals struct {
	own     trust.SignalSource
	account *account.Module
}

func (a accountSignals) SubjectSignals(ctx context.Context, workspace, subjectHash, deviceHash string) (trust.Signals, error) {
	s, err := a.own.SubjectSignals(ctx, workspace, subjectHash, deviceHash)
	if err != nil {
		return s, err
	}
	acc, err := a.account.Signals(ctx, workspace, subjectHash, deviceHash)
	if err != nil {
		return s, err
	}
	if acc.SubjectLabel == "fraudulent" || acc.DeviceLabel == "fraudulent" {
		s.Label = "abuse"
	}
	s.FailedAttempts5m = max(s.FailedAttempts5m, int64(acc.SubjectFailures+0.5), int64(acc.DeviceFailures+0.5))
	s.TrustedDevice = acc.TrustedDevice
	return s, nil
}
