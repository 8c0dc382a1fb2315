package api

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// Console users (console/users) and the audit log: the admin operations
// that create and manage the people who log in to the workspace console,
// and the read of who changed what. Console users are a workspace-owned
// collection on the transport's generic admin Resource; only the one-time
// sign-in link is an operation of its own.

// ConsoleUserInput creates or changes a console user.
type ConsoleUserInput struct {
	Email    *string `json:"email,omitempty" doc:"The user's email (their login name), unique across the cluster; required on create, not changeable."`
	Role     *string `json:"role,omitempty" enum:"viewer|editor|approver" doc:"viewer reads; editor also changes configuration; approver also decides agent approval requests. Required on create."`
	Password *string `json:"password,omitempty" doc:"12 to 256 bytes, stored only as an argon2id hash. Omit it on create to get a one-time sign-in link instead."`
}

// ConsoleUserView is a console user as the admin API shows it: never a
// password or its hash.
type ConsoleUserView struct {
	ConsoleUserID string    `json:"console_user_id" required:"true" format:"uuid"`
	WorkspaceID   string    `json:"workspace_id" required:"true" format:"uuid"`
	Email         string    `json:"email" required:"true"`
	Role          string    `json:"role" required:"true" enum:"viewer|editor|approver"`
	HasPassword   bool      `json:"has_password" required:"true"`
	LinkPending   bool      `json:"sign_in_link_pending" required:"true" doc:"A one-time sign-in link was issued and is neither used nor expired."`
	CreatedAt     time.Time `json:"created_at" required:"true"`
	UpdatedAt     time.Time `json:"updated_at" required:"true"`
	SignInURL     string    `json:"sign_in_url,omitempty" doc:"Only in the answer that issued it: a one-time link, valid 15 minutes, that logs the user in once."`
	SignInExpires time.Time `json:"sign_in_expires_at,omitzero"`
}

// ConsoleUserList is a workspace's console users.
type ConsoleUserList struct {
	Users []ConsoleUserView `json:"console_users" required:"true"`
}

// AuditEntryView is one audit record.
type AuditEntryView struct {
	Seq         uint64    `json:"seq" required:"true"`
	At          time.Time `json:"at" required:"true"`
	Actor       string    `json:"actor" required:"true" doc:"admin-token, or console:<email> (<role>) for a console user, or console:admin-token."`
	Via         string    `json:"via" required:"true" enum:"api|console"`
	Operation   string    `json:"operation" required:"true" doc:"The admin operation id (e.g. createSite), or consoleLogin / consoleLinkLogin for a console login."`
	Method      string    `json:"method" required:"true"`
	Path        string    `json:"path" required:"true"`
	WorkspaceID string    `json:"workspace_id,omitempty"`
	Status      int       `json:"status" required:"true"`
	RequestID   string    `json:"request_id,omitempty"`
}

// AuditList is the audit log, newest first.
type AuditList struct {
	Entries []AuditEntryView `json:"entries" required:"true"`
}

// linkTTL is how long a one-time sign-in link works.
const linkTTL = 15 * time.Minute

// usersAPI serves the console-user and audit admin operations.
type usersAPI struct {
	// baseURL is the node's public address, the base of sign-in links.
	baseURL string
}

func (x usersAPI) routes() []kernel.Route {
	one := "/workspaces/{workspace_id}/console-users/{console_user_id}"
	a := []kernel.Auth{kernel.AuthAdmin}
	admin := kernel.AdminErrors()
	invalid := []kernel.ErrorCode{kernel.ErrConflict, kernel.ModuleCode(users.ErrInvalidEmail),
		kernel.ModuleCode(users.ErrInvalidRole), kernel.ModuleCode(users.ErrInvalidPassword)}
	res := &kernel.Resource[catalog.ConsoleUser, ConsoleUserInput, ConsoleUserView, ConsoleUserList]{
		What: "console user", Path: "/workspaces/{workspace_id}/console-users", Param: "console_user_id",
		ID: "ConsoleUser", IDs: "ConsoleUsers", NoGet: true,
		Summary: map[string]string{
			"create": "Create a workspace console user with a password, or without one to get a one-time sign-in link (shown once).",
			"list":   "List a workspace's console users.",
			"update": "Change a console user's role or password; their open sessions see the new role at their next request.",
			"delete": "Delete a console user; their open sessions end at their next request.",
		},
		CreateErrors: invalid, UpdateErrors: invalid,
		Table:  func(cat *catalog.Catalog) map[string]*catalog.ConsoleUser { return cat.ConsoleUsers },
		Owner:  func(u *catalog.ConsoleUser) string { return u.WorkspaceID },
		Build:  x.build,
		Create: func(u catalog.ConsoleUser) catalog.Command { return &catalog.CreateConsoleUser{User: u} },
		Update: update,
		Delete: func(u *catalog.ConsoleUser, _ time.Time) catalog.Command {
			return &catalog.DeleteConsoleUser{WorkspaceID: u.WorkspaceID, ID: u.ID}
		},
		View: func(c *kernel.Call, u *catalog.ConsoleUser, link string) *ConsoleUserView {
			v := userView(u, c.Now())
			if link != "" {
				v.SignInURL, v.SignInExpires = link, u.LinkUntil
			}
			return &v
		},
		SortID: func(v *ConsoleUserView) string { return v.Email },
		List:   func(v []ConsoleUserView) *ConsoleUserList { return &ConsoleUserList{Users: v} },
	}
	return append(res.Routes(),
		kernel.Route{Method: "POST", Path: one + "/sign-in-link", Admin: true, ID: "issueConsoleSignInLink", Tag: "Admin", Auth: a,
			Summary: "Issue a one-time sign-in link for a console user (shown once, valid 15 minutes); it replaces any earlier link.",
			Result:  &ConsoleUserView{}, Errors: admin, Handle: kernel.AdminOnly(x.issueLink)},
		kernel.Route{Method: "GET", Path: "/audit", Admin: true, ID: "listAudit", Tag: "Admin", Auth: a,
			Summary: "The audit log, newest first: every change made through the admin API or the console (the last 2000, at most 90 days). Query: workspace_id, limit (1 to 2000, default 100).",
			Result:  &AuditList{}, Errors: admin, Handle: kernel.AdminOnly(listAudit)},
	)
}

