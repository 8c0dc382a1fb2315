package http

import (
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/journeys"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/token"
	"github.com/trustd/trustd/verify"
)

// Journeys transport (spec 4.8, 2.7): decode, authenticate, call
// journeys/, encode. States, bindings and proofs live in journeys/; see
// journeys/DESIGN.md. The person's page and its calls authenticate with
// the person's capability (header X-Service-Journey-Token), never a
// secret.

//go:embed journeys_page
var journeyPage embed.FS

// journeyKeys gives journeys the live signing keys.
type journeyKeys struct{ hv *verify.Module }

func (k journeyKeys) Signer(cat *catalog.Catalog) *token.Key {
	return k.hv.Signer(cat, catalog.KeyLive)
}
func (k journeyKeys) Verifier(cat *catalog.Catalog, id string) *token.Key {
	return k.hv.Verifier(cat, catalog.KeyLive, id)
}

// newJourneys builds the module over the live signing keys and the same
// risk signals as trust decisions (the trust counters and Account
// Defence's observations).
func (s *Server) newJourneys(hv *verify.Module) *journeys.Module {
	var signals trust.SignalSource
	var ask journeys.Asker
	if s.router != nil {
		ask = s.router
		signals = s.cfg.JourneySignals
	}
	return journeys.New(s.store, ask, journeyKeys{hv}, signals, func() time.Time { return s.clock() }).
		WithFace(nil, nil, token.NewSealer(s.cfg.SealKey, "journey-face-template")).
		WithPasskeys(s.cfg.BaseURL)
}

// Journeys is the journeys module, for node/ to wire the review queue,
// the human-verification verdict and the face engine into.
func (s *Server) Journeys() *journeys.Module { return s.mods.journeys }

// Verify is the human-verification module, whose token exchange node/
// wires into journeys as the human_verification verdict.
func (s *Server) Verify() *verify.Module { return s.mods.verify }

// asJourney adapts a journeys handler to the caller the transport
// authenticated.
func asJourney[In any](op func(c *Call, who trust.Caller, in *In)) func(*Call, Caller, *In) {
	return func(c *Call, who Caller, in *In) {
		op(c, trust.Caller{Workspace: who.Workspace, AppID: who.AppID, Channel: who.Channel}, in)
	}
}

func (in *JourneyStartInput) SiteSecret() string      { return in.Secret }
func (in *JourneySiteverifyInput) SiteSecret() string { return in.Secret }
func (in *JourneySessionInput) SiteSecret() string    { return in.Secret }
func (in *JourneyEscalateInput) SiteSecret() string   { return in.Secret }

func (in *MobileJourneyStartInput) Site() *JourneyStartInput { return &in.JourneyStartInput }
func (in *MobileJourneySiteverifyInput) Site() *JourneySiteverifyInput {
	return &in.JourneySiteverifyInput
}
func (in *MobileJourneySessionInput) Site() *JourneySessionInput   { return &in.JourneySessionInput }
func (in *MobileJourneyEscalateInput) Site() *JourneyEscalateInput { return &in.JourneyEscalateInput }

func (in *MobileJourneyStartInput) MobileIdentity() (string, string) { return in.Platform, in.AppID }
func (in *MobileJourneySiteverifyInput) MobileIdentity() (string, string) {
	return in.Platform, in.AppID
}
func (in *MobileJourneySessionInput) MobileIdentity() (string, string)  { return in.Platform, in.AppID }
func (in *MobileJourneyEscalateInput) MobileIdentity() (string, string) { return in.Platform, in.AppID }

// JourneyTokenHeader carries the person's capability.
const JourneyTokenHeader = "X-Service-Journey-Token"

