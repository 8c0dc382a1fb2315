package api

import (
	"context"
	"time"

	"github.com/trustd/trustd/console"
	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// backend is the console's Backend: the transport's admin operations and
// token check, console users' logins over the catalog, the login buckets
// in the cluster's actors and the login widget over the verify module.
type backend struct{ d Deps }

func (b backend) CheckAdminToken(tok string) bool { return b.d.Kernel.CheckAdminToken(tok) }

func (b backend) Admin(actor, method, path string, body []byte) (int, []byte) {
	return b.d.Kernel.RunAdmin(actor, method, path, body)
}

// UserLogin checks a console user's password with argon2id (at most two
// hashes at once per node). An unknown email costs one hash too, so the
// answer time does not say whether the address exists.
func (b backend) UserLogin(email, password string) (console.Principal, bool) {
	u := b.d.Store.Catalog().ConsoleUserByEmail(email)
	if u == nil || u.PasswordHash == "" {
		return console.Principal{}, users.VerifyMissing(password)
	}
	if !users.Verify(u.PasswordHash, password) {
		return console.Principal{}, false
	}
	return principal(u), true
}

// LinkLogin consumes a one-time sign-in link through Raft: of concurrent
// uses of one link on any nodes, exactly one logs in.
func (b backend) LinkLogin(token string) (console.Principal, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := b.d.Store.Apply(ctx, &catalog.UseConsoleLink{LinkHash: catalog.HashSecret(token), At: b.d.Clock().UTC()})
	if err != nil {
		return console.Principal{}, false
	}
	return principal(v.(*catalog.ConsoleUser)), true
}

func (b backend) User(id string) (console.Principal, bool) {
	u := b.d.Store.Catalog().ConsoleUsers[id]
	if u == nil {
		return console.Principal{}, false
	}
	return principal(u), true
}

func principal(u *catalog.ConsoleUser) console.Principal {
	return console.Principal{UserID: u.ID, Email: u.Email, WorkspaceID: u.WorkspaceID, Role: u.Role}
}

// TakeLogin takes cost tokens (0: reads) from the console sign-in
// guard's bucket key on its owner node: the same bucket op
// (actors.Reserve) the rate-limit check uses, so a login budget is shared
// by every node of the cluster. The policy is the guard's
// (console/login).
func (b backend) TakeLogin(key string, cfg ratelimit.BucketConfig, cost int64) (bool, int64, time.Duration, error) {
	op := &actors.Reserve{Key: actors.SpaceConsoleLogin + key, Bucket: cfg, Cost: cost}
	if err := b.d.Router.Ask(op.Key, op); err != nil {
		return false, 0, 0, err
	}
	if op.OK {
		return true, op.Remaining, 0, nil
	}
	return false, op.Remaining, time.Duration(op.RetryAfterNs), nil
}

// Audit records a console login: consoleLogin (password or admin token,
// POST /console/login) or consoleLinkLogin (POST /console/link).
func (b backend) Audit(actor, operation, workspaceID string) {
	path := "/console/login"
	if operation == "consoleLinkLogin" {
		path = "/console/link"
	}
	b.d.Kernel.Audit(catalog.AuditEntry{At: b.d.Clock().UTC(), Actor: actor, Via: "console", Operation: operation,
		Method: "POST", Path: path, WorkspaceID: workspaceID, Status: 303})
}

// site is the site whose widget guards the console login: the one
// SiteID names or, on a dev node without one, the dev site (seeded for
// localhost), so a dev account past its failures can still be
// challenged. nil when there is none, or it is a sandbox site.
func (b backend) site(cat *catalog.Catalog) *catalog.Site {
	var site *catalog.Site
	if id := b.d.SiteID; id != "" {
		site = cat.Sites[id]
	} else if b.d.Dev && b.d.DemoSite != nil {
		if key, _ := b.d.DemoSite(); key != "" {
			site = cat.SiteByKey(key)
		}
	}
	if site == nil || site.Sandbox() {
		return nil
	}
	return site
}

// HumanSite is the site key of the console's login widget, read from the
// catalog at each login page.
func (b backend) HumanSite() (string, bool) {
	site := b.site(b.d.Store.Catalog())
	if site == nil {
		return "", false
	}
	return site.SiteKey, true
}

// VerifyHuman redeems a login form's widget token for the console site:
// once, for the action console-login, bound to the client address. err
// when the token's owner cannot answer.
func (b backend) VerifyHuman(response, remoteIP string) (bool, error) {
	cat := b.d.Store.Catalog()
	site := b.site(cat)
	if site == nil || response == "" || len(response) > 4096 {
		return false, nil
	}
	return b.d.Human.VerifyHuman(cat, site, response, remoteIP, console.LoginAction)
}
