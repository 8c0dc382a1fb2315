package api

import (
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/journeys"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/risk/trust"
)

// Journeys transport (spec 4.8, 2.7): decode, authenticate, call
// journeys/, encode. States, bindings and proofs live in journeys/; see
// journeys/DESIGN.md. The person's page and its calls authenticate with
// the person's capability (header X-Service-Journey-Token), never a
// secret.

//go:embed page
var journeyPage embed.FS

// asJourney adapts a journeys handler to the caller the transport
// authenticated.
func asJourney[In any](op func(x journeysAPI, c *kernel.Call, who trust.Caller, in *In), x journeysAPI) func(*kernel.Call, kernel.Caller, *In) {
	return func(c *kernel.Call, who kernel.Caller, in *In) {
		op(x, c, trust.Caller{Workspace: who.Workspace, AppID: who.AppID, Channel: who.Channel}, in)
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

// JourneyTokenHeader carries the person's capability.
const JourneyTokenHeader = "X-Service-Journey-Token"

// Journeys stay off the generic admin path (kernel.Resource): a journey is
// created and replaced by PUT at a key the caller chooses, with a
// policy_version that counts its changes, where the path creates by POST
// with a server-made id; moving would change the contract.
func (x journeysAPI) routes() []kernel.Route {
	ws := "/workspaces/{workspace_id}/journeys"
	a := []kernel.Auth{kernel.AuthAdmin}
	aerr := kernel.WithModuleCodes(kernel.AdminErrors(), []*errcode.Code{journeys.ErrInvalidJourney, journeys.ErrJourneyNotFound})
	aerr = append(aerr, kernel.ErrConflict)
	site := []kernel.Auth{kernel.AuthSiteSecret}
	mob := []kernel.Auth{kernel.AuthMobile}
	base := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge, kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrRateLimited, kernel.ErrUnavailable}
	startErr := kernel.WithModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrJourneyNotFound, journeys.ErrConsentOutdated,
		journeys.ErrNoSigningKey, journeys.ErrSessionsFull, journeys.ErrMethodUnavailable})
	svErr := kernel.WithModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrBusy})
	stErr := kernel.WithModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession})
	escErr := kernel.WithModuleCodes(base, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession, journeys.ErrSessionClosed,
		journeys.ErrMethodUnavailable, journeys.ErrBusy})
	pbase := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge, kernel.ErrRateLimited, kernel.ErrUnavailable}
	perr := kernel.WithModuleCodes(pbase, []*errcode.Code{journeys.ErrInvalidSession})
	attemptErr := kernel.WithModuleCodes(pbase, []*errcode.Code{journeys.ErrInvalidRequest, journeys.ErrInvalidSession, journeys.ErrSessionClosed,
		journeys.ErrWrongMethod, journeys.ErrNoChallenge, journeys.ErrMethodUnavailable, journeys.ErrNotEnrolled, journeys.ErrBusy,
		journeys.ErrNoSigningKey})
	capParam := []kernel.Param{{Name: JourneyTokenHeader, In: "header", Description: "The person's capability: the fragment of the start's endpoint (tjp1_…)."}}
	tag := "Journeys"
	mobSum := " for a registered mobile app: Authorization: Bearer <mobile secret> plus platform and app_id (mismatch: 403 invalid-app-identity)."
	return []kernel.Route{
		{Method: "GET", Path: ws, Admin: true, ID: "listJourneys", Tag: tag, Auth: a, Summary: "A workspace's journey definitions.",
			Result: &JourneyList{}, Errors: aerr, Handle: kernel.AdminOnly(x.listJourneys)},
		{Method: "GET", Path: ws + "/{journey_key}", Admin: true, ID: "getJourney", Tag: tag, Auth: a, Summary: "Read a journey definition.",
			Result: &JourneyView{}, Errors: aerr, Handle: kernel.AdminOnly(x.getJourney)},
		{Method: "PUT", Path: ws + "/{journey_key}", Admin: true, ID: "putJourney", Tag: tag, Auth: a, Summary: "Define or replace a journey; policy_version is 1 on creation and +1 on every change. At most 64 per workspace.",
			Body: &JourneyInput{}, Result: &JourneyView{}, Errors: aerr, Handle: kernel.AdminOnly(x.putJourney)},
		{Method: "DELETE", Path: ws + "/{journey_key}", Admin: true, ID: "deleteJourney", Tag: tag, Auth: a, Summary: "Delete a journey definition (open sessions run out).",
			Status: 204, Errors: aerr, Handle: kernel.AdminOnly(x.deleteJourney)},
		{Method: "POST", Path: "/workspaces/{workspace_id}/journey-subjects/erase", Admin: true, ID: "eraseJourneySubject", Tag: tag, Auth: a,
			Summary: "Delete what journeys keep of a subject: the sealed face template and the passkeys.",
			Body:    &JourneySubjectErase{}, Result: &JourneySubjectErased{}, Errors: aerr, Handle: kernel.AdminOnly(x.eraseJourneySubject)},

		{Method: "POST", Path: "/journeys/start", ID: "journeyStart", Tag: tag, Auth: site, Summary: "Start a journey: a short-lived single-use session token for your server and the endpoint where the person completes the method (escalated by the subject's risk).",
			Body: &JourneyStartInput{}, Result: &JourneyStartResult{}, Errors: startErr, Handle: kernel.AsSiteCaller(asJourney(journeysAPI.startJourney, x))},
		{Method: "POST", Path: "/journeys/siteverify", ID: "journeySiteverify", Tag: tag, Auth: site, Summary: "Exchange the session token and its proof once; HTTP 200 with error-codes for every processed session. Continue only when success is true and journey.status is completed.",
			Body: &JourneySiteverifyInput{}, Result: &JourneySiteverifyResult{}, Errors: svErr, Handle: kernel.AsSiteCaller(asJourney(journeysAPI.siteverifyJourney, x))},
		{Method: "POST", Path: "/journeys/status", ID: "journeyStatus", Tag: tag, Auth: site, Summary: "Read a session without consuming it.",
			Body: &JourneySessionInput{}, Result: &JourneyStatusResult{}, Errors: stErr, Handle: kernel.AsSiteCaller(asJourney(journeysAPI.statusJourney, x))},
		{Method: "POST", Path: "/journeys/escalate", ID: "journeyEscalate", Tag: tag, Auth: site, Summary: "Open a privacy-safe review case for a session (no personal data in it); the session becomes escalated and no proof completes it afterwards.",
			Body: &JourneyEscalateInput{}, Result: &JourneyEscalateResult{}, Errors: escErr, Handle: kernel.AsSiteCaller(asJourney(journeysAPI.escalateJourney, x))},
		{Method: "POST", Path: "/mobile/journeys/start", ID: "mobileJourneyStart", Tag: tag, Auth: mob, Summary: "POST /journeys/start" + mobSum,
			Body: &MobileJourneyStartInput{}, Result: &JourneyStartResult{}, Errors: append(startErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[JourneyStartInput, MobileJourneyStartInput](asJourney(journeysAPI.startJourney, x))},
		{Method: "POST", Path: "/mobile/journeys/siteverify", ID: "mobileJourneySiteverify", Tag: tag, Auth: mob, Summary: "POST /journeys/siteverify" + mobSum,
			Body: &MobileJourneySiteverifyInput{}, Result: &JourneySiteverifyResult{}, Errors: append(svErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[JourneySiteverifyInput, MobileJourneySiteverifyInput](asJourney(journeysAPI.siteverifyJourney, x))},
		{Method: "POST", Path: "/mobile/journeys/status", ID: "mobileJourneyStatus", Tag: tag, Auth: mob, Summary: "POST /journeys/status" + mobSum,
			Body: &MobileJourneySessionInput{}, Result: &JourneyStatusResult{}, Errors: append(stErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[JourneySessionInput, MobileJourneySessionInput](asJourney(journeysAPI.statusJourney, x))},
		{Method: "POST", Path: "/mobile/journeys/escalate", ID: "mobileJourneyEscalate", Tag: tag, Auth: mob, Summary: "POST /journeys/escalate" + mobSum,
			Body: &MobileJourneyEscalateInput{}, Result: &JourneyEscalateResult{}, Errors: append(escErr, kernel.ErrInvalidAppIdentity), Handle: kernel.AsMobileCaller[JourneyEscalateInput, MobileJourneyEscalateInput](asJourney(journeysAPI.escalateJourney, x))},

		{Method: "GET", Path: "/journeys/person", ID: "journeyPersonPage", Tag: tag, Summary: "The page where the person completes a journey's method (the capability is in the fragment; strict CSP, no inline script).",
			ContentType: "text/html", Handle: x.journeyPageAsset("person.html", "text/html; charset=utf-8")},
		{Method: "GET", Path: "/journeys/person.js", ID: "journeyPersonScript", Tag: tag, Summary: "The person page's script.",
			ContentType: "text/javascript", Handle: x.journeyPageAsset("person.js", "text/javascript; charset=utf-8")},
		{Method: "GET", Path: "/journeys/person.css", ID: "journeyPersonStyle", Tag: tag, Summary: "The person page's stylesheet (its colours follow the starting site's branding profile).",
			ContentType: "text/css", Handle: x.journeyPageAsset("person.css", "text/css; charset=utf-8")},
		{Method: "POST", Path: "/journeys/person/session", ID: "journeyPersonSession", Tag: tag, Summary: "The person's view of the session.",
			Params: capParam, Result: &JourneyPersonView{}, Errors: perr, Handle: x.journeyPerson},
		{Method: "POST", Path: "/journeys/person/human", ID: "journeyPersonHuman", Tag: tag, Summary: "Complete a human_verification session with a widget token of the starting site whose cdata is the session reference, solved from this caller's address; the token is consumed as /siteverify consumes it (a spent or expired one is refused without changing the session).",
			Params: capParam, Body: &JourneyHumanInput{}, Result: &JourneyAttemptResult{}, Errors: attemptErr, Handle: x.journeyPersonHuman},
		{Method: "POST", Path: "/journeys/person/face/begin", ID: "journeyPersonFaceBegin", Tag: tag, Summary: "Open a facial attempt: the active liveness challenge.",
			Params: capParam, Result: &JourneyChallenge{}, Errors: attemptErr, Handle: x.journeyPersonFaceBegin},
		{Method: "POST", Path: "/journeys/person/face/complete", ID: "journeyPersonFaceComplete", Tag: tag, Summary: "Complete the facial attempt with its frames: a proof, or the reasons it failed.",
			Params: capParam, Body: &JourneyFaceInput{}, Result: &JourneyAttemptResult{}, Errors: attemptErr, MaxBody: 8 << 20, Handle: x.journeyPersonFaceComplete},
		{Method: "POST", Path: "/journeys/person/passkey/begin", ID: "journeyPersonPasskeyBegin", Tag: tag, Summary: "Open a device_authorization attempt: the WebAuthn options (registration when the subject has no passkey, else an assertion; user verification required).",
			Params: capParam, Result: &JourneyPasskeyCeremony{}, Errors: attemptErr, Handle: x.journeyPersonPasskeyBegin},
		{Method: "POST", Path: "/journeys/person/passkey/finish", ID: "journeyPersonPasskeyFinish", Tag: tag, Summary: "Check the ceremony's PublicKeyCredential: a registration continues with an assertion (next); an assertion ends the attempt with a proof or its reasons.",
			Params: capParam, Body: &JourneyPasskeyInput{}, Result: &JourneyPasskeyResult{}, Errors: attemptErr, Handle: x.journeyPersonPasskeyFinish},
	}
}

func journeyView(j *catalog.Journey) JourneyView {
	e := j.Escalation
	return JourneyView{Key: j.Key, Name: j.Name, Method: j.Method, RequestedAssurance: j.RequestedAssurance,
		Consent: JourneyConsentView(j.Consent), PolicyVersion: j.PolicyVersion, Requirements: JourneyRequirementsView(j.Requirements),
		SessionLifetimeSeconds: j.SessionLifetimeSeconds, Escalation: JourneyEscalationView(e), CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
}

func (x journeysAPI) listJourneys(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	out := JourneyList{Journeys: []JourneyView{}}
	for _, j := range c.Catalog().JourneysOf(w.ID) {
		out.Journeys = append(out.Journeys, journeyView(j))
	}
	sort.Slice(out.Journeys, func(i, k int) bool { return out.Journeys[i].Key < out.Journeys[k].Key })
	c.OK(&out)
}

func journey(c *kernel.Call) (*catalog.Workspace, *catalog.Journey) {
	w := c.Workspace()
	if w == nil {
		return nil, nil
	}
	j := c.Catalog().Journey(w.ID, c.Param("journey_key"))
	if j == nil {
		c.FailErr(journeys.ErrJourneyNotFound)
		return nil, nil
	}
	return w, j
}

func (x journeysAPI) getJourney(c *kernel.Call) {
	if _, j := journey(c); j != nil {
		c.OK(journeyView(j))
	}
}

func (x journeysAPI) putJourney(c *kernel.Call) {
	w := c.Workspace()
	var in JourneyInput
	if w == nil || !c.Decode(&in) {
		return
	}
	j, err := journeys.NewJourney(w.ID, journeys.Spec{Key: c.Param("journey_key"), Name: in.Name, Method: in.Method,
		RequestedAssurance: in.RequestedAssurance, Consent: catalog.JourneyConsent(in.Consent), Requirements: catalog.JourneyRequirements(in.Requirements),
		SessionLifetimeSeconds: in.SessionLifetimeSeconds, Escalation: catalog.JourneyEscalation(in.Escalation)}, c.Now().UTC())
	if err != nil {
		c.FailErr(err)
		return
	}
	if v, ok := c.Apply(&catalog.PutJourney{Journey: j}); ok {
		c.OK(journeyView(v.(*catalog.Journey)))
	}
}

func (x journeysAPI) deleteJourney(c *kernel.Call) {
	w, j := journey(c)
	if j == nil {
		return
	}
	if _, ok := c.Apply(&catalog.DeleteJourney{WorkspaceID: w.ID, Key: j.Key}); ok {
		c.NoContent()
	}
}

func (x journeysAPI) eraseJourneySubject(c *kernel.Call) {
	w := c.Workspace()
	var in JourneySubjectErase
	if w == nil || !c.Decode(&in) {
		return
	}
	if in.SubjectID == "" {
		c.Fail(kernel.ErrInvalidField, "subject_id: required")
		return
	}
	n, err := x.m.DeleteSubject(c.Ctx, w, in.SubjectID)
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&JourneySubjectErased{Deleted: n})
}

func (x journeysAPI) startJourney(c *kernel.Call, who trust.Caller, in *JourneyStartInput) {
	r, err := x.m.Start(c.Ctx, who, journeys.StartRequest{JourneyKey: in.JourneyKey, SubjectID: in.SubjectID, Action: in.Action,
		OperationReference: in.OperationReference, RiskLevel: in.RiskLevel, RiskScore: in.RiskScore, ConsentVersion: in.ConsentVersion,
		RequestReference: in.RequestReference})
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&JourneyStartResult{Success: true, Journey: JourneyRef{Key: r.Journey.Key, Name: r.Journey.Name}, SessionToken: r.SessionToken,
		ExpiresIn: r.ExpiresIn, Method: r.Method, RequestedAssurance: r.RequestedAssurance, PolicyVersion: r.PolicyVersion,
		Consent: JourneyConsentView(r.Consent), Endpoint: x.baseURL + kernel.PublicBase + "/journeys/person#" + r.PersonToken,
		Requirements: JourneyRequirementsView(r.Requirements), Status: r.Status, RiskLevel: r.RiskLevel})
}

func (x journeysAPI) siteverifyJourney(c *kernel.Call, who trust.Caller, in *JourneySiteverifyInput) {
	r, err := x.m.Siteverify(c.Ctx, who, journeys.SiteverifyRequest{SessionToken: in.SessionToken, Response: in.Response,
		SubjectID: in.SubjectID, Action: in.Action, OperationReference: in.OperationReference, ConsentVersion: in.ConsentVersion,
		ConsentAccepted: in.ConsentAccepted})
	if err != nil {
		c.FailErr(err)
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
	c.OK(&out)
}

func (x journeysAPI) statusJourney(c *kernel.Call, who trust.Caller, in *JourneySessionInput) {
	r, err := x.m.Status(c.Ctx, who, in.SessionToken)
	if err != nil {
		c.FailErr(err)
		return
	}
	s := r.Session
	c.OK(&JourneyStatusResult{Success: true, Journey: JourneyRef{Key: s.JourneyKey}, Status: r.Status, Verified: r.Verified, Method: s.Method,
		PolicyVersion: s.PolicyVersion, ExpiresIn: r.ExpiresIn, Attempts: s.Attempts, FailedAttempts: s.FailedAttempts,
		CaseReference: s.CaseReference, NextStep: r.NextStep})
}

func (x journeysAPI) escalateJourney(c *kernel.Call, who trust.Caller, in *JourneyEscalateInput) {
	r, err := x.m.Escalate(c.Ctx, who, journeys.EscalateRequest{SessionToken: in.SessionToken, ReasonCode: in.ReasonCode,
		Priority: in.Priority, OperationLabel: in.OperationLabel})
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&JourneyEscalateResult{Success: true, CaseReference: r.CaseReference, Status: r.Status})
}

// journeyCSP: the page loads only this service's scripts (its own and the
// widget's), talks only to this service, plays the camera from a
// MediaStream for the facial methods, and is never framed.
const journeyCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; media-src mediastream: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (x journeysAPI) journeyPageAsset(name, contentType string) func(*kernel.Call) {
	body, err := journeyPage.ReadFile("page/" + name)
	if err != nil {
		panic(err) // embedded at build time: missing is a bug
	}
	return func(c *kernel.Call) {
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

func personToken(c *kernel.Call) string {
	return string(c.Ctx.Request.Header.Peek(JourneyTokenHeader))
}

func attempt(c *kernel.Call, a journeys.Attempt, err error) {
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&JourneyAttemptResult{Success: a.Passed, Response: a.Proof.Response, Status: a.Status, Reasons: a.Reasons})
}

func (x journeysAPI) journeyPerson(c *kernel.Call) {
	v, err := x.m.Person(c.Ctx, personToken(c))
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(&JourneyPersonView{Success: true, JourneyName: v.JourneyName, Method: v.Method, Consent: JourneyConsentView(v.Consent),
		Status: v.Status, ExpiresIn: v.ExpiresIn, Attempts: v.Attempts, Reference: v.Reference,
		ReturnOrigins: append([]string{}, v.ReturnOrigins...), Branding: v.Branding, SiteKey: v.SiteKey})
}

func (x journeysAPI) journeyPersonHuman(c *kernel.Call) {
	var in JourneyHumanInput
	if !c.Decode(&in) {
		return
	}
	a, err := x.m.CompleteHuman(c.Ctx, personToken(c), in.Response, c.ClientAddr())
	attempt(c, a, err)
}

func (x journeysAPI) journeyPersonFaceBegin(c *kernel.Call) {
	ch, err := x.m.BeginFace(c.Ctx, personToken(c))
	if err != nil {
		c.FailErr(err)
		return
	}
	out := JourneyChallenge{Success: true, Nonce: ch.Nonce, Actions: []string{}, Deadline: ch.Deadline}
	for _, a := range ch.Actions {
		out.Actions = append(out.Actions, string(a))
	}
	c.OK(&out)
}

func (x journeysAPI) journeyPersonFaceComplete(c *kernel.Call) {
	var in JourneyFaceInput
	if !c.Decode(&in) {
		return
	}
	frames := make([]liveness.Frame, 0, len(in.Frames))
	for i, f := range in.Frames {
		img, err := base64.StdEncoding.DecodeString(f.Image)
		if err != nil || len(img) == 0 || len(img) > 1<<20 {
			c.Fail(kernel.ErrInvalidField, fmt.Sprintf("frames[%d].image: standard base64 of an image, at most 1 MiB decoded", i))
			return
		}
		frames = append(frames, liveness.Frame{Image: img, OffsetMS: f.OffsetMS})
	}
	a, err := x.m.CompleteFace(c.Ctx, personToken(c), frames)
	attempt(c, a, err)
}

func passkeyCeremonyView(c journeys.PasskeyCeremony) *JourneyPasskeyCeremony {
	kind := "assertion"
	if c.Registration {
		kind = "registration"
	}
	return &JourneyPasskeyCeremony{Success: true, Ceremony: kind, Options: c.Options}
}

func (x journeysAPI) journeyPersonPasskeyBegin(c *kernel.Call) {
	r, err := x.m.BeginPasskey(c.Ctx, personToken(c))
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(passkeyCeremonyView(r))
}

func (x journeysAPI) journeyPersonPasskeyFinish(c *kernel.Call) {
	var in JourneyPasskeyInput
	if !c.Decode(&in) {
		return
	}
	raw, err := json.Marshal(in.Credential)
	if err != nil || len(in.Credential) == 0 {
		c.Fail(kernel.ErrInvalidField, "credential: the PublicKeyCredential as JSON")
		return
	}
	r, err := x.m.FinishPasskey(c.Ctx, personToken(c), raw)
	if err != nil {
		c.FailErr(err)
		return
	}
	out := JourneyPasskeyResult{Success: r.Passed, Response: r.Proof.Response, Status: r.Status, Reasons: r.Reasons}
	if r.Next != nil {
		out.Next = passkeyCeremonyView(*r.Next)
	}
	c.OK(&out)
}