func (s *Server) journeyRoutes() []Route {
	ws := "/workspaces/{workspace_id}/journeys"
	a := []Auth{AuthAdmin}
	aerr := withModuleCodes(append([]ErrorCode(nil), adminErrors...), []*errcode.Code{journeys.ErrInvalidJourney, journeys.ErrJourneyNotFound})
	aerr = append(aerr, ErrConflict)
	site := []Auth{AuthSiteSecret}
	mob := []Auth{AuthMobile}
	base := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrUnavailable}
	startErr := withModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrJourneyNotFound, journeys.ErrConsentOutdated,
		journeys.ErrNoSigningKey, journeys.ErrSessionsFull, journeys.ErrMethodUnavailable})
	svErr := withModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrBusy})
	stErr := withModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession})
	escErr := withModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession, journeys.ErrSessionClosed,
		journeys.ErrMethodUnavailable, journeys.ErrBusy})
	pbase := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrRateLimited, ErrUnavailable}
	perr := withModuleCodes(pbase, []*errcode.Code{journeys.ErrInvalidSession})
	attemptErr := withModuleCodes(pbase, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession, journeys.ErrSessionClosed,
		journeys.ErrWrongMethod, journeys.ErrNoChallenge, journeys.ErrMethodUnavailable, journeys.ErrNotEnrolled, journeys.ErrBusy,
		journeys.ErrNoSigningKey})
	capParam := []Param{{Name: JourneyTokenHeader, In: "header", Description: "The person's capability: the fragment of the start's endpoint (tjp1_…)."}}
	tag := "Journeys"
	mobSum := " for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity)."
	return []Route{
		{Method: "GET", Path: ws, Admin: true, ID: "listJourneys", Tag: tag, Auth: a, Summary: "A workspace's journey definitions.",
			Result: &JourneyList{}, Errors: aerr, Handle: s.admin(s.listJourneys)},
		{Method: "GET", Path: ws + "/{journey_key}", Admin: true, ID: "getJourney", Tag: tag, Auth: a, Summary: "Read a journey definition.",
			Result: &JourneyView{}, Errors: aerr, Handle: s.admin(s.getJourney)},
		{Method: "PUT", Path: ws + "/{journey_key}", Admin: true, ID: "putJourney", Tag: tag, Auth: a, Summary: "Define or replace a journey; policy_version is 1 on creation and +1 on every change. At most 64 per workspace.",
			Body: &JourneyInput{}, Result: &JourneyView{}, Errors: aerr, Handle: s.admin(s.putJourney)},
		{Method: "DELETE", Path: ws + "/{journey_key}", Admin: true, ID: "deleteJourney", Tag: tag, Auth: a, Summary: "Delete a journey definition (open sessions run out).",
			Status: 204, Errors: aerr, Handle: s.admin(s.deleteJourney)},
		{Method: "POST", Path: "/workspaces/{workspace_id}/journey-subjects/erase", Admin: true, ID: "eraseJourneySubject", Tag: tag, Auth: a,
			Summary: "Delete what journeys keep of a subject: the sealed face template and the passkeys.",
			Body:    &JourneySubjectErase{}, Result: &JourneySubjectErased{}, Errors: aerr, Handle: s.admin(s.eraseJourneySubject)},

		{Method: "POST", Path: "/journeys/start", ID: "journeyStart", Tag: tag, Auth: site, Summary: "Start a journey: a short-lived single-use session token for your server and the endpoint where the person completes the method (escalated by the subject's risk).",
			Body: &JourneyStartInput{}, Result: &JourneyStartResult{}, Errors: startErr, Handle: AsSiteCaller(asJourney((*Call).startJourney))},
		{Method: "POST", Path: "/journeys/siteverify", ID: "journeySiteverify", Tag: tag, Auth: site, Summary: "Exchange the session token and its proof once; HTTP 200 with error-codes for every processed session. Continue only when success is true and journey.status is completed.",
			Body: &JourneySiteverifyInput{}, Result: &JourneySiteverifyResult{}, Errors: svErr, Handle: AsSiteCaller(asJourney((*Call).siteverifyJourney))},
		{Method: "POST", Path: "/journeys/status", ID: "journeyStatus", Tag: tag, Auth: site, Summary: "Read a session without consuming it.",
			Body: &JourneySessionInput{}, Result: &JourneyStatusResult{}, Errors: stErr, Handle: AsSiteCaller(asJourney((*Call).statusJourney))},
		{Method: "POST", Path: "/journeys/escalate", ID: "journeyEscalate", Tag: tag, Auth: site, Summary: "Open a privacy-safe review case for a session (no personal data in it); the session becomes escalated and no proof completes it afterwards.",
			Body: &JourneyEscalateInput{}, Result: &JourneyEscalateResult{}, Errors: escErr, Handle: AsSiteCaller(asJourney((*Call).escalateJourney))},
		{Method: "POST", Path: "/mobile/journeys/start", ID: "mobileJourneyStart", Tag: tag, Auth: mob, Summary: "POST /journeys/start" + mobSum,
			Body: &MobileJourneyStartInput{}, Result: &JourneyStartResult{}, Errors: append(startErr, ErrInvalidAppIdentity), Handle: AsMobileCaller[JourneyStartInput, MobileJourneyStartInput](asJourney((*Call).startJourney))},
		{Method: "POST", Path: "/mobile/journeys/siteverify", ID: "mobileJourneySiteverify", Tag: tag, Auth: mob, Summary: "POST /journeys/siteverify" + mobSum,
			Body: &MobileJourneySiteverifyInput{}, Result: &JourneySiteverifyResult{}, Errors: append(svErr, ErrInvalidAppIdentity), Handle: AsMobileCaller[JourneySiteverifyInput, MobileJourneySiteverifyInput](asJourney((*Call).siteverifyJourney))},
		{Method: "POST", Path: "/mobile/journeys/status", ID: "mobileJourneyStatus", Tag: tag, Auth: mob, Summary: "POST /journeys/status" + mobSum,
			Body: &MobileJourneySessionInput{}, Result: &JourneyStatusResult{}, Errors: append(stErr, ErrInvalidAppIdentity), Handle: AsMobileCaller[JourneySessionInput, MobileJourneySessionInput](asJourney((*Call).statusJourney))},
		{Method: "POST", Path: "/mobile/journeys/escalate", ID: "mobileJourneyEscalate", Tag: tag, Auth: mob, Summary: "POST /journeys/escalate" + mobSum,
			Body: &MobileJourneyEscalateInput{}, Result: &JourneyEscalateResult{}, Errors: append(escErr, ErrInvalidAppIdentity), Handle: AsMobileCaller[JourneyEscalateInput, MobileJourneyEscalateInput](asJourney((*Call).escalateJourney))},

		{Method: "GET", Path: "/journeys/person", ID: "journeyPersonPage", Tag: tag, Summary: "The page where the person completes a journey's method (the capability is in the fragment; strict CSP, no inline script).",
			ContentType: "text/html", Handle: s.journeyPageAsset("person.html", "text/html; charset=utf-8")},
		{Method: "GET", Path: "/journeys/person.js", ID: "journeyPersonScript", Tag: tag, Summary: "The person page's script.",
			ContentType: "text/javascript", Handle: s.journeyPageAsset("person.js", "text/javascript; charset=utf-8")},
		{Method: "GET", Path: "/journeys/person.css", ID: "journeyPersonStyle", Tag: tag, Summary: "The person page's stylesheet (its colours follow the starting site's branding profile).",
			ContentType: "text/css", Handle: s.journeyPageAsset("person.css", "text/css; charset=utf-8")},
		{Method: "POST", Path: "/journeys/person/session", ID: "journeyPersonSession", Tag: tag, Summary: "The person's view of the session.",
			Params: capParam, Result: &JourneyPersonView{}, Errors: perr, Handle: s.journeyPerson},
		{Method: "POST", Path: "/journeys/person/human", ID: "journeyPersonHuman", Tag: tag, Summary: "Complete a human_verification session with a widget token of the starting site whose cdata is the session reference, solved from this caller's address; the token is consumed as /siteverify consumes it (a spent or expired one is refused without changing the session).",
			Params: capParam, Body: &JourneyHumanInput{}, Result: &JourneyAttemptResult{}, Errors: attemptErr, Handle: s.journeyPersonHuman},
		{Method: "POST", Path: "/journeys/person/face/begin", ID: "journeyPersonFaceBegin", Tag: tag, Summary: "Open a facial attempt: the active liveness challenge.",
			Params: capParam, Result: &JourneyChallenge{}, Errors: attemptErr, Handle: s.journeyPersonFaceBegin},
		{Method: "POST", Path: "/journeys/person/face/complete", ID: "journeyPersonFaceComplete", Tag: tag, Summary: "Complete the facial attempt with its frames: a proof, or the reasons it failed.",
			Params: capParam, Body: &JourneyFaceInput{}, Result: &JourneyAttemptResult{}, Errors: attemptErr, MaxBody: 8 << 20, Handle: s.journeyPersonFaceComplete},
		{Method: "POST", Path: "/journeys/person/passkey/begin", ID: "journeyPersonPasskeyBegin", Tag: tag, Summary: "Open a device_authorization attempt: the WebAuthn options (registration when the subject has no passkey, else an assertion; user verification required).",
			Params: capParam, Result: &JourneyPasskeyCeremony{}, Errors: attemptErr, Handle: s.journeyPersonPasskeyBegin},
		{Method: "POST", Path: "/journeys/person/passkey/finish", ID: "journeyPersonPasskeyFinish", Tag: tag, Summary: "Check the ceremony's PublicKeyCredential: a registration continues with an assertion (next); an assertion ends the attempt with a proof or its reasons.",
			Params: capParam, Body: &JourneyPasskeyInput{}, Result: &JourneyPasskeyResult{}, Errors: attemptErr, Handle: s.journeyPersonPasskeyFinish},
	}
}

