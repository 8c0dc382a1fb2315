package journeys

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/trustd/trustd/console/branding"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/risk/trust"
)

// The person's side of a session: the browser holds the capability (the
// JourneyPersonPrefix token of the start's endpoint), never the session
// token, and completes the method with it. Each completion that passes
// issues one proof, bound to the journey session (its id is the session's
// ProofID), the subject, the action, the operation and the assurance the
// method achieved.

// PersonView is what the person's page needs.
type PersonView struct {
	JourneyName string
	Method      string
	Consent     catalog.JourneyConsent
	Status      string
	ExpiresIn   int
	Attempts    int
	// Reference is the session reference a human-verification widget
	// carries as its cdata.
	Reference string
	// SiteKey is the public key of the site that started a
	// human_verification session (the widget's sitekey); "" otherwise.
	SiteKey string
	// ReturnOrigins are the origins the page may hand the proof to (the
	// starting site's hostnames over https); none for mobile sessions.
	ReturnOrigins []string
	// Branding is the branding profile of the site or mobile app that
	// started the session (branding.ForSite / ForApp); nil for the
	// default look. Read only by the page's look (the branding hook).
	Branding *branding.View
}

// Proof is a completed attempt: the single-use proof the person hands the
// customer's page, which its backend exchanges at /journeys/siteverify.
type Proof struct {
	Response string
	Status   string
}

// Attempt is a failed or passed completion.
type Attempt struct {
	Passed  bool
	Proof   Proof
	Reasons []string
	Status  string
}

// Reference returns the cdata a human-verification widget of this session
// carries: the session id, which is already in the person's capability.
func Reference(s *catalog.JourneySession) string { return "journey:" + s.ID }

// personSession resolves a capability.
func (m *Module) personSession(ctx context.Context, capability string) (*catalog.Catalog, *catalog.JourneySession, *catalog.Workspace, error) {
	cat := m.store.Catalog()
	s, _, ok := m.session(ctx, cat, nil, capability, true)
	if !ok {
		return nil, nil, nil, ErrInvalidSession
	}
	ws := cat.Workspaces[s.WorkspaceID]
	if ws == nil {
		return nil, nil, nil, ErrInvalidSession
	}
	return cat, s, ws, nil
}

// Person reads the session for the person's page.
func (m *Module) Person(ctx context.Context, capability string) (PersonView, error) {
	cat, s, _, err := m.personSession(ctx, capability)
	if err != nil {
		return PersonView{}, err
	}
	j := cat.Journey(s.WorkspaceID, s.JourneyKey)
	name := s.JourneyKey
	if j != nil {
		name = j.Name
	}
	now := m.now()
	v := PersonView{JourneyName: name, Method: s.Method, Consent: s.Consent, Status: statusAt(s, now),
		ExpiresIn: max(int(s.ExpiresAt.Sub(now)/time.Second), 0), Attempts: s.Attempts, Reference: Reference(s),
		ReturnOrigins: returnOrigins(cat, s), Branding: personBranding(cat, s)}
	if site := cat.Sites[s.AppID]; site != nil && s.Method == MethodHuman && s.Channel == "server" {
		v.SiteKey = site.SiteKey
	}
	return v, nil
}

// personBranding is the branding of the site or mobile app that started
// the session, nil without one.
func personBranding(cat *catalog.Catalog, s *catalog.JourneySession) *branding.View {
	p, ok := branding.ForSite(cat, cat.Sites[s.AppID])
	if s.Channel == "mobile" {
		p, ok = branding.ForApp(cat, cat.MobileApps[s.AppID])
	}
	if !ok || p.WorkspaceID != s.WorkspaceID {
		return nil
	}
	return p.View(branding.DefaultSize)
}

// returnOrigins are https origins of the site that started the session:
// the page posts the proof to its opener only at one of them, never "*".
func returnOrigins(cat *catalog.Catalog, s *catalog.JourneySession) []string {
	site := cat.Sites[s.AppID]
	if site == nil || s.Channel != "server" {
		return nil
	}
	out := make([]string, 0, len(site.Hostnames))
	for _, h := range site.Hostnames {
		out = append(out, "https://"+strings.ToLower(h))
	}
	return out
}

// checkOpen refuses a step on a closed session or of the wrong method.
func checkOpen(s *catalog.JourneySession, method string, now time.Time) error {
	if !open(s, now) {
		return ErrSessionClosed
	}
	if s.Method != method {
		return ErrWrongMethod.With("the session's method is %s", s.Method)
	}
	return nil
}

// begin opens an attempt: proof_pending with the method's state; any
// proof of an earlier attempt stops completing the session.
func (m *Module) begin(ctx context.Context, s *catalog.JourneySession, state []byte) (*catalog.JourneySession, error) {
	var out *catalog.JourneySession
	err := m.retryCAS(ctx, s.WorkspaceID, s.ID, func(cur *catalog.JourneySession) error {
		if err := checkOpen(cur, s.Method, m.now()); err != nil {
			return err
		}
		n, err := m.transition(ctx, cur, func(n *catalog.JourneySession) {
			n.Status, n.Attempts, n.ProofID, n.MethodState, n.LastError = StatusProofPending, n.Attempts+1, "", state, ""
		})
		out = n
		return err
	})
	return out, err
}

