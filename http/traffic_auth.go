package http

import (
	"github.com/trustd/trustd/catalog"
)

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
	if !c.admitCredential(site.ID, ws.ID) {
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
	if !c.admitCredential(app.ID, ws.ID) {
		return trafficCaller{}, false
	}
	return trafficCaller{ws: ws, appID: app.ID}, true
}
