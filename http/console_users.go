package http

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/http/console/users"
)

// Console users (http/console/users) and the audit log: the admin
// operations that create and manage the people who log in to the
// workspace console, and the read of who changed what.

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

// consoleLinkTTL is how long a one-time sign-in link works.
const consoleLinkTTL = 15 * time.Minute

func (s *Server) consoleUserRoutes() []Route {
	ws := "/workspaces/{workspace_id}/console-users"
	one := ws + "/{console_user_id}"
	a := []Auth{AuthAdmin}
	errs := append(append([]ErrorCode(nil), adminErrors...), ErrConflict,
		moduleCode(users.ErrInvalidEmail), moduleCode(users.ErrInvalidRole), moduleCode(users.ErrInvalidPassword))
	return []Route{
		idempotentCreate(Route{Method: "POST", Path: ws, Admin: true, ID: "createConsoleUser", Tag: "Admin", Auth: a,
			Summary: "Create a workspace console user with a password, or without one to get a one-time sign-in link (shown once).",
			Body:    &ConsoleUserInput{}, Status: 201, Result: &ConsoleUserView{}, Errors: errs, Handle: s.admin(s.createConsoleUser)}),
		{Method: "GET", Path: ws, Admin: true, ID: "listConsoleUsers", Tag: "Admin", Auth: a,
			Summary: "List a workspace's console users.", Result: &ConsoleUserList{}, Errors: adminErrors, Handle: s.admin(s.listConsoleUsers)},
		{Method: "PATCH", Path: one, Admin: true, ID: "updateConsoleUser", Tag: "Admin", Auth: a,
			Summary: "Change a console user's role or password; their open sessions see the new role at their next request.",
			Body:    &ConsoleUserInput{}, Result: &ConsoleUserView{}, Errors: errs, Handle: s.admin(s.updateConsoleUser)},
		{Method: "DELETE", Path: one, Admin: true, ID: "deleteConsoleUser", Tag: "Admin", Auth: a,
			Summary: "Delete a console user; their open sessions end at their next request.", Status: 204, Errors: adminErrors,
			Handle: s.admin(func(c *Call) {
				if w := c.workspace(); w != nil {
					if _, ok := c.apply(&catalog.DeleteConsoleUser{WorkspaceID: w.ID, ID: c.Param("console_user_id")}); ok {
						c.noContent()
					}
				}
			})},
		{Method: "POST", Path: one + "/sign-in-link", Admin: true, ID: "issueConsoleSignInLink", Tag: "Admin", Auth: a,
			Summary: "Issue a one-time sign-in link for a console user (shown once, valid 15 minutes); it replaces any earlier link.",
			Result:  &ConsoleUserView{}, Errors: adminErrors, Handle: s.admin(s.issueConsoleLink)},
		{Method: "GET", Path: "/audit", Admin: true, ID: "listAudit", Tag: "Admin", Auth: a,
			Summary: "The audit log, newest first: every change made through the admin API or the console (the last 2000, at most 90 days). Query: workspace_id, limit (1 to 2000, default 100).",
			Result:  &AuditList{}, Errors: adminErrors, Handle: s.admin(s.listAudit)},
	}
}

