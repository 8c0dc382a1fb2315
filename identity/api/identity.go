package api

import (
	"context"
	"errors"
	kernel "github.com/trustd/trustd/platform/http"
	"time"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/platform/errcode"
)

// Identity verification sessions (spec 1, 3.2, 4.7) and the review queue:
// transport only. The state machine, the checks and the queue live in
// identity/session; see its DESIGN.md.

// SessionTokenHeader carries the session capability.
const SessionTokenHeader = "X-Service-Identity-Session-Token"

// IdentityFaceMaxBody bounds POST …/face: the selfie and the document
// front (documents.MaxImageBytes each) and the liveness frames, base64.
const IdentityFaceMaxBody = (2*documents.MaxImageBytes+16*session.MaxFrameBytes)*4/3 + 64<<10

// IdentitySessionInput is the body of POST /identity/verification/session.
type IdentitySessionInput struct {
	SubjectID        string `json:"subject_id" required:"true" doc:"Your reference for the person (1 to 256 bytes); stored only as a keyed hash, never sent in events."`
	Action           string `json:"action" required:"true" doc:"What the verification is for, 1 to 64 of A-Z a-z 0-9 _ - . /."`
	AssuranceLevel   string `json:"assurance_level" required:"true" enum:"document_only|standard|high" doc:"document_only: the document; standard: plus liveness and facial comparison performed by the service; high: standard plus mandatory human review."`
	Country          string `json:"country" required:"true" doc:"ISO 3166-1 alpha-3 issuer claimed."`
	DocumentType     string `json:"document_type" required:"true" enum:"passport|id_card|residence_permit|travel_document_td2|driving_licence"`
	ConsentAccepted  bool   `json:"consent_accepted" required:"true" doc:"Must be true."`
	ConsentReference string `json:"consent_reference" required:"true" doc:"Your reference to the consent record (1 to 256 bytes)."`
}

// IdentityDocumentInput is the body of POST …/{session_id}/document.
type IdentityDocumentInput struct {
	FrontImage   string `json:"front_image" required:"true" doc:"Base64 JPEG, PNG or WebP (limits of POST /documents/verify). Screened in memory, never stored; a keyed hash binds the face step to it."`
	BackImage    string `json:"back_image,omitempty" doc:"Base64 image of the back, where the document type has one."`
	Country      string `json:"country,omitempty" doc:"Optional; must equal the session's."`
	DocumentType string `json:"document_type,omitempty" doc:"Optional; must equal the session's."`
}

// IdentityFrameInput is one liveness frame.
type IdentityFrameInput struct {
	Image    string `json:"image" required:"true" doc:"Base64 JPEG or PNG, at most 512 KiB decoded."`
	OffsetMS int    `json:"offset_ms" required:"true" doc:"Capture time after the first frame, 0 to 120000, not decreasing."`
}

// IdentityFaceInput is the body of POST …/{session_id}/face. There is no
// field for a match, liveness or score result: those are measured here,
// and a body carrying one is refused with client-verdict-refused.
type IdentityFaceInput struct {
	Nonce              string               `json:"nonce" required:"true" doc:"The nonce of the challenge from POST …/liveness; one burst of frames per challenge."`
	Selfie             string               `json:"selfie" required:"true" doc:"Base64 still of the face, facing the camera."`
	Frames             []IdentityFrameInput `json:"frames" required:"true" doc:"The frames captured while performing the challenge's actions in order (1 to 12)."`
	DocumentFrontImage string               `json:"document_front_image" required:"true" doc:"The same front image the document step screened (bytes compared by keyed hash); its portrait is compared with the selfie."`
}

// ReviewResolveInput is a reviewer's decision.
type ReviewResolveInput struct {
	Decision string `json:"decision" required:"true" enum:"verified|rejected"`
	Note     string `json:"note,omitempty" doc:"Why, at most 1024 bytes; erased if the session is redacted."`
	By       string `json:"by" required:"true" doc:"Who decided (1 to 128 bytes)."`
}