func (c *Call) journeys() *journeys.Module { return c.s.mods.journeys }

func journeyView(j *catalog.Journey) JourneyView {
	e := j.Escalation
	return JourneyView{Key: j.Key, Name: j.Name, Method: j.Method, RequestedAssurance: j.RequestedAssurance,
		Consent: JourneyConsentView(j.Consent), PolicyVersion: j.PolicyVersion, Requirements: JourneyRequirementsView(j.Requirements),
		SessionLifetimeSeconds: j.SessionLifetimeSeconds, Escalation: JourneyEscalationView(e), CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
}

func (s *Server) listJourneys(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	out := JourneyList{Journeys: []JourneyView{}}
	for _, j := range c.cat.JourneysOf(w.ID) {
		out.Journeys = append(out.Journeys, journeyView(j))
	}
	sort.Slice(out.Journeys, func(i, k int) bool { return out.Journeys[i].Key < out.Journeys[k].Key })
	c.ok(&out)
}

func (c *Call) journey() (*catalog.Workspace, *catalog.Journey) {
	w := c.workspace()
	if w == nil {
		return nil, nil
	}
	j := c.cat.Journey(w.ID, c.Param("journey_key"))
	if j == nil {
		c.failErr(journeys.ErrJourneyNotFound)
		return nil, nil
	}
	return w, j
}

func (s *Server) getJourney(c *Call) {
	if _, j := c.journey(); j != nil {
		c.ok(journeyView(j))
	}
}

func (s *Server) putJourney(c *Call) {
	w := c.workspace()
	var in JourneyInput
	if w == nil || !c.decode(&in) {
		return
	}
	j, err := journeys.NewJourney(w.ID, journeys.Spec{Key: c.Param("journey_key"), Name: in.Name, Method: in.Method,
		RequestedAssurance: in.RequestedAssurance, Consent: catalog.JourneyConsent(in.Consent), Requirements: catalog.JourneyRequirements(in.Requirements),
		SessionLifetimeSeconds: in.SessionLifetimeSeconds, Escalation: catalog.JourneyEscalation(in.Escalation)}, s.clock().UTC())
	if err != nil {
		c.failErr(err)
		return
	}
	if v, ok := c.apply(&catalog.PutJourney{Journey: j}); ok {
		c.ok(journeyView(v.(*catalog.Journey)))
	}
}

func (s *Server) deleteJourney(c *Call) {
	w, j := c.journey()
	if j == nil {
		return
	}
	if _, ok := c.apply(&catalog.DeleteJourney{WorkspaceID: w.ID, Key: j.Key}); ok {
		c.noContent()
	}
}

func (s *Server) eraseJourneySubject(c *Call) {
	w := c.workspace()
	var in JourneySubjectErase
	if w == nil || !c.decode(&in) {
		return
	}
	if in.SubjectID == "" {
		c.fail(ErrInvalidField, "subject_id: required")
		return
	}
	n, err := c.journeys().DeleteSubject(c.Ctx, w, in.SubjectID)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&JourneySubjectErased{Deleted: n})
}

