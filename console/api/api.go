// Package api is the console area's adapter: it builds the workspace
// console (package console, the pages) over a backend of the node's
// admin API, catalog and buckets, and exports the console-user and audit
// admin operations. It decides nothing the console or console/users do
// not, and constructs no product module: node/ hands it the transport's
// in-process admin runner (Kernel) and the verify module's siteverify
// (Human) through the small interfaces below.
package api

import (
	"context"
	"strings"
	"time"

	"github.com/trustd/trustd/console"
	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// AreaConsole names the console area, which places its admin operations
// in the contract documents.
const AreaConsole = "console"

// Kernel is what the console takes from the transport: the admin token
// check, the admin operations run in-process for a logged-in session,
// and the audit ring (*http.Server). node/ builds the server after the
// area, so it hands in a Kernel that is bound before the first request.
type Kernel interface {
	CheckAdminToken(token string) bool
	RunAdmin(actor, method, path string, body []byte) (status int, answer []byte)
	Audit(e catalog.AuditEntry)
}

// Human redeems a human-verification response token of site as
// /siteverify does (once, for action, bound to remoteIP); err when the
// token's owner cannot answer. node/ satisfies it with the verify module.
type Human interface {
	VerifyHuman(cat *catalog.Catalog, site *catalog.Site, response, remoteIP, action string) (bool, error)
}

// Store is the replicated state the console's logins read and write.
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
}

// Asker reaches per-key actor state on its owner node (cluster.Router).
type Asker interface {
	Ask(key string, op actors.Op) error
}

// Deps are what the console area needs, built by node/.
type Deps struct {
	Kernel Kernel
	Human  Human
	Store  Store
	Router Asker
	// BaseURL is the node's public address (sign-in links; https makes
	// the session cookie Secure).
	BaseURL string
	// NodeID and Version are shown on the overview.
	NodeID, Version string
	// Dev relaxes the login widget to accounts past their failures and,
	// without SiteID, protects the login with the dev site (DemoSite).
	Dev bool
	// SiteID names the site whose widget protects the login form; unset
	// and not Dev, the console's login form is closed.
	SiteID   string
	DemoSite func() (siteKey, secret string)
	// Clock is the time source; default time.Now.
	Clock func() time.Time
}

// Areas are the console area's admin operations and its pages.
func Areas(d Deps) []kernel.Area {
	if d.Clock == nil {
		d.Clock = time.Now
	}
	ui := console.New(console.Config{NodeID: d.NodeID, Version: d.Version,
		SecureCookies: strings.HasPrefix(d.BaseURL, "https://"), Clock: d.Clock, RequireHuman: !d.Dev}, backend{d})
	return []kernel.Area{{Name: AreaConsole, Routes: usersAPI{baseURL: d.BaseURL}.routes(), Errors: users.Errors,
		Pages: &kernel.Pages{Prefix: console.Prefix, Serve: ui.Serve}}}
}