func (x identityAPI) identityRoutes() []kernel.Route {
	base := []kernel.ErrorCode{kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrRateLimited, kernel.ErrUnavailable, kernel.ErrConflict,
		kernel.ModuleCode(session.ErrScope), kernel.ModuleCode(session.ErrNotFound), kernel.ModuleCode(session.ErrCapability)}
	body := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge, kernel.ModuleCode(session.ErrClientVerdict)}
	step := append(append([]kernel.ErrorCode(nil), base...), kernel.ModuleCode(session.ErrState), kernel.ModuleCode(session.ErrBusy), kernel.ModuleCode(session.ErrExpired),
		kernel.ModuleCode(session.ErrQueueFull))
	cr := append(append(append([]kernel.ErrorCode(nil), base...), body...), kernel.ModuleCode(session.ErrConsent), kernel.ModuleCode(session.ErrSessionLimit),
		kernel.ModuleCode(documents.ErrCountry), kernel.ModuleCode(documents.ErrDocumentType))
	doc := kernel.WithModuleCodes(append(append([]kernel.ErrorCode(nil), step...), body...), documents.Errors)
	faceErrs := kernel.WithModuleCodes(append(append([]kernel.ErrorCode(nil), step...), body...), []*errcode.Code{session.ErrIncomplete, session.ErrNoChallenge,
		session.ErrChallengeStale, session.ErrNonce, session.ErrDocumentImage, face.ErrUnavailable,
		documents.ErrImageTooLarge, documents.ErrImageEncoding})
	live := kernel.WithModuleCodes(step, []*errcode.Code{session.ErrIncomplete, face.ErrUnavailable})
	complete := kernel.WithModuleCodes(step, []*errcode.Code{session.ErrIncomplete})
	result := append([]kernel.ErrorCode(nil), base...)
	sid := "/identity/verification/{session_id}"
	a := []kernel.Auth{kernel.AuthCredential}
	hdr := []kernel.Param{{Name: SessionTokenHeader, In: "header", Description: "The session capability returned once by the create call (required)."}}
	adm := []kernel.Auth{kernel.AuthAdmin}
	rerr := kernel.WithModuleCodes(kernel.AdminErrors(), []*errcode.Code{session.ErrCaseNotFound, session.ErrCaseClosed, session.ErrQueueFull, session.ErrBusy})
	ws := "/workspaces/{workspace_id}/reviews"
	return append(x.hostedRoutes(step, body, faceErrs, live, complete), []kernel.Route{
		{Method: "POST", Path: "/identity/verification/session", ID: "identitySessionCreate", Tag: "Identity verification", Auth: a,
			Summary: "Start a verification session; the answer holds the session capability, once.",
			Body:    &IdentitySessionInput{}, Status: 201, Result: &session.Created{}, Errors: cr, Handle: sessionBody(credentialAuth, x.identityCreate)},
		{Method: "POST", Path: sid + "/document", ID: "identitySessionDocument", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Screen the session's document (an attempt): verify or review keeps collecting, recapture asks again, reject ends it.",
			Body:    &IdentityDocumentInput{}, Result: &session.StepResult{}, Errors: doc, MaxBody: DocumentsMaxBody, Handle: sessionBody(credentialAuth, x.identityDocument)},
		{Method: "POST", Path: sid + "/liveness", ID: "identitySessionLiveness", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Issue the liveness challenge (actions, nonce, deadline) the face step answers; standard and high only, after the document.",
			Result:  &session.Challenge{}, Errors: live, Handle: sessionOp(credentialAuth, x.idv.Liveness)},
		{Method: "POST", Path: sid + "/face", ID: "identitySessionFace", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Send the selfie and the challenge frames (an attempt): the service checks liveness and compares the faces; fails closed without a face engine.",
			Body:    &IdentityFaceInput{}, Result: &session.StepResult{}, Errors: faceErrs, MaxBody: IdentityFaceMaxBody, Handle: sessionBody(credentialAuth, x.identityFace)},
		{Method: "POST", Path: sid + "/complete", ID: "identitySessionComplete", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Decide once the required steps passed: verified, or manual review (document in doubt, or high assurance).",
			Result:  &session.Result{}, Errors: complete, Handle: sessionOp(credentialAuth, x.idv.Complete)},
		{Method: "GET", Path: sid + "/result", ID: "identitySessionResult", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "The session: status, steps, attempts with check statuses and measured values (never images).",
			Result:  &session.Result{}, Errors: result, Handle: sessionOp(credentialAuth, x.idv.Result)},
		{Method: "POST", Path: sid + "/cancel", ID: "identitySessionCancel", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Cancel a session that has no outcome yet.",
			Result:  &session.Result{}, Errors: step, Handle: sessionOp(credentialAuth, x.idv.Cancel)},
		{Method: "POST", Path: sid + "/redact", ID: "identitySessionRedact", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Erase the session's traces of the person and the capture (cancelling it first if it has no outcome); emits identity.verification.redacted.",
			Result:  &session.Result{}, Errors: append(append([]kernel.ErrorCode(nil), base...), kernel.ModuleCode(session.ErrBusy)), Handle: sessionOp(credentialAuth, x.idv.Redact)},
		{Method: "GET", Path: ws, Admin: true, ID: "listReviewCases", Tag: "Review queue", Auth: adm,
			Summary: "The workspace's review cases, open first: reasons, attempts, redacted evidence.",
			Params:  []kernel.Param{{Name: "status", In: "query", Description: "Only cases with this status.", Enum: []string{"open", "resolved", "withdrawn"}}},
			Result:  &session.CaseList{}, Errors: rerr, Handle: kernel.AdminOnly(x.listReviews)},
		{Method: "GET", Path: ws + "/{case_id}", Admin: true, ID: "getReviewCase", Tag: "Review queue", Auth: adm, Summary: "Read a review case.",
			Result: &session.CaseView{}, Errors: rerr, Handle: kernel.AdminOnly(func(c *kernel.Call) {
				if w := c.Workspace(); w != nil {
					v, err := x.idv.Case(w.ID, c.Param("case_id"))
					answer(c, v, err)
				}
			})},
		{Method: "POST", Path: ws + "/{case_id}/resolve", Admin: true, ID: "resolveReviewCase", Tag: "Review queue", Auth: adm,
			Summary: "Resolve an open case with a decision and a note; a session case moves the session to the decision and emits review_resolved.",
			Body:    &ReviewResolveInput{}, Result: &session.CaseView{}, Errors: rerr, Handle: kernel.AdminOnly(x.resolveReview)},
	}...)
}

