package console

import (
	"strings"

	"github.com/trustd/trustd/console/users"
)

// route is one console page or form action. Path segments in braces are
// parameters: {ws} is a workspace id (the permission check is made in that
// workspace), {id} and {sub} another record's id; every parameter is
// checked with validID before a handler sees it; {key} is a journey key
// (validKey), passed as the id.
type route struct {
	Method string
	Path   string
	Perm   users.Permission
	Handle func(c *Console, r *req)
}

type params struct{ ws, id, sub string }

func (rt *route) match(segs []string) (params, bool) {
	var p params
	pat := strings.Split(rt.Path, "/")
	if rt.Path == "" {
		pat = []string{""}
	}
	if len(pat) != len(segs) {
		return p, false
	}
	for i, want := range pat {
		got := segs[i]
		switch want {
		case "{key}":
			if !validKey(got) {
				return p, false
			}
			p.id = got
		case "{ws}", "{id}", "{sub}":
			if !validID(got) {
				return p, false
			}
			switch want {
			case "{ws}":
				p.ws = got
			case "{id}":
				p.id = got
			default:
				p.sub = got
			}
		default:
			if got != want {
				return p, false
			}
		}
	}
	return p, true
}

// tab is a page of a workspace, shown in the workspace's sub-navigation.
type tab struct {
	Slug, Title string
	Perm        users.Permission
}

// routes is every console page and action with the permission it needs.
// A module's pages are registered here, one line per page; workspace
// pages also get one line in tabs. Modules landing later (identity review
// queue, journeys, branding, messaging) add their lines below the marked
// comment at merge.
var routes = []route{
	{"GET", "", users.View, (*Console).overview},
	{"GET", "cluster", users.Admin, (*Console).cluster},
	{"GET", "metrics.json", users.Admin, (*Console).clusterMetricsJSON},
	{"GET", "workspaces", users.View, (*Console).workspaces},
	{"GET", "audit", users.View, (*Console).auditPage},
	{"GET", "account", users.View, (*Console).accountDefence},
	{"GET", "password", users.View, (*Console).myPassword},
	{"POST", "password", users.View, (*Console).changeMyPassword},
	{"GET", "workspaces/{ws}", users.View, func(c *Console, r *req) { c.workspace(r, r.params.ws, 200, "") }},
	{"POST", "workspaces/{ws}/sites", users.Edit, func(c *Console, r *req) { c.createSite(r, r.params.ws) }},
	{"POST", "workspaces/{ws}/sites/{id}/rotate-secret", users.Edit, func(c *Console, r *req) { c.rotateSecret(r, r.params.ws, r.params.id) }},
	{"POST", "workspaces/{ws}/sites/{id}", users.Edit, func(c *Console, r *req) { c.updateSite(r, r.params.ws, r.params.id) }},
	{"GET", "workspaces/{ws}/policies", users.View, func(c *Console, r *req) { c.policies(r, r.params.ws, 200, "", "") }},
	{"POST", "workspaces/{ws}/policies", users.Edit, (*Console).createPolicy},
	{"POST", "workspaces/{ws}/policies/{id}", users.Edit, func(c *Console, r *req) { c.updatePolicy(r, r.params.ws, r.params.id) }},
	{"GET", "workspaces/{ws}/policies/{id}/stats.json", users.View, (*Console).policyStatsJSON},
	{"GET", "workspaces/{ws}/approvals", users.View, (*Console).approvals},
	{"POST", "workspaces/{ws}/approvals/{id}/{sub}", users.Approve, (*Console).decideApproval},
	{"POST", "workspaces/{ws}/webhook-events/{id}/redeliver", users.Edit, (*Console).redeliver},
	{"GET", "workspaces/{ws}/webhooks/{id}/deliveries", users.View, (*Console).deliveries},
	{"GET", "workspaces/{ws}/users", users.Admin, (*Console).consoleUsers},
	{"POST", "workspaces/{ws}/users", users.Admin, (*Console).createConsoleUser},
	{"GET", "workspaces/{ws}/audit", users.View, func(c *Console, r *req) { c.auditOf(r, r.params.ws) }},
	// Pages of modules that land later: one line each, here.
	{"GET", "workspaces/{ws}/reviews", users.View, (*Console).reviews},
	{"POST", "workspaces/{ws}/reviews/{id}/resolve", users.Approve, (*Console).resolveReview},
	{"GET", "workspaces/{ws}/journeys", users.View, (*Console).journeys},
	{"POST", "workspaces/{ws}/journeys", users.Edit, (*Console).createJourney},
	{"GET", "workspaces/{ws}/journeys/{key}", users.View, (*Console).journey},
	{"POST", "workspaces/{ws}/journeys/{key}", users.Edit, (*Console).updateJourney},
	{"POST", "workspaces/{ws}/journeys/{key}/delete", users.Edit, (*Console).deleteJourney},
	{"GET", "workspaces/{ws}/branding", users.View, (*Console).branding},
	{"POST", "workspaces/{ws}/branding", users.Edit, (*Console).createBranding},
	{"GET", "workspaces/{ws}/branding/{id}", users.View, (*Console).brandingProfile},
	{"POST", "workspaces/{ws}/branding/{id}", users.Edit, (*Console).updateBranding},
	{"POST", "workspaces/{ws}/branding/{id}/logo", users.Edit, (*Console).uploadLogo},
	{"POST", "workspaces/{ws}/branding/{id}/logo/delete", users.Edit, (*Console).deleteLogo},
	{"GET", "workspaces/{ws}/messaging", users.View, (*Console).messaging},
	// Last: the generic list pages (listpages.go) under any other slug.
	{"GET", "workspaces/{ws}/{id}", users.View, (*Console).listPage},
}

// tabs are a workspace's pages in its sub-navigation (listPages add theirs).
var tabs = []tab{
	{"", "Sites and apps", users.View},
	{"policies", "Rate-limit policies", users.View},
	{"approvals", "Agents and approvals", users.View},
	{"reviews", "Identity reviews", users.View},
	{"journeys", "Journeys", users.View},
	{"branding", "Branding", users.View},
	{"messaging", "Messaging preflight", users.View},
	{"users", "Console users", users.Admin},
	{"audit", "Audit log", users.View},
}