// build validates a create (cur nil) or a change of cur. A new user
// without a password gets a one-time sign-in link, its URL the create's
// once-shown secret.
func (x usersAPI) build(c *kernel.Call, in *ConsoleUserInput, cur *catalog.ConsoleUser, workspaceID string) (catalog.ConsoleUser, string, error) {
	now := c.Now().UTC()
	if cur != nil {
		if in.Email != nil {
			return catalog.ConsoleUser{}, "", kernel.Invalid("email", "cannot be changed; delete the user and create another")
		}
		u := *cur
		if in.Role != nil {
			if err := users.ValidRole(*in.Role); err != nil {
				return u, "", err
			}
			u.Role = *in.Role
		}
		if in.Password != nil {
			if err := users.ValidPassword(*in.Password); err != nil {
				return u, "", err
			}
			u.PasswordHash = users.Hash(*in.Password, users.Default)
		}
		u.UpdatedAt = now
		return u, "", nil
	}
	if in.Email == nil || in.Role == nil {
		return catalog.ConsoleUser{}, "", kernel.Invalid("email", "email and role are required")
	}
	email, err := users.NormalizeEmail(*in.Email)
	if err == nil {
		err = users.ValidRole(*in.Role)
	}
	if err == nil && in.Password != nil {
		err = users.ValidPassword(*in.Password)
	}
	if err != nil {
		return catalog.ConsoleUser{}, "", err
	}
	if c.Catalog().ConsoleUserByEmail(email) != nil {
		return catalog.ConsoleUser{}, "", fmt.Errorf("%w: a console user with email %s exists", catalog.ErrConflict, email)
	}
	u := catalog.ConsoleUser{ID: uuid.NewString(), WorkspaceID: workspaceID, Email: email, Role: *in.Role, CreatedAt: now, UpdatedAt: now}
	var link string
	if in.Password != nil {
		u.PasswordHash = users.Hash(*in.Password, users.Default)
	} else {
		_, u.LinkHash, link = x.newLink()
		u.LinkUntil = now.Add(linkTTL)
	}
	return u, link, nil
}

// update is the patch of the fields the input changed (build checked
// them and hashed a new password into u).
func update(in *ConsoleUserInput, u catalog.ConsoleUser) catalog.Command {
	var p catalog.ConsoleUserPatch
	if in.Role != nil {
		p.Role = &u.Role
	}
	if in.Password != nil {
		p.PasswordHash = &u.PasswordHash
	}
	return &catalog.UpdateConsoleUser{WorkspaceID: u.WorkspaceID, ID: u.ID, Patch: p, At: u.UpdatedAt}
}

func userView(u *catalog.ConsoleUser, now time.Time) ConsoleUserView {
	return ConsoleUserView{ConsoleUserID: u.ID, WorkspaceID: u.WorkspaceID, Email: u.Email, Role: u.Role,
		HasPassword: u.PasswordHash != "", LinkPending: !u.LinkUntil.IsZero() && now.Before(u.LinkUntil),
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// newLink returns a one-time token, its stored hash and its URL.
func (x usersAPI) newLink() (string, catalog.Hash, string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: crypto/rand failed: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	return tok, catalog.HashSecret(tok), strings.TrimSuffix(x.baseURL, "/") + "/console/link?t=" + tok
}

func (x usersAPI) issueLink(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	u := c.Catalog().ConsoleUsers[c.Param("console_user_id")]
	if u == nil || u.WorkspaceID != w.ID {
		c.Fail(kernel.ErrNotFound, "no console user "+c.Param("console_user_id"))
		return
	}
	now := c.Now().UTC()
	_, h, link := x.newLink()
	p := catalog.ConsoleUserPatch{LinkHash: &h, LinkUntil: now.Add(linkTTL)}
	if v, ok := c.Apply(&catalog.UpdateConsoleUser{WorkspaceID: u.WorkspaceID, ID: u.ID, Patch: p, At: now}); ok {
		out := userView(v.(*catalog.ConsoleUser), now)
		out.SignInURL, out.SignInExpires = link, p.LinkUntil
		c.OK(out)
	}
}

func listAudit(c *kernel.Call) {
	limit := 100
	q := c.Ctx.QueryArgs()
	if v := q.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > catalog.MaxAuditEntries {
			c.Fail(kernel.ErrInvalidField, "limit: 1 to "+strconv.Itoa(catalog.MaxAuditEntries))
			return
		}
		limit = n
	}
	ws := string(q.Peek("workspace_id"))
	out := AuditList{Entries: []AuditEntryView{}}
	log := c.Catalog().Audit
	for i := len(log) - 1; i >= 0 && len(out.Entries) < limit; i-- {
		e := &log[i]
		if ws != "" && e.WorkspaceID != ws {
			continue
		}
		out.Entries = append(out.Entries, AuditEntryView(*e))
	}
	c.OK(out)
}