func (c *Call) startJourney(who trust.Caller, in *JourneyStartInput) {
	r, err := c.journeys().Start(c.Ctx, who, journeys.StartRequest{JourneyKey: in.JourneyKey, SubjectID: in.SubjectID, Action: in.Action,
		OperationReference: in.OperationReference, RiskLevel: in.RiskLevel, RiskScore: in.RiskScore, ConsentVersion: in.ConsentVersion,
		RequestReference: in.RequestReference})
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&JourneyStartResult{Success: true, Journey: JourneyRef{Key: r.Journey.Key, Name: r.Journey.Name}, SessionToken: r.SessionToken,
		ExpiresIn: r.ExpiresIn, Method: r.Method, RequestedAssurance: r.RequestedAssurance, PolicyVersion: r.PolicyVersion,
		Consent: JourneyConsentView(r.Consent), Endpoint: c.s.cfg.BaseURL + PublicBase + "/journeys/person#" + r.PersonToken,
		Requirements: JourneyRequirementsView(r.Requirements), Status: r.Status, RiskLevel: r.RiskLevel})
}

func (c *Call) siteverifyJourney(who trust.Caller, in *JourneySiteverifyInput) {
	r, err := c.journeys().Siteverify(c.Ctx, who, journeys.SiteverifyRequest{SessionToken: in.SessionToken, Response: in.Response,
		SubjectID: in.SubjectID, Action: in.Action, OperationReference: in.OperationReference, ConsentVersion: in.ConsentVersion,
		ConsentAccepted: in.ConsentAccepted})
	if err != nil {
		c.failErr(err)
		return
	}
	out := JourneySiteverifyResult{Success: r.Success, ErrorCodes: r.Codes, NextStep: r.NextStep}
	if out.ErrorCodes == nil {
		out.ErrorCodes = []string{}
	}
	if r.Known {
		out.Journey = &JourneyState{Key: r.JourneyKey, Status: r.Status}
		a := r.Achieved
		if r.Success || a.Assurance > 0 || a.Identity || a.Liveness {
			out.Trust = &JourneyTrust{Method: r.Method, AssuranceLevel: a.Assurance.String(), IdentityBound: a.Identity,
				LivenessVerified: a.Liveness, OperationBound: r.OperationBound, AuthorizationCapable: a.Authorization}
		}
	}
	c.ok(&out)
}

