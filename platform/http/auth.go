package http

import (
	"github.com/trustd/trustd/platform/catalog"
)

// The authenticators of server-side operations: every module's route
// file calls one of these; none writes its own.

// trafficCaller is who called a traffic-control operation (leases,
// admissions): the workspace and the application, a site or a registered
// mobile app, whose credential authenticated the call.
type trafficCaller struct {
	ws    *catalog.Workspace
	appID string
}

// siteCaller authenticates a site's private secret, from Authorization:
// Bearer or else the body field secret, then applies the per-credential
// ingress limit. It answers the error itself when it returns false.
func (c *Call) siteCaller(bodySecret string) (trafficCaller, bool) {
	secret := c.bearer()
	if secret == "" {
		secret = bodySecret
	}
	if secret == "" {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "a site secret is required (Authorization: Bearer <secret>, or the body field secret)")
		return trafficCaller{}, false
	}
	site := c.cat.SiteBySecret(secret, c.Now())
	if site == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "the site secret is not valid")
		return trafficCaller{}, false
	}
	if site.Sandbox() {
		c.fail(ErrForbidden, "a sandbox secret works only with the sandbox endpoints")
		return trafficCaller{}, false
	}
	ws := c.cat.Workspaces[site.WorkspaceID]
	if ws == nil {
		c.fail(ErrUnauthorized, "the site secret is not valid")
		return trafficCaller{}, false
	}
	if !c.AdmitCredential(site.ID, ws.ID) {
		return trafficCaller{}, false
	}
	return trafficCaller{ws: ws, appID: site.ID}, true
}

// mobileCaller authenticates a mobile app's server secret (Authorization:
// Bearer) and checks the platform and app_id the body declares against its
// registration (spec section 5): a mismatch is invalid-app-identity.
func (c *Call) mobileCaller(platform, appID string) (trafficCaller, bool) {
	secret := c.bearer()
	if secret == "" {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "a mobile server secret is required (Authorization: Bearer <secret>)")
		return trafficCaller{}, false
	}
	app := c.cat.AppBySecret(secret)
	if app == nil {
		c.Ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="trustd"`)
		c.fail(ErrUnauthorized, "the mobile server secret is not valid")
		return trafficCaller{}, false
	}
	if platform != app.Platform || appID != app.AppID {
		c.fail(ErrInvalidAppIdentity, "platform and app_id do not match the registered application")
		return trafficCaller{}, false
	}
	ws := c.cat.Workspaces[app.WorkspaceID]
	if ws == nil {
		c.fail(ErrUnauthorized, "the mobile server secret is not valid")
		return trafficCaller{}, false
	}
	if !c.AdmitCredential(app.ID, ws.ID) {
		return trafficCaller{}, false
	}
	return trafficCaller{ws: ws, appID: app.ID}, true
}

// AuthSiteVerify authenticates scope site.verify: a scoped credential as
// bearer, or a site secret in the body. appID is the site's id, or "" for
// a workspace credential.
func (c *Call) AuthSiteVerify(bodySecret string) (ws *catalog.Workspace, appID string, ok bool) {
	ws, appID, _, ok = c.AuthServer(bodySecret, "site.verify", false)
	return ws, appID, ok
}

// AuthServer authenticates a server operation: a scoped credential with
// scope as bearer, or a site's private secret in the body. A sandbox site
// secret passes only when allowSandbox (the operation then simulates);
// sandbox reports that it did.
func (c *Call) AuthServer(bodySecret, scope string, allowSandbox bool) (ws *catalog.Workspace, appID string, sandbox, ok bool) {
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
		if ws == nil || !c.AdmitCredential(cr.ID, cr.WorkspaceID) {
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
	if !c.AdmitCredential(site.ID, ws.ID) {
		return nil, "", false, false
	}
	return ws, site.ID, site.Sandbox(), true
}
