package http

import (
	"context"
	"errors"
	"time"

	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/session"
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

type sessionScreener struct{ s *Server }

func (x sessionScreener) Screen(ctx context.Context, r documents.Request) (*documents.DocumentResult, error) {
	return x.s.mods.docs.Screen(ctx, r)
}

func (s *Server) newIdentitySessions() *session.Module {
	d := session.Deps{Store: s.store, Screener: sessionScreener{s}, Engine: s.cfg.FaceEngine, Presence: s.cfg.Presence,
		Match: s.cfg.FaceMatch, Now: s.clock, Log: s.log}
	if s.cfg.Webhooks != nil {
		d.Events = s.cfg.Webhooks
	}
	return session.New(s.cfg.Identity, d)
}

func (s *Server) identityRoutes() []Route {
	base := []ErrorCode{ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrUnavailable, ErrConflict,
		moduleCode(session.ErrScope), moduleCode(session.ErrNotFound), moduleCode(session.ErrCapability)}
	body := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, moduleCode(session.ErrClientVerdict)}
	step := append(append([]ErrorCode(nil), base...), moduleCode(session.ErrState), moduleCode(session.ErrBusy), moduleCode(session.ErrExpired),
		moduleCode(session.ErrQueueFull))
	cr := append(append(append([]ErrorCode(nil), base...), body...), moduleCode(session.ErrConsent), moduleCode(session.ErrSessionLimit),
		moduleCode(documents.ErrCountry), moduleCode(documents.ErrDocumentType))
	doc := withModuleCodes(append(append([]ErrorCode(nil), step...), body...), documents.Errors)
	faceErrs := withModuleCodes(append(append([]ErrorCode(nil), step...), body...), []*errcode.Code{session.ErrIncomplete, session.ErrNoChallenge,
		session.ErrChallengeStale, session.ErrNonce, session.ErrDocumentImage, face.ErrUnavailable,
		documents.ErrImageTooLarge, documents.ErrImageEncoding})
	live := withModuleCodes(step, []*errcode.Code{session.ErrIncomplete, face.ErrUnavailable})
	complete := withModuleCodes(step, []*errcode.Code{session.ErrIncomplete})
	result := append([]ErrorCode(nil), base...)
	sid := "/identity/verification/{session_id}"
	a := []Auth{AuthCredential}
	hdr := []Param{{Name: SessionTokenHeader, In: "header", Description: "The session capability returned once by the create call (required)."}}
	adm := []Auth{AuthAdmin}
	rerr := withModuleCodes(adminErrors, []*errcode.Code{session.ErrCaseNotFound, session.ErrCaseClosed, session.ErrQueueFull, session.ErrBusy})
	ws := "/workspaces/{workspace_id}/reviews"
	return append(s.hostedRoutes(step, body, faceErrs, live, complete), []Route{
		{Method: "POST", Path: "/identity/verification/session", ID: "identitySessionCreate", Tag: "Identity verification", Auth: a,
			Summary: "Start a verification session; the answer holds the session capability, once.",
			Body:    &IdentitySessionInput{}, Status: 201, Result: &session.Created{}, Errors: cr, Handle: identityBody(s.identityCreate)},
		{Method: "POST", Path: sid + "/document", ID: "identitySessionDocument", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Screen the session's document (an attempt): verify or review keeps collecting, recapture asks again, reject ends it.",
			Body:    &IdentityDocumentInput{}, Result: &session.StepResult{}, Errors: doc, MaxBody: DocumentsMaxBody, Handle: identityBody(s.identityDocument)},
		{Method: "POST", Path: sid + "/liveness", ID: "identitySessionLiveness", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Issue the liveness challenge (actions, nonce, deadline) the face step answers; standard and high only, after the document.",
			Result:  &session.Challenge{}, Errors: live, Handle: s.identitySimple(func(ctx context.Context, who session.Caller, id, tok string) (any, error) {
				return s.mods.idv.Liveness(ctx, who, id, tok)
			})},
		{Method: "POST", Path: sid + "/face", ID: "identitySessionFace", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Send the selfie and the challenge frames (an attempt): the service checks liveness and compares the faces; fails closed without a face engine.",
			Body:    &IdentityFaceInput{}, Result: &session.StepResult{}, Errors: faceErrs, MaxBody: IdentityFaceMaxBody, Handle: identityBody(s.identityFace)},
		{Method: "POST", Path: sid + "/complete", ID: "identitySessionComplete", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Decide once the required steps passed: verified, or manual review (document in doubt, or high assurance).",
			Result:  &session.Result{}, Errors: complete, Handle: s.identitySimple(func(ctx context.Context, who session.Caller, id, tok string) (any, error) {
				return s.mods.idv.Complete(ctx, who, id, tok)
			})},
		{Method: "GET", Path: sid + "/result", ID: "identitySessionResult", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "The session: status, steps, attempts with check statuses and measured values (never images).",
			Result:  &session.Result{}, Errors: result, Handle: s.identitySimple(func(ctx context.Context, who session.Caller, id, tok string) (any, error) {
				return s.mods.idv.Result(ctx, who, id, tok)
			})},
		{Method: "POST", Path: sid + "/cancel", ID: "identitySessionCancel", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Cancel a session that has no outcome yet.",
			Result:  &session.Result{}, Errors: step, Handle: s.identitySimple(func(ctx context.Context, who session.Caller, id, tok string) (any, error) {
				return s.mods.idv.Cancel(ctx, who, id, tok)
			})},
		{Method: "POST", Path: sid + "/redact", ID: "identitySessionRedact", Tag: "Identity verification", Auth: a, Params: hdr,
			Summary: "Erase the session's traces of the person and the capture (cancelling it first if it has no outcome); emits identity.verification.redacted.",
			Result:  &session.Result{}, Errors: append(append([]ErrorCode(nil), base...), moduleCode(session.ErrBusy)), Handle: s.identitySimple(func(ctx context.Context, who session.Caller, id, tok string) (any, error) {
				return s.mods.idv.Redact(ctx, who, id, tok)
			})},
		{Method: "GET", Path: ws, Admin: true, ID: "listReviewCases", Tag: "Review queue", Auth: adm,
			Summary: "The workspace's review cases, open first: reasons, attempts, redacted evidence.",
			Params:  []Param{{Name: "status", In: "query", Description: "Only cases with this status.", Enum: []string{"open", "resolved", "withdrawn"}}},
			Result:  &session.CaseList{}, Errors: rerr, Handle: s.admin(s.listReviews)},
		{Method: "GET", Path: ws + "/{case_id}", Admin: true, ID: "getReviewCase", Tag: "Review queue", Auth: adm, Summary: "Read a review case.",
			Result: &session.CaseView{}, Errors: rerr, Handle: s.admin(func(c *Call) {
				if w := c.workspace(); w != nil {
					v, err := s.mods.idv.Case(w.ID, c.Param("case_id"))
					c.answer(v, err)
				}
			})},
		{Method: "POST", Path: ws + "/{case_id}/resolve", Admin: true, ID: "resolveReviewCase", Tag: "Review queue", Auth: adm,
			Summary: "Resolve an open case with a decision and a note; a session case moves the session to the decision and emits review_resolved.",
			Body:    &ReviewResolveInput{}, Result: &session.CaseView{}, Errors: rerr, Handle: s.admin(s.resolveReview)},
	}...)
}