func (c *Call) statusJourney(who trust.Caller, in *JourneySessionInput) {
	r, err := c.journeys().Status(c.Ctx, who, in.SessionToken)
	if err != nil {
		c.failErr(err)
		return
	}
	s := r.Session
	c.ok(&JourneyStatusResult{Success: true, Journey: JourneyRef{Key: s.JourneyKey}, Status: r.Status, Verified: r.Verified, Method: s.Method,
		PolicyVersion: s.PolicyVersion, ExpiresIn: r.ExpiresIn, Attempts: s.Attempts, FailedAttempts: s.FailedAttempts,
		CaseReference: s.CaseReference, NextStep: r.NextStep})
}

func (c *Call) escalateJourney(who trust.Caller, in *JourneyEscalateInput) {
	r, err := c.journeys().Escalate(c.Ctx, who, journeys.EscalateRequest{SessionToken: in.SessionToken, ReasonCode: in.ReasonCode,
		Priority: in.Priority, OperationLabel: in.OperationLabel})
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&JourneyEscalateResult{Success: true, CaseReference: r.CaseReference, Status: r.Status})
}

// journeyCSP: the page loads only this service's scripts (its own and the
// widget's), talks only to this service, plays the camera from a
// MediaStream for the facial methods, and is never framed.
const journeyCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; media-src mediastream: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) journeyPageAsset(name, contentType string) func(*Call) {
	body, err := journeyPage.ReadFile("journeys_page/" + name)
	if err != nil {
		panic(err) // embedded at build time: missing is a bug
	}
	return func(c *Call) {
		h := &c.Ctx.Response.Header
		h.Set("Content-Security-Policy", journeyCSP)
		h.Set("Permissions-Policy", "camera=(self), microphone=(), geolocation=()")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		c.Ctx.SetStatusCode(200)
		c.Ctx.SetContentType(contentType)
		c.Ctx.SetBody(body)
	}
}

