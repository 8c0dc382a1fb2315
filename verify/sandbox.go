package verify

import (
	"encoding/base64"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/token"
)

// The developer sandbox (spec 4.11): a sandbox site's key and secret mint
// and verify tokens that exercise each outcome of siteverify without a
// browser. Sandbox tokens carry their own prefix, are signed with the
// sandbox key, use their own marker key space (sbx/…), never create
// assessments, and are refused by the production endpoints, which refuse
// sandbox secrets as well. The sandbox's siteverify is Siteverify itself
// with Request.Sandbox, so what a scenario teaches holds in production.

// Sandbox scenarios, as carried in a sandbox token.
const (
	scenarioSuccess byte = 1 + iota
	scenarioLowScore
	scenarioActionMismatch
	scenarioHostnameMismatch
	scenarioRemoteIPMismatch
	scenarioReplay
	scenarioExpired
	scenarioInvalidInput
	scenarioServiceError
)

// Bindings the scenarios use.
const (
	sandboxOtherAction = "sandbox-other-action"
	sandboxOtherHost   = "hostname-mismatch.sandbox.invalid"
	sandboxBoundIP     = "192.0.2.1"
)

// SandboxScenario describes one scenario.
type SandboxScenario struct {
	Name        string `json:"name" required:"true"`
	Description string `json:"description" required:"true"`
	// Expect is what /sandbox/siteverify answers for the token.
	HTTPStatus int      `json:"http_status" required:"true" doc:"Status /sandbox/siteverify answers."`
	Success    bool     `json:"success" required:"true"`
	ErrorCodes []string `json:"error-codes" required:"true" doc:"error-codes of the answer (or the error of a 503)."`
	code       byte
}

var sandboxScenarios = []SandboxScenario{
	{Name: "success", code: scenarioSuccess, HTTPStatus: 200, Success: true, ErrorCodes: []string{},
		Description: "A valid checkbox token with score 0.9, bound to the requested action and hostname, not bound to an address."},
	{Name: "low_score", code: scenarioLowScore, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeLowScore},
		Description: "A score_enforced token scoring 0.100, below the site's threshold: low-score, token consumed."},
	{Name: "action_mismatch", code: scenarioActionMismatch, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeActionMismatch},
		Description: "Bound to the action sandbox-other-action: action-mismatch when siteverify sends the expected action; the answer's action is the bound one."},
	{Name: "hostname_mismatch", code: scenarioHostnameMismatch, HTTPStatus: 200, Success: true, ErrorCodes: []string{},
		Description: "Succeeds, but bound to hostname-mismatch.sandbox.invalid: your hostname allow-list check must refuse it."},
	{Name: "remoteip_mismatch", code: scenarioRemoteIPMismatch, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeRemoteIPMismatch},
		Description: "Bound to 192.0.2.1: remoteip-mismatch when siteverify sends any other remoteip (and success when remoteip is absent)."},
	{Name: "replay", code: scenarioReplay, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeTimeoutOrDuplicate},
		Description: "Already consumed when issued: the first siteverify is a duplicate and echoes the bound context."},
	{Name: "expired", code: scenarioExpired, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeTimeoutOrDuplicate},
		Description: "Its lifetime ended before it was issued: timeout-or-duplicate."},
	{Name: "invalid_input", code: scenarioInvalidInput, HTTPStatus: 200, ErrorCodes: []string{errcode.CodeInvalidResponse},
		Description: "Carries the sandbox prefix but no valid signature: invalid-input-response with null context and score 0."},
	{Name: "service_error", code: scenarioServiceError, HTTPStatus: 503, ErrorCodes: []string{"service-unavailable"},
		Description: "Simulates an unavailable owner: HTTP 503 {success:false,error:service-unavailable}; in the simulation the token is not consumed, so a retry sees the same; in production a 503 does not say whether it was (retry with an idempotency_key)."},
}

// SandboxScenarioList is the answer of GET /sandbox/scenarios.
type SandboxScenarioList struct {
	Scenarios []SandboxScenario `json:"scenarios" required:"true"`
}