// answer writes v, or the error.
func (c *Call) answer(v any, err error) {
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(v)
}

// identityCaller authenticates a scoped credential (Authorization: Bearer
// only; no body secret) carrying identity.verify or
// identity.document.verify; the module checks the scope fits the level.
func (c *Call) identityCaller() (session.Caller, bool) {
	tok := c.bearer()
	if tok == "" {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "a scoped credential is required (Authorization: Bearer <credential>)")
		return session.Caller{}, false
	}
	cr := c.cat.CredentialByToken(tok)
	if cr == nil || c.cat.Workspaces[cr.WorkspaceID] == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "the bearer credential is not valid")
		return session.Caller{}, false
	}
	if !cr.HasScope(session.ScopeVerify) && !cr.HasScope(session.ScopeDocumentVerify) {
		c.failErr(session.ErrScope)
		return session.Caller{}, false
	}
	if !c.admitCredential(cr.ID, cr.WorkspaceID) {
		return session.Caller{}, false
	}
	return session.Caller{WorkspaceID: cr.WorkspaceID, Scopes: cr.Scopes}, true
}

func (c *Call) sessionToken() string { return string(c.Ctx.Request.Header.Peek(SessionTokenHeader)) }

// refuseClientVerdict answers client-verdict-refused when the body
// asserts a match, liveness or score (session.RefuseClientVerdict).
func (c *Call) refuseClientVerdict() bool {
	if err := session.RefuseClientVerdict(c.Ctx.Request.Body()); err != nil {
		c.failErr(err)
		return true
	}
	return false
}

func identityCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// identityBody is a session operation on body In: refuse client
// verdicts, decode, authenticate, run op under the step deadline, encode.
func identityBody[In any](op func(ctx context.Context, c *Call, who session.Caller, in *In) (any, error)) func(*Call) {
	return func(c *Call) {
		if c.refuseClientVerdict() {
			return
		}
		in := new(In)
		if !c.decode(in) {
			return
		}
		who, ok := c.identityCaller()
		if !ok {
			return
		}
		ctx, cancel := identityCtx()
		defer cancel()
		v, err := op(ctx, c, who, in)
		if err != nil {
			c.identityFail(ctx, err)
			return
		}
		c.Ctx.Response.Header.Set("Cache-Control", "no-store")
		c.ok(v)
	}
}

func (s *Server) identityCreate(ctx context.Context, _ *Call, who session.Caller, in *IdentitySessionInput) (any, error) {
	return s.mods.idv.Create(ctx, who, session.CreateRequest{SubjectID: in.SubjectID, Action: in.Action, Assurance: in.AssuranceLevel,
		Country: in.Country, DocumentType: in.DocumentType, ConsentAccepted: in.ConsentAccepted, ConsentReference: in.ConsentReference})
}

func (s *Server) identityDocument(ctx context.Context, c *Call, who session.Caller, in *IdentityDocumentInput) (any, error) {
	return s.mods.idv.Document(ctx, who, c.Param("session_id"), c.sessionToken(), session.DocumentRequest{Front: in.FrontImage,
		Back: in.BackImage, Country: in.Country, DocumentType: in.DocumentType})
}

func (s *Server) identityFace(ctx context.Context, c *Call, who session.Caller, in *IdentityFaceInput) (any, error) {
	fr := make([]session.FrameInput, len(in.Frames))
	for i, f := range in.Frames {
		fr[i] = session.FrameInput{Image: f.Image, OffsetMS: f.OffsetMS}
	}
	return s.mods.idv.Face(ctx, who, c.Param("session_id"), c.sessionToken(), session.FaceRequest{Nonce: in.Nonce, Selfie: in.Selfie,
		Frames: fr, DocumentFront: in.DocumentFrontImage})
}

// identitySimple is a body-less session operation.
func (s *Server) identitySimple(op func(ctx context.Context, who session.Caller, id, tok string) (any, error)) func(*Call) {
	return func(c *Call) {
		who, ok := c.identityCaller()
		if !ok {
			return
		}
		ctx, cancel := identityCtx()
		defer cancel()
		v, err := op(ctx, who, c.Param("session_id"), c.sessionToken())
		if err != nil {
			c.identityFail(ctx, err)
			return
		}
		c.Ctx.Response.Header.Set("Cache-Control", "no-store")
		c.ok(v)
	}
}

// identityFail maps a module error; a step that ran out of time is a 503
// (the session was released or times out), never a 500.
func (c *Call) identityFail(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		c.fail(ErrUnavailable, "the verification step did not finish in time; the session is unchanged or released shortly; retry with backoff")
		return
	}
	if errors.Is(err, session.ErrCapability) {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
	}
	c.failErr(err)
}

func (s *Server) listReviews(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	v, err := s.mods.idv.Cases(w.ID, string(c.Ctx.QueryArgs().Peek("status")))
	c.answer(v, err)
}

func (s *Server) resolveReview(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	var in ReviewResolveInput
	if !c.decode(&in) {
		return
	}
	ctx, cancel := identityCtx()
	defer cancel()
	v, err := s.mods.idv.Resolve(ctx, w.ID, c.Param("case_id"), in.Decision, in.Note, in.By)
	c.answer(v, err)
}

// SweepIdentityEvents hands identity sessions' pending webhook events to
// the outbox every interval while leader (an Emit that failed inside a
// request is retried here, not only when the session is next touched),
// and applies the identity retention, until ctx ends.
func (s *Server) SweepIdentityEvents(ctx context.Context, every time.Duration, leader func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if leader() {
				fctx, cancel := context.WithTimeout(ctx, every)
				s.mods.idv.FlushPending(fctx)
				// Retention on a timer: ended sessions and resolved cases
				// past their retention go even in a quiet workspace.
				if _, err := s.mods.idv.Prune(fctx); err != nil && ctx.Err() == nil {
					s.log.Warn("identity retention: prune failed; retried on the next sweep", "err", err)
				}
				cancel()
			}
		}
	}
}

// IdentitySessions is the identity-session module, whose review queue other
// modules (journeys escalations) use through OpenCase and Case.
func (s *Server) IdentitySessions() *session.Module { return s.mods.idv }