func (c *Call) personToken() string {
	return string(c.Ctx.Request.Header.Peek(JourneyTokenHeader))
}

func (c *Call) attempt(a journeys.Attempt, err error) {
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&JourneyAttemptResult{Success: a.Passed, Response: a.Proof.Response, Status: a.Status, Reasons: a.Reasons})
}

func (s *Server) journeyPerson(c *Call) {
	v, err := c.journeys().Person(c.Ctx, c.personToken())
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(&JourneyPersonView{Success: true, JourneyName: v.JourneyName, Method: v.Method, Consent: JourneyConsentView(v.Consent),
		Status: v.Status, ExpiresIn: v.ExpiresIn, Attempts: v.Attempts, Reference: v.Reference,
		ReturnOrigins: append([]string{}, v.ReturnOrigins...), Branding: v.Branding, SiteKey: v.SiteKey})
}

func (s *Server) journeyPersonHuman(c *Call) {
	var in JourneyHumanInput
	if !c.decode(&in) {
		return
	}
	c.attempt(c.journeys().CompleteHuman(c.Ctx, c.personToken(), in.Response, c.clientAddr()))
}

func (s *Server) journeyPersonFaceBegin(c *Call) {
	ch, err := c.journeys().BeginFace(c.Ctx, c.personToken())
	if err != nil {
		c.failErr(err)
		return
	}
	out := JourneyChallenge{Success: true, Nonce: ch.Nonce, Actions: []string{}, Deadline: ch.Deadline}
	for _, a := range ch.Actions {
		out.Actions = append(out.Actions, string(a))
	}
	c.ok(&out)
}

func (s *Server) journeyPersonFaceComplete(c *Call) {
	var in JourneyFaceInput
	if !c.decode(&in) {
		return
	}
	frames := make([]liveness.Frame, 0, len(in.Frames))
	for i, f := range in.Frames {
		img, err := base64.StdEncoding.DecodeString(f.Image)
		if err != nil || len(img) == 0 || len(img) > 1<<20 {
			c.fail(ErrInvalidField, fmt.Sprintf("frames[%d].image: standard base64 of an image, at most 1 MiB decoded", i))
			return
		}
		frames = append(frames, liveness.Frame{Image: img, OffsetMS: f.OffsetMS})
	}
	c.attempt(c.journeys().CompleteFace(c.Ctx, c.personToken(), frames))
}

func passkeyCeremonyView(c journeys.PasskeyCeremony) *JourneyPasskeyCeremony {
	kind := "assertion"
	if c.Registration {
		kind = "registration"
	}
	return &JourneyPasskeyCeremony{Success: true, Ceremony: kind, Options: c.Options}
}

func (s *Server) journeyPersonPasskeyBegin(c *Call) {
	r, err := c.journeys().BeginPasskey(c.Ctx, c.personToken())
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(passkeyCeremonyView(r))
}

func (s *Server) journeyPersonPasskeyFinish(c *Call) {
	var in JourneyPasskeyInput
	if !c.decode(&in) {
		return
	}
	raw, err := json.Marshal(in.Credential)
	if err != nil || len(in.Credential) == 0 {
		c.fail(ErrInvalidField, "credential: the PublicKeyCredential as JSON")
		return
	}
	r, err := c.journeys().FinishPasskey(c.Ctx, c.personToken(), raw)
	if err != nil {
		c.failErr(err)
		return
	}
	out := JourneyPasskeyResult{Success: r.Passed, Response: r.Proof.Response, Status: r.Status, Reasons: r.Reasons}
	if r.Next != nil {
		out.Next = passkeyCeremonyView(*r.Next)
	}
	c.ok(&out)
}