// finish ends the attempt opened at version s.Version: a pass issues the
// proof and completes the session, a failure fails it (a retry needs a
// fresh attempt and a fresh proof). countAttempt is set for methods
// without a begin step (the attempt is counted here).
func (m *Module) finish(ctx context.Context, ws *catalog.Workspace, s *catalog.JourneySession, passed bool, reasons []string, countAttempt bool) (Attempt, error) {
	cat := m.store.Catalog()
	now := m.now()
	var text string
	id := newID()
	if passed {
		k := m.keys.Signer(cat)
		if k == nil {
			return Attempt{}, ErrNoSigningKey
		}
		a := MethodAchieves(s.Method)
		in := trust.ProofInput{ID: id, Method: s.Method, Assurance: a.Assurance, Identity: a.Identity && s.SubjectHash != "",
			Liveness: a.Liveness, DeviceBound: a.DeviceBound, Action: s.Action, AuthTime: now, TTL: s.ExpiresAt.Sub(now)}
		if raw, err := base64.RawURLEncoding.DecodeString(s.SubjectHash); err == nil && len(raw) >= 16 {
			var b [16]byte
			copy(b[:], raw)
			in.SubjectBinding = &b
		}
		if raw, err := hex.DecodeString(s.OperationHash); err == nil && len(raw) == 16 {
			var b [16]byte
			copy(b[:], raw)
			in.OperationBinding = &b
		}
		if in.TTL <= 0 {
			return Attempt{}, ErrSessionClosed
		}
		text = trust.IssueProof(k, ws, in, now)
	}
	n, err := m.transition(ctx, s, func(n *catalog.JourneySession) {
		n.MethodState = nil
		if countAttempt {
			n.Attempts++
		}
		if passed {
			n.Status, n.ProofID, n.LastError = StatusCompleted, hex.EncodeToString(id[:]), ""
			return
		}
		n.Status, n.ProofID, n.FailedAttempts = StatusFailed, "", n.FailedAttempts+1
		if len(reasons) > 0 {
			n.LastError = reasons[0]
		}
	})
	if errors.Is(err, catalog.ErrJourneySessionChanged) {
		return Attempt{}, ErrBusy
	}
	if err != nil {
		return Attempt{}, err
	}
	if !passed {
		m.countFailure(ws.ID, s.SubjectHash)
		return Attempt{Reasons: reasons, Status: n.Status}, nil
	}
	return Attempt{Passed: true, Proof: Proof{Response: text, Status: n.Status}, Status: n.Status}, nil
}

// HumanVerdict is the outcome of a human-verification response token
// (the widget's), as the verify module's siteverify decides it: the
// token was ours, unused, unexpired, of the site, and carried cdata.
type HumanVerdict struct {
	Success bool
	CData   string
	Codes   []string
}

// HumanVerifier exchanges a widget response token once for its verdict,
// consuming it cluster-wide exactly as /siteverify does (node/ adapts
// verify.Module.ExchangeToken). siteID is the site that started the
// journey; remoteIP, when not empty, must be the address the token is
// bound to.
type HumanVerifier interface {
	VerifyHuman(ctx context.Context, workspaceID, siteID, response, remoteIP string) (HumanVerdict, error)
}

// WithHuman sets the human-verification verdict source.
func (m *Module) WithHuman(h HumanVerifier) *Module {
	return m.setEngines(func(e *engines) { e.human = h })
}

// CompleteHuman completes a human_verification session with a widget
// response token whose cdata is the session's Reference: a token of
// another session, or without cdata, fails the attempt. remoteIP is the
// address of the person's page calling (the widget token must be bound to
// it); "" skips that check.
func (m *Module) CompleteHuman(ctx context.Context, capability, response, remoteIP string) (Attempt, error) {
	_, s, ws, err := m.personSession(ctx, capability)
	if err != nil {
		return Attempt{}, err
	}
	if err := checkOpen(s, MethodHuman, m.now()); err != nil {
		return Attempt{}, err
	}
	if response == "" || len(response) > 2048 {
		return Attempt{}, ErrInvalidRequest.With("response: the widget's response token")
	}
	if s.Channel != "server" {
		// The widget needs a site (its sitekey and hostnames); a mobile
		// app's session has none.
		return Attempt{}, ErrMethodUnavailable.With("human verification runs the widget of the site that started the journey; a mobile session has no site")
	}
	human := m.engines().human
	if human == nil {
		return Attempt{}, ErrMethodUnavailable.With("human verification verdicts are not wired on this node")
	}
	v, err := human.VerifyHuman(ctx, ws.ID, s.AppID, response, remoteIP)
	if err != nil {
		return Attempt{}, ErrMethodUnavailable.With("human verification did not answer")
	}
	if !v.Success && slices.Contains(v.Codes, errcode.CodeTimeoutOrDuplicate) {
		// This call did not consume the token (spent before, or expired):
		// only a first use decides, so a replay (or a double submit racing
		// the real one) never moves the session nor counts as an attempt.
		return Attempt{Reasons: v.Codes, Status: statusAt(s, m.now())}, nil
	}
	passed := v.Success && v.CData == Reference(s)
	reasons := v.Codes
	if v.Success && !passed {
		reasons = []string{"cdata-mismatch"}
	}
	if !passed && len(reasons) == 0 {
		reasons = []string{"human-verification-failed"}
	}
	return m.finish(ctx, ws, s, passed, reasons, true)
}