// answer writes v, or the error.
func answer(c *kernel.Call, v any, err error) {
	if err != nil {
		c.FailErr(err)
		return
	}
	c.OK(v)
}

// identityCaller authenticates a scoped credential (Authorization: Bearer
// only; no body secret) carrying identity.verify or
// identity.document.verify; the module checks the scope fits the level.
func identityCaller(c *kernel.Call) (session.Caller, bool) {
	tok := c.Bearer()
	if tok == "" {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.Fail(kernel.ErrUnauthorized, "a scoped credential is required (Authorization: Bearer <credential>)")
		return session.Caller{}, false
	}
	cr := c.Catalog().CredentialByToken(tok)
	if cr == nil || c.Catalog().Workspaces[cr.WorkspaceID] == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.Fail(kernel.ErrUnauthorized, "the bearer credential is not valid")
		return session.Caller{}, false
	}
	if !cr.HasScope(session.ScopeVerify) && !cr.HasScope(session.ScopeDocumentVerify) {
		c.FailErr(session.ErrScope)
		return session.Caller{}, false
	}
	if !c.AdmitCredential(cr.ID, cr.WorkspaceID) {
		return session.Caller{}, false
	}
	return session.Caller{WorkspaceID: cr.WorkspaceID, Scopes: cr.Scopes}, true
}

func sessionToken(c *kernel.Call) string {
	return string(c.Ctx.Request.Header.Peek(SessionTokenHeader))
}

// refuseClientVerdict answers client-verdict-refused when the body
// asserts a match, liveness or score (session.RefuseClientVerdict).
func refuseClientVerdict(c *kernel.Call) bool {
	if err := session.RefuseClientVerdict(c.Ctx.Request.Body()); err != nil {
		c.FailErr(err)
		return true
	}
	return false
}

func identityCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// sessionAuth authenticates a session operation: the caller and the
// capability the module checks. credentialAuth (a scoped credential and the
// session token header) and identityAPI.hostedCaller (the hosted page's
// capability) are the two.
type sessionAuth func(c *kernel.Call) (who session.Caller, tok string, ok bool)

