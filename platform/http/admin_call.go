package http

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// What every admin operation shares, whichever area declares it: the
// admin token check, the errors, replicating a command, resolving the
// Workspace and a record of it. The tenancy records themselves are
// platform/catalog/api's.

// NewSecret returns a random secret with a readable prefix.
func NewSecret(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

var adminErrors = []ErrorCode{ErrUnauthorized, ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge, ErrNotFound, ErrUnavailable}

// Apply replicates cmd and answers any error itself; ok reports success.
func (c *Call) Apply(cmd catalog.Command) (any, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.s.store.Apply(ctx, cmd)
	if err != nil {
		c.FailErr(err)
		return nil, false
	}
	return v, true
}

// Workspace resolves the {workspace_id} parameter, answering 404 itself.
func (c *Call) Workspace() *catalog.Workspace {
	w := c.cat.Workspaces[c.Param("workspace_id")]
	if w == nil {
		c.fail(ErrNotFound, "no workspace "+c.Param("workspace_id"))
	}
	return w
}

// inWorkspace resolves {workspace_id} and the {param} id of table to a
// record of that workspace, answering 404 itself (a record of another
// Workspace is as absent as a missing one). owner names a record's
// Workspace.
func inWorkspace[T any](c *Call, table map[string]*T, param, what string, owner func(*T) string) *T {
	w := c.Workspace()
	if w == nil {
		return nil
	}
	v := table[c.Param(param)]
	if v == nil || owner(v) != w.ID {
		c.fail(ErrNotFound, "no "+what+" "+c.Param(param)+" in workspace "+w.ID)
		return nil
	}
	return v
}

func ValidName(field string, v *string) error {
	if v == nil || len(strings.TrimSpace(*v)) == 0 || len(*v) > 100 {
		return Invalid(field, "required, 1 to 100 characters")
	}
	return nil
}