// Scenarios lists the sandbox scenarios.
func Scenarios() *SandboxScenarioList { return &SandboxScenarioList{Scenarios: sandboxScenarios} }

// SandboxIssueInput asks for a sandbox token.
type SandboxIssueInput struct {
	SiteKey  string `json:"site_key" required:"true" doc:"A sandbox site's key."`
	Scenario string `json:"scenario" required:"true" enum:"success|low_score|action_mismatch|hostname_mismatch|remoteip_mismatch|replay|expired|invalid_input|service_error"`
	Action   string `json:"action" doc:"Action to bind (as the widget would)."`
	Hostname string `json:"hostname" doc:"Hostname to bind; default localhost."`
}

// SandboxIssueView is the answer of POST /sandbox/issue.
type SandboxIssueView struct {
	Token     string          `json:"token" required:"true" doc:"A sandbox response token (prefix sbx1_); production endpoints answer invalid-input-response."`
	Scenario  string          `json:"scenario" required:"true"`
	ExpiresIn int             `json:"expires_in" required:"true" doc:"Seconds until expiry (negative for the expired scenario)."`
	Expect    SandboxScenario `json:"expect" required:"true" doc:"What /sandbox/siteverify will answer."`
}

// SandboxIssue mints a sandbox token for a scenario; the sandbox site key
// is the caller's credential.
func (m *Module) SandboxIssue(cat *catalog.Catalog, in *SandboxIssueInput) (*SandboxIssueView, error) {
	site := cat.SiteByKey(in.SiteKey)
	if site == nil || !site.Sandbox() {
		return nil, ErrInvalidSitekey.With("a sandbox site key is required")
	}
	var sc *SandboxScenario
	for i := range sandboxScenarios {
		if sandboxScenarios[i].Name == in.Scenario {
			sc = &sandboxScenarios[i]
		}
	}
	if sc == nil {
		return nil, errcode.Field("scenario", "unknown scenario; see GET /sandbox/scenarios")
	}
	if !ValidAction(in.Action) {
		return nil, errcode.Field("action", "up to 64 of A-Z a-z 0-9 _ - . /")
	}
	hostname := in.Hostname
	if hostname == "" {
		hostname = "localhost"
	}
	if !ident.Hostname(hostname) {
		return nil, errcode.Field("hostname", "a lowercase hostname or IP literal")
	}
	k := m.Signer(cat, catalog.KeySandbox)
	if k == nil {
		return nil, errNoKey(catalog.KeySandbox)
	}
	ttl := min(max(site.TokenTTLSeconds, 30), 300)
	now := m.now().Unix()
	t := token.Response{ID: RandomID(), SiteID: site.ID, Hostname: hostname, Action: in.Action, Mode: token.ModeCheckbox,
		Score: 900, Issued: now, Expires: now + int64(ttl), Scenario: sc.code}
	switch sc.code {
	case scenarioLowScore:
		t.Mode, t.Score = token.ModeScoreEnforced, 100
	case scenarioActionMismatch:
		t.Action = sandboxOtherAction
	case scenarioHostnameMismatch:
		t.Hostname = sandboxOtherHost
	case scenarioRemoteIPMismatch:
		t.HasIP, t.IPHash = true, IPHash(k, sandboxBoundIP)
	case scenarioExpired:
		t.Issued, t.Expires = now-600, now-300
	case scenarioReplay:
		used := &actors.Redeem{ID: actors.MarkerKey(actors.SpaceSandboxTok, t.ID), Expires: t.Expires*1e9 + markerSkew}
		if err := m.ask.Ask(used.ID, used); err != nil {
			return nil, err
		}
	}
	text := t.Sign(k, token.SandboxPrefix)
	if sc.code == scenarioInvalidInput {
		junk := RandomID()
		text = token.SandboxPrefix + base64.RawURLEncoding.EncodeToString(junk[:])
	}
	return &SandboxIssueView{Token: text, Scenario: sc.Name, ExpiresIn: int(t.Expires - now), Expect: *sc}, nil
}