func credentialAuth(c *kernel.Call) (session.Caller, string, bool) {
	who, ok := identityCaller(c)
	return who, sessionToken(c), ok
}

// sessionBody is a session operation on body In: refuse client verdicts,
// decode, authenticate, run op under the step deadline, encode.
func sessionBody[In, Out any](auth sessionAuth, op func(ctx context.Context, who session.Caller, id, tok string, in *In) (Out, error)) func(*kernel.Call) {
	return func(c *kernel.Call) {
		in := new(In)
		if refuseClientVerdict(c) || !c.Decode(in) {
			return
		}
		who, tok, ok := auth(c)
		if !ok {
			return
		}
		sessionAnswer(c, func(ctx context.Context) (any, error) { return op(ctx, who, c.Param("session_id"), tok, in) })
	}
}

// sessionOp is a body-less session operation.
func sessionOp[Out any](auth sessionAuth, op func(ctx context.Context, who session.Caller, id, tok string) (Out, error)) func(*kernel.Call) {
	return func(c *kernel.Call) {
		who, tok, ok := auth(c)
		if !ok {
			return
		}
		sessionAnswer(c, func(ctx context.Context) (any, error) { return op(ctx, who, c.Param("session_id"), tok) })
	}
}

// sessionAnswer runs an authenticated operation under the step deadline
// and answers it, never cached.
func sessionAnswer(c *kernel.Call, run func(ctx context.Context) (any, error)) {
	ctx, cancel := identityCtx()
	defer cancel()
	v, err := run(ctx)
	if err != nil {
		identityFail(c, ctx, err)
		return
	}
	c.Ctx.Response.Header.Set("Cache-Control", "no-store")
	c.OK(v)
}

func (x identityAPI) identityCreate(ctx context.Context, who session.Caller, _, _ string, in *IdentitySessionInput) (*session.Created, error) {
	return x.idv.Create(ctx, who, session.CreateRequest{SubjectID: in.SubjectID, Action: in.Action, Assurance: in.AssuranceLevel,
		Country: in.Country, DocumentType: in.DocumentType, ConsentAccepted: in.ConsentAccepted, ConsentReference: in.ConsentReference})
}

// identityDocument is the document step, through the API or the hosted page.
func (x identityAPI) identityDocument(ctx context.Context, who session.Caller, id, tok string, in *IdentityDocumentInput) (*session.StepResult, error) {
	return x.idv.Document(ctx, who, id, tok, session.DocumentRequest{Front: in.FrontImage,
		Back: in.BackImage, Country: in.Country, DocumentType: in.DocumentType})
}

// identityFace is the face step, through the API or the hosted page.
func (x identityAPI) identityFace(ctx context.Context, who session.Caller, id, tok string, in *IdentityFaceInput) (*session.StepResult, error) {
	fr := make([]session.FrameInput, len(in.Frames))
	for i, f := range in.Frames {
		fr[i] = session.FrameInput{Image: f.Image, OffsetMS: f.OffsetMS}
	}
	return x.idv.Face(ctx, who, id, tok, session.FaceRequest{Nonce: in.Nonce, Selfie: in.Selfie,
		Frames: fr, DocumentFront: in.DocumentFrontImage})
}

// identityFail maps a module error; a step that ran out of time is a 503
// (the session was released or times out), never a 500.
func identityFail(c *kernel.Call, ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		c.Fail(kernel.ErrUnavailable, "the verification step did not finish in time; the session is unchanged or released shortly; retry with backoff")
		return
	}
	if errors.Is(err, session.ErrCapability) {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
	}
	c.FailErr(err)
}

func (x identityAPI) listReviews(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	v, err := x.idv.Cases(w.ID, string(c.Ctx.QueryArgs().Peek("status")))
	answer(c, v, err)
}

func (x identityAPI) resolveReview(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	var in ReviewResolveInput
	if !c.Decode(&in) {
		return
	}
	ctx, cancel := identityCtx()
	defer cancel()
	v, err := x.idv.Resolve(ctx, w.ID, c.Param("case_id"), in.Decision, in.Note, in.By)
	answer(c, v, err)
}
