package http

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/catalog"
)

// resource is the one admin CRUD path of a workspace-owned record kind R
// (list, get, create, update, delete under /workspaces/{workspace_id}/…):
// each kind supplies only what differs — where its records live, how an
// input becomes a validated record, and its catalog commands and view.
// In is the create/patch body, V the answer of one record, L the list
// answer.
type resource[R, In, V, L any] struct {
	what  string // "rate-limit policy", for 404 messages and summaries
	path  string // the collection path, e.g. "/workspaces/{workspace_id}/rate-limit-policies"
	param string // the id path parameter, e.g. "policy_id"
	id    string // the operation-id noun: "RateLimitPolicy" → createRateLimitPolicy, …
	ids   string // its plural for list: "RateLimitPolicies"

	table func(*catalog.Catalog) map[string]*R
	owner func(*R) string
	// build turns a decoded input into the record to store; cur is nil on
	// create (defaults apply) and the current record on update (a patch).
	build func(c *Call, in *In, cur *R, workspaceID string) (R, error)
	// stamp sets the record's id and times: a new id and creation time
	// when cur is nil, else cur's.
	stamp  func(r, cur *R, now time.Time)
	create func(R) catalog.Command
	update func(R) catalog.Command
	delete func(*R) catalog.Command
	view   func(*R) *V
	sortID func(*V) string
	list   func([]V) *L
}

// find resolves {workspace_id} and the record's id, answering 404 itself.
func (r *resource[R, In, V, L]) find(c *Call) *R {
	return inWorkspace(c, r.table(c.cat), r.param, r.what, r.owner)
}

func (r *resource[R, In, V, L]) handleCreate(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	var in In
	if !c.decode(&in) {
		return
	}
	rec, err := r.build(c, &in, nil, w.ID)
	if err != nil {
		c.failErr(err)
		return
	}
	r.stamp(&rec, nil, c.Now().UTC())
	if v, ok := c.apply(r.create(rec)); ok {
		c.ok(r.view(v.(*R)))
	}
}

func (r *resource[R, In, V, L]) handleUpdate(c *Call) {
	cur := r.find(c)
	if cur == nil {
		return
	}
	var in In
	if !c.decode(&in) {
		return
	}
	rec, err := r.build(c, &in, cur, r.owner(cur))
	if err != nil {
		c.failErr(err)
		return
	}
	r.stamp(&rec, cur, c.Now().UTC())
	if v, ok := c.apply(r.update(rec)); ok {
		c.ok(r.view(v.(*R)))
	}
}

func (r *resource[R, In, V, L]) handleList(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	views := []V{}
	for _, rec := range r.table(c.cat) {
		if r.owner(rec) == w.ID {
			views = append(views, *r.view(rec))
		}
	}
	sort.Slice(views, func(i, j int) bool { return r.sortID(&views[i]) < r.sortID(&views[j]) })
	c.ok(r.list(views))
}

func (r *resource[R, In, V, L]) handleGet(c *Call) {
	if rec := r.find(c); rec != nil {
		c.ok(r.view(rec))
	}
}

func (r *resource[R, In, V, L]) handleDelete(c *Call) {
	if rec := r.find(c); rec != nil {
		if _, ok := c.apply(r.delete(rec)); ok {
			c.noContent()
		}
	}
}

// routes are the five admin operations of the kind.
func (r *resource[R, In, V, L]) routes(s *Server) []Route {
	a := []Auth{AuthAdmin}
	one := r.path + "/{" + r.param + "}"
	return []Route{
		{Method: "POST", Path: r.path, Admin: true, ID: "create" + r.id, Tag: "Admin", Auth: a, Summary: "Create a " + r.what + ".",
			Body: new(In), Status: 201, Result: new(V), Errors: append(adminErrors, ErrConflict), Handle: s.admin(r.handleCreate)},
		{Method: "GET", Path: r.path, Admin: true, ID: "list" + r.ids, Tag: "Admin", Auth: a, Summary: "List a workspace's " + r.what + " records.",
			Result: new(L), Errors: adminErrors, Handle: s.admin(r.handleList)},
		{Method: "GET", Path: one, Admin: true, ID: "get" + r.id, Tag: "Admin", Auth: a, Summary: "Read a " + r.what + ".",
			Result: new(V), Errors: adminErrors, Handle: s.admin(r.handleGet)},
		{Method: "PATCH", Path: one, Admin: true, ID: "update" + r.id, Tag: "Admin", Auth: a,
			Summary: "Change a " + r.what + "; fields left out keep their values and the next request uses the new settings.",
			Body:    new(In), Result: new(V), Errors: adminErrors, Handle: s.admin(r.handleUpdate)},
		{Method: "DELETE", Path: one, Admin: true, ID: "delete" + r.id, Tag: "Admin", Auth: a, Summary: "Delete a " + r.what + ".",
			Status: 204, Errors: adminErrors, Handle: s.admin(r.handleDelete)},
	}
}

// stamped is the id, creation and update time of a record being written:
// new ones on create (cur nil), cur's id and creation time on update.
func stamped[R any](cur *R, idAndCreated func(*R) (string, time.Time), now time.Time) (string, time.Time, time.Time) {
	if cur == nil {
		return uuid.NewString(), now, now
	}
	id, created := idAndCreated(cur)
	return id, created, now
}
