package catalog

import (
	"fmt"
	"time"
)

// MaxConsoleUsersPerWorkspace caps the console users one workspace holds:
// only the cluster admin creates them, but the cap keeps a script gone
// wrong from growing replicated state without bound.
const MaxConsoleUsersPerWorkspace = 100

// ConsoleUser is a person who logs in to the workspace console of one
// workspace with a role (viewer, editor or approver). The password is
// stored only as a memory-hard KDF string (argon2id, PHC format, made by
// console/users); a one-time sign-in link only as the SHA-256 of its
// token with an expiry. Emails are unique across the cluster (lower case),
// so a login names exactly one user.
type ConsoleUser struct {
	ID           string    `json:"console_user_id"`
	WorkspaceID  string    `json:"workspace_id"`
	Email        string    `json:"email"`
	Role         string    `json:"role"`
	PasswordHash string    `json:"password_hash,omitempty"`
	LinkHash     Hash      `json:"link_hash"`
	LinkUntil    time.Time `json:"link_until,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// ConsoleUserByEmail returns the user with that (lower-case) email, or nil.
func (c *Catalog) ConsoleUserByEmail(email string) *ConsoleUser {
	for _, u := range c.ConsoleUsers {
		if u.Email == email {
			return u
		}
	}
	return nil
}

// CreateConsoleUser adds a console user to a workspace.
type CreateConsoleUser struct {
	User ConsoleUser `json:"user"`
}

func (*CreateConsoleUser) Kind() string { return "console_user.create" }
func (c *CreateConsoleUser) Apply(tx *Tx) (any, error) {
	u := c.User
	if _, ok := tx.next.Workspaces[u.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, u.WorkspaceID)
	}
	if _, ok := tx.next.ConsoleUsers[u.ID]; ok {
		return nil, fmt.Errorf("%w: console user %s exists", ErrConflict, u.ID)
	}
	n := 0
	for _, o := range tx.next.ConsoleUsers {
		if o.Email == u.Email {
			return nil, fmt.Errorf("%w: a console user with email %s exists", ErrConflict, u.Email)
		}
		if o.WorkspaceID == u.WorkspaceID {
			n++
		}
	}
	if n >= MaxConsoleUsersPerWorkspace {
		return nil, fmt.Errorf("%w: the workspace holds %d console users, the most allowed", ErrConflict, n)
	}
	Writable(tx, "console_users", &tx.next.ConsoleUsers)[u.ID] = &u
	return &u, nil
}

// ConsoleUserPatch holds what an update may change; nil or zero means
// unchanged. A new LinkHash (with LinkUntil) replaces any earlier link.
type ConsoleUserPatch struct {
	Role         *string   `json:"role,omitzero"`
	PasswordHash *string   `json:"password_hash,omitzero"`
	LinkHash     *Hash     `json:"link_hash,omitzero"`
	LinkUntil    time.Time `json:"link_until,omitzero"`
}

// UpdateConsoleUser changes a console user's role, password or sign-in link.
type UpdateConsoleUser struct {
	WorkspaceID string           `json:"workspace_id"`
	ID          string           `json:"console_user_id"`
	Patch       ConsoleUserPatch `json:"patch"`
	At          time.Time        `json:"at"`
}

func (*UpdateConsoleUser) Kind() string { return "console_user.update" }
func (c *UpdateConsoleUser) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.ConsoleUsers[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: console user %s", ErrNotFound, c.ID)
	}
	u := *cur
	set(&u.Role, c.Patch.Role)
	set(&u.PasswordHash, c.Patch.PasswordHash)
	if c.Patch.LinkHash != nil {
		u.LinkHash, u.LinkUntil = *c.Patch.LinkHash, c.Patch.LinkUntil
	}
	u.UpdatedAt = c.At
	Writable(tx, "console_users", &tx.next.ConsoleUsers)[u.ID] = &u
	return &u, nil
}

// DeleteConsoleUser removes a console user; their console sessions end at
// their next request, which finds no user.
type DeleteConsoleUser struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"console_user_id"`
}

func (*DeleteConsoleUser) Kind() string { return "console_user.delete" }
func (c *DeleteConsoleUser) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.ConsoleUsers[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: console user %s", ErrNotFound, c.ID)
	}
	delete(Writable(tx, "console_users", &tx.next.ConsoleUsers), c.ID)
	return nil, nil
}

// UseConsoleLink consumes a one-time sign-in link: the user whose link
// hash matches, unexpired, has it cleared and is returned. Raft applies
// commands in one order everywhere, so of any number of concurrent uses
// of one link, through any nodes, exactly one succeeds.
type UseConsoleLink struct {
	LinkHash Hash      `json:"link_hash"`
	At       time.Time `json:"at"`
}

func (*UseConsoleLink) Kind() string { return "console_user.use_link" }
func (c *UseConsoleLink) Apply(tx *Tx) (any, error) {
	var zero Hash
	if c.LinkHash == zero {
		return nil, fmt.Errorf("%w: sign-in link", ErrNotFound)
	}
	for _, cur := range tx.next.ConsoleUsers {
		if cur.LinkUntil.IsZero() || !cur.LinkHash.Equal(c.LinkHash) {
			continue
		}
		if !c.At.Before(cur.LinkUntil) {
			return nil, fmt.Errorf("%w: sign-in link expired", ErrNotFound)
		}
		u := *cur
		u.LinkHash, u.LinkUntil = zero, time.Time{}
		Writable(tx, "console_users", &tx.next.ConsoleUsers)[u.ID] = &u
		return &u, nil
	}
	return nil, fmt.Errorf("%w: sign-in link", ErrNotFound)
}

func deleteConsoleUsersOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "console_users", &tx.next.ConsoleUsers, workspaceID, func(u *ConsoleUser) string { return u.WorkspaceID })
}