func consoleUserView(u *catalog.ConsoleUser, now time.Time) ConsoleUserView {
	return ConsoleUserView{ConsoleUserID: u.ID, WorkspaceID: u.WorkspaceID, Email: u.Email, Role: u.Role,
		HasPassword: u.PasswordHash != "", LinkPending: !u.LinkUntil.IsZero() && now.Before(u.LinkUntil),
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// newConsoleLink returns a one-time token, its stored hash and its URL.
func (s *Server) newConsoleLink() (string, catalog.Hash, string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("http: crypto/rand failed: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	return tok, catalog.HashSecret(tok), strings.TrimSuffix(s.cfg.BaseURL, "/") + "/console/link?t=" + tok
}

func (s *Server) createConsoleUser(c *Call) {
	w := c.workspace()
	var in ConsoleUserInput
	if w == nil || !c.decode(&in) {
		return
	}
	now := c.Now().UTC()
	createOnce(c, w.ID, &in, func() (catalog.Command, string, error) {
		if in.Email == nil || in.Role == nil {
			return nil, "", invalid("email", "email and role are required")
		}
		email, err := users.NormalizeEmail(*in.Email)
		if err == nil {
			err = users.ValidRole(*in.Role)
		}
		if err == nil && in.Password != nil {
			err = users.ValidPassword(*in.Password)
		}
		if err != nil {
			return nil, "", err
		}
		if c.cat.ConsoleUserByEmail(email) != nil {
			return nil, "", fmt.Errorf("%w: a console user with email %s exists", catalog.ErrConflict, email)
		}
		u := catalog.ConsoleUser{ID: uuid.NewString(), WorkspaceID: w.ID, Email: email, Role: *in.Role, CreatedAt: now, UpdatedAt: now}
		var link string
		if in.Password != nil {
			u.PasswordHash = users.Hash(*in.Password, users.Default)
		} else {
			_, u.LinkHash, link = s.newConsoleLink()
			u.LinkUntil = now.Add(consoleLinkTTL)
		}
		return &catalog.CreateConsoleUser{User: u}, link, nil
	}, func(u *catalog.ConsoleUser, link string) {
		out := consoleUserView(u, c.Now())
		if link != "" {
			out.SignInURL, out.SignInExpires = link, u.LinkUntil
		}
		c.json(201, out)
	})
}

func (s *Server) listConsoleUsers(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	out := ConsoleUserList{Users: []ConsoleUserView{}}
	now := c.Now()
	for _, u := range c.cat.ConsoleUsers {
		if u.WorkspaceID == w.ID {
			out.Users = append(out.Users, consoleUserView(u, now))
		}
	}
	sort.Slice(out.Users, func(i, j int) bool { return out.Users[i].Email < out.Users[j].Email })
	c.ok(out)
}

func (s *Server) consoleUser(c *Call) *catalog.ConsoleUser {
	w := c.workspace()
	if w == nil {
		return nil
	}
	u := c.cat.ConsoleUsers[c.Param("console_user_id")]
	if u == nil || u.WorkspaceID != w.ID {
		c.fail(ErrNotFound, "no console user "+c.Param("console_user_id"))
		return nil
	}
	return u
}

func (s *Server) updateConsoleUser(c *Call) {
	u := s.consoleUser(c)
	var in ConsoleUserInput
	if u == nil || !c.decode(&in) {
		return
	}
	if in.Email != nil {
		c.fail(ErrInvalidField, "email: cannot be changed; delete the user and create another")
		return
	}
	var p catalog.ConsoleUserPatch
	if in.Role != nil {
		if err := users.ValidRole(*in.Role); err != nil {
			c.failErr(err)
			return
		}
		p.Role = in.Role
	}
	if in.Password != nil {
		if err := users.ValidPassword(*in.Password); err != nil {
			c.failErr(err)
			return
		}
		h := users.Hash(*in.Password, users.Default)
		p.PasswordHash = &h
	}
	if v, ok := c.apply(&catalog.UpdateConsoleUser{WorkspaceID: u.WorkspaceID, ID: u.ID, Patch: p, At: c.Now().UTC()}); ok {
		c.ok(consoleUserView(v.(*catalog.ConsoleUser), c.Now()))
	}
}

func (s *Server) issueConsoleLink(c *Call) {
	u := s.consoleUser(c)
	if u == nil {
		return
	}
	now := c.Now().UTC()
	_, h, link := s.newConsoleLink()
	p := catalog.ConsoleUserPatch{LinkHash: &h, LinkUntil: now.Add(consoleLinkTTL)}
	if v, ok := c.apply(&catalog.UpdateConsoleUser{WorkspaceID: u.WorkspaceID, ID: u.ID, Patch: p, At: now}); ok {
		out := consoleUserView(v.(*catalog.ConsoleUser), now)
		out.SignInURL, out.SignInExpires = link, p.LinkUntil
		c.ok(out)
	}
}

func (s *Server) listAudit(c *Call) {
	limit := 100
	q := c.Ctx.QueryArgs()
	if v := q.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > catalog.MaxAuditEntries {
			c.fail(ErrInvalidField, "limit: 1 to "+strconv.Itoa(catalog.MaxAuditEntries))
			return
		}
		limit = n
	}
	ws := string(q.Peek("workspace_id"))
	out := AuditList{Entries: []AuditEntryView{}}
	log := c.cat.Audit
	for i := len(log) - 1; i >= 0 && len(out.Entries) < limit; i-- {
		e := &log[i]
		if ws != "" && e.WorkspaceID != ws {
			continue
		}
		out.Entries = append(out.Entries, AuditEntryView(*e))
	}
	c.ok(out)
}

// audit records a change in the replicated audit ring. It runs after the
// change answered; a failure to record is logged, never turned into a
// failure of the change that already happened.
func (s *Server) audit(e catalog.AuditEntry) {
	// The change is already committed; its record follows as its own
	// entry. A leader change can fail the apply without saying whether it
	// committed, so it is retried (the catalog applies a repeated record
	// once) until it lands or 10 s pass.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := s.store.Apply(ctx, &catalog.RecordAudit{Entry: e})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			s.log.Warn("audit record failed", "op", e.Operation, "actor", e.Actor, "request_id", e.RequestID, "err", err)
			return
		case <-time.After(wait):
		}
	}
}

// auditCall records an admin write that succeeded.
func (s *Server) auditCall(c *Call, r *Route, status int, actor, via string) {
	if !r.Admin || r.Method == "GET" || r.Method == "HEAD" || status >= 300 {
		return
	}
	s.audit(catalog.AuditEntry{At: s.clock().UTC(), Actor: actor, Via: via, Operation: r.ID, Method: r.Method,
		Path: string(c.Ctx.Path()), WorkspaceID: c.Param("workspace_id"), Status: status, RequestID: c.RequestID()})
}
