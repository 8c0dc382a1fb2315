package api_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/trustd/trustd/journeys/api/journeynode"
	"github.com/trustd/trustd/journeys/journeystest"
	"github.com/trustd/trustd/verify/pow"
)

// widgetToken runs the widget protocol from origin (challenge, proof of
// work, redeem) for sitekey with cdata, as the person's page does.
func (e *journeyEnv) widgetToken(sitekey, origin, cdata string) string {
	e.T.Helper()
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	r := e.Do("POST", "/v1/challenge", "", map[string]any{"sitekey": sitekey, "cdata": cdata}, "Origin", origin)
	if r.Status != 200 {
		e.T.Fatalf("challenge: %d %s", r.Status, r.Body)
	}
	r.Decode(e.T, &ch)
	salt, _ := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
	if !ok {
		e.T.Fatal("no proof-of-work solution")
	}
	r = e.Do("POST", "/v1/challenge/redeem", "", map[string]any{"challenge": ch.Challenge, "nonce": nonce,
		"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1500, "pointer_moves": 9}}, "Origin", origin)
	if r.Status != 200 {
		e.T.Fatalf("redeem: %d %s", r.Status, r.Body)
	}
	var rd struct {
		Token string `json:"token"`
	}
	r.Decode(e.T, &rd)
	return rd.Token
}

// A human_verification journey over HTTP with real widget tokens and the
// node's wiring (the verify module's exchange): the token must carry the
// session's reference as cdata, is consumed as /siteverify consumes it
// (a token spent by a journey is a duplicate at /siteverify, and the
// other way round), a replayed token never moves the session, and a
// failed attempt needs a fresh token.
func TestJourneyHumanVerificationWithRealWidgetTokens(t *testing.T) {
	e := startJourneyNode(t)
	ws := e.Dev.WorkspaceID
	r := e.Do("POST", "/admin/v1/workspaces/"+ws+"/sites", e.Dev.AdminToken, map[string]any{"name": "shop", "hostnames": []string{"localhost"},
		"environment": "production", "challenge_mode": "checkbox", "challenge_difficulty": 1})
	if r.Status != 201 {
		t.Fatalf("site: %d %s", r.Status, r.Body)
	}
	var site struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	r.Decode(t, &site)
	r = e.Do("PUT", "/admin/v1/workspaces/"+ws+"/journeys/login", e.Dev.AdminToken, map[string]any{
		"name": "Sign in", "method": "human_verification", "requested_assurance": "none"})
	if r.Status != 200 {
		t.Fatalf("define: %d %s", r.Status, r.Body)
	}
	origin := e.Origin // http://localhost:<port>, a hostname of the site
	start := func() (session, capability string) {
		a := e.StartJourney(map[string]any{"secret": site.Secret, "journey_key": "login", "action": "login"})
		if a.Method != "human_verification" {
			t.Fatalf("method %s", a.Method)
		}
		return a.SessionToken, journeynode.CapabilityOf(t, a.Endpoint)
	}
	view := func(capability string) (ref, sitekey string) {
		t.Helper()
		r := e.Do("POST", "/v1/journeys/person/session", "", nil, "X-Service-Journey-Token", capability)
		if r.Status != 200 {
			t.Fatalf("person view: %d %s", r.Status, r.Body)
		}
		var v struct {
			Reference string `json:"reference"`
			SiteKey   string `json:"sitekey"`
		}
		r.Decode(t, &v)
		return v.Reference, v.SiteKey
	}
	human := func(capability, tok string) journeynode.AttemptAnswer {
		t.Helper()
		r := e.Do("POST", "/v1/journeys/person/human", "", map[string]any{"response": tok}, "X-Service-Journey-Token", capability)
		if r.Status != 200 {
			t.Fatalf("person/human: %d %s", r.Status, r.Body)
		}
		var a journeynode.AttemptAnswer
		r.Decode(t, &a)
		return a
	}
	siteverify := func(session, proof string) svJourney {
		t.Helper()
		r := e.Post("/journeys/siteverify", map[string]any{"secret": site.Secret, "session_token": session, "response": proof, "action": "login"})
		if r.Status != 200 {
			t.Fatalf("siteverify: %d %s", r.Status, r.Body)
		}
		var v svJourney
		r.Decode(t, &v)
		return v
	}
	widgetSiteverify := func(tok string) []string {
		t.Helper()
		r := e.Post("/siteverify", map[string]any{"secret": site.Secret, "response": tok})
		var v struct {
			Success bool     `json:"success"`
			Codes   []string `json:"error-codes"`
		}
		r.Decode(t, &v)
		return v.Codes
	}

	// Session A completes with a token carrying its reference.
	sa, ca := start()
	refA, key := view(ca)
	if key != site.SiteKey || !strings.HasPrefix(refA, "journey:") {
		t.Fatalf("the page is told sitekey %q reference %q", key, refA)
	}
	tokA := e.widgetToken(key, origin, refA)
	a := human(ca, tokA)
	if !a.Success || a.Status != "completed" || !strings.HasPrefix(a.Response, "tp1_") {
		t.Fatalf("attempt: %+v", a)
	}
	if codes := widgetSiteverify(tokA); len(codes) != 1 || codes[0] != "timeout-or-duplicate" {
		t.Fatalf("/siteverify of a token a journey spent: %v", codes)
	}
	v := siteverify(sa, a.Response)
	if !v.Success || v.Journey.Status != "completed" || v.Trust.Method != "human_verification" || v.Trust.AssuranceLevel != "none" {
		t.Fatalf("siteverify: %+v", v)
	}
	if v := siteverify(sa, a.Response); v.Success || len(v.Codes) != 1 || v.Codes[0] != "timeout-or-duplicate" {
		t.Fatalf("replayed session and proof: %+v", v)
	}

	// Session B: A's (spent) token fails, a fresh token of another
	// session's reference fails (and is spent), then a fresh token with
	// B's reference completes it.
	sb, cb := start()
	refB, _ := view(cb)
	// A spent token is refused and never moves the session (only a
	// first use decides).
	if a := human(cb, tokA); a.Success || a.Status != "started" || len(a.Reasons) != 1 || a.Reasons[0] != "timeout-or-duplicate" {
		t.Fatalf("a spent widget token: %+v", a)
	}
	wrong := e.widgetToken(key, origin, refA)
	if a := human(cb, wrong); a.Success || a.Status != "failed" || len(a.Reasons) != 1 || a.Reasons[0] != "cdata-mismatch" {
		t.Fatalf("a token of another session: %+v", a)
	}
	if codes := widgetSiteverify(wrong); len(codes) != 1 || codes[0] != "timeout-or-duplicate" {
		t.Fatalf("the wrong-cdata token was not spent: %v", codes)
	}
	if v := siteverify(sb, ""); v.Success || v.Journey.Status != "failed" || v.NextStep != "retry_with_fresh_proof" {
		t.Fatalf("after failed attempts: %+v", v)
	}
	// A token solved for the site from another page host is refused at
	// the challenge (the person page's host must be a site hostname).
	if r := e.Do("POST", "/v1/challenge", "", map[string]any{"sitekey": key, "cdata": refB}, "Origin", "http://127.0.0.1:9"); r.Status != 403 {
		t.Fatalf("challenge from a host the site does not list: %d %s", r.Status, r.Body)
	}
	// A token of the dev site (another site of the workspace) is not this site's.
	if a := human(cb, e.widgetToken(e.Dev.SiteKey, origin, refB)); a.Success || a.Reasons[0] != "invalid-input-response" {
		t.Fatalf("another site's token: %+v", a)
	}
	b := human(cb, e.widgetToken(key, origin, refB))
	if !b.Success {
		t.Fatalf("a fresh token after failures: %+v", b)
	}
	if v := siteverify(sb, b.Response); !v.Success || v.Journey.Status != "completed" {
		t.Fatalf("siteverify after a retry: %+v", v)
	}
}

type svJourney struct {
	Success bool     `json:"success"`
	Codes   []string `json:"error-codes"`
	Journey struct {
		Status string `json:"status"`
	} `json:"journey"`
	Trust struct {
		Method         string `json:"method"`
		AssuranceLevel string `json:"assurance_level"`
	} `json:"trust"`
	NextStep string `json:"next_step"`
}

// An escalated journey opens a case in the identity review queue of its
// workspace (the node's wiring): the case names the session, never the
// subject or the operation; a reviewer's "verified" decision never turns
// the session's failed proof into an approval (4.8), and the session
// refuses completion after.
func TestJourneyEscalationAppearsInTheIdentityReviewQueue(t *testing.T) {
	e := startJourneyNode(t)
	ws := e.Dev.WorkspaceID
	a := e.StartJourney(map[string]any{"journey_key": "pay", "subject_id": "alice@example.com", "action": "pay", "operation_reference": "order-77", "consent_version": "c1"})
	out := completePasskey(t, e.Node, a.Endpoint, journeystest.New(e.Origin))
	proof, _ := out["response"].(string)
	if out["success"] != true {
		t.Fatalf("passkey: %v", out)
	}
	sv := map[string]any{"session_token": a.SessionToken, "response": proof, "subject_id": "alice@example.com", "action": "pay",
		"operation_reference": "order-77", "consent_version": "c1", "consent_accepted": false}
	var v svJourney
	e.Post("/journeys/siteverify", sv).Decode(t, &v)
	if v.Success || v.Journey.Status != "failed" || v.Codes[0] != "consent-required" {
		t.Fatalf("a failed proof: %+v", v)
	}
	r := e.Post("/journeys/escalate", map[string]any{"session_token": a.SessionToken, "reason_code": "customer_dispute", "priority": "high",
		"operation_label": "payment"})
	if r.Status != 200 {
		t.Fatalf("escalate: %d %s", r.Status, r.Body)
	}
	var esc struct {
		CaseReference string `json:"case_reference"`
		Status        string `json:"status"`
	}
	r.Decode(t, &esc)
	if esc.CaseReference == "" || esc.Status != "escalated" {
		t.Fatalf("escalate: %s", r.Body)
	}
	r = e.Do("GET", "/admin/v1/workspaces/"+ws+"/reviews?status=open", e.Dev.AdminToken, nil)
	if r.Status != 200 {
		t.Fatalf("reviews: %d %s", r.Status, r.Body)
	}
	body := string(r.Body)
	for _, want := range []string{esc.CaseReference, `"kind":"journey"`, "journey-session:", "customer_dispute", "priority/high", "operation/payment"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the case is not in the review queue as expected (%s): %s", want, body)
		}
	}
	for _, secret := range []string{"alice", "order-77"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the review queue holds personal data %q: %s", secret, body)
		}
	}
	// The same case again.
	r = e.Post("/journeys/escalate", map[string]any{"session_token": a.SessionToken, "reason_code": "again"})
	var again struct {
		CaseReference string `json:"case_reference"`
	}
	r.Decode(t, &again)
	if again.CaseReference != esc.CaseReference {
		t.Fatalf("a second escalation opened another case: %s", r.Body)
	}
	// A reviewer approves: the session stays escalated, the failed proof
	// (now with every field right) and any new attempt complete nothing.
	r = e.Do("POST", "/admin/v1/workspaces/"+ws+"/reviews/"+esc.CaseReference+"/resolve", e.Dev.AdminToken,
		map[string]any{"decision": "verified", "note": "looks fine", "by": "reviewer-1"})
	if r.Status != 200 {
		t.Fatalf("resolve: %d %s", r.Status, r.Body)
	}
	sv["consent_accepted"] = true
	e.Post("/journeys/siteverify", sv).Decode(t, &v)
	if v.Success || v.Journey.Status != "escalated" || v.Codes[0] != "journey-escalated" {
		t.Fatalf("siteverify after an approving review: %+v", v)
	}
	r = e.Do("POST", "/v1/journeys/person/passkey/begin", "", nil, "X-Service-Journey-Token", journeynode.CapabilityOf(t, a.Endpoint))
	if r.Status != 409 || r.ErrorCode(t) != "journey-session-closed" {
		t.Fatalf("an escalated session began an attempt: %d %s", r.Status, r.Body)
	}
}
