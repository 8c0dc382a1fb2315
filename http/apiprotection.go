package http

import (
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/risk/apiprotection"
)

// API Protection (spec 2.4, 2.5, 4.5): transport only. Scoring, velocity,
// idempotency and feedback are risk/apiprotection's.

// APIAssessInput is the body of POST /api-protection/assess (spec 4.5).
type APIAssessInput struct {
	Secret string `json:"secret,omitempty" doc:"Site secret, when no scoped credential is sent as Authorization: Bearer."`
	apiprotection.AssessRequest
}

// APIFeedbackInput is the body of POST /api-protection/feedback.
type APIFeedbackInput struct {
	Secret string `json:"secret,omitempty"`
	apiprotection.FeedbackRequest
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

func (s *Server) apiProtectionAssess(c *Call) {
	var in APIAssessInput
	if !c.decode(&in) {
		return
	}
	ws, appID, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	res, err := s.mods.ap.Assess(c.cat, apiprotection.Caller{Workspace: ws, AppID: appID}, &in.AssessRequest)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}

func (s *Server) apiProtectionFeedback(c *Call) {
	var in APIFeedbackInput
	if !c.decode(&in) {
		return
	}
	ws, appID, ok := c.authSiteVerify(in.Secret)
	if !ok {
		return
	}
	res, err := s.mods.ap.Feedback(apiprotection.Caller{Workspace: ws, AppID: appID}, &in.FeedbackRequest)
	if err != nil {
		c.failErr(err)
		return
	}
	c.ok(res)
}
