package http

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
)

// resource is the one admin CRUD path of a workspace-owned record kind R
// (list, get, create, update, delete under /workspaces/{workspace_id}/…):
// each kind supplies only what differs — where its records live, how an
// input becomes a validated record, and its catalog commands and view.
// In is the create/update body, V the answer of one record, L the list
// answer. An operation whose hook is nil (create, update, delete) or that
// is switched off (noGet) has no route.
type resource[R, In, V, L any] struct {
	what  string // "rate-limit policy", for 404 messages and summaries
	path  string // the collection path, e.g. "/workspaces/{workspace_id}/rate-limit-policies"
	param string // the id path parameter, e.g. "policy_id"
	id    string // the operation-id noun: "RateLimitPolicy" → createRateLimitPolicy, …
	ids   string // its plural for list: "RateLimitPolicies"

	tag          string                     // OpenAPI tag; default "Admin"
	updateMethod string                     // PATCH (default: fields left out keep their values) or PUT
	updateVerb   string                     // the update's operation-id verb; default "update" ("replace" → replaceTrustPolicy)
	summary      map[string]string          // per operation ("create", "list", "get", "update", "delete"), over the defaults
	errors       []ErrorCode                // every operation's errors; default adminErrors
	createErrors []ErrorCode                // create's, beyond errors
	updateErrors []ErrorCode                // update's, beyond errors
	deleteErrors []ErrorCode                // delete's, beyond errors
	notFound     error                      // the answer for a missing record; default not-found naming it
	noGet        bool                       // no GET of one record
	deleted      func(r *R, result any) any // delete answers 200 with this instead of 204
	deletedView  any                        // deleted's answer type, for the contract

	table func(*catalog.Catalog) map[string]*R
	owner func(*R) string
	// build turns a decoded input into the record to store; cur is nil on
	// create (defaults apply) and the current record on update. On create
	// it may return a secret, shown once in the create answer and never
	// again (the record keeps only its hash).
	build func(c *Call, in *In, cur *R, workspaceID string) (R, string, error)
	// stamp sets the record's id and times: a new id and creation time
	// when cur is nil, else cur's. Nil when build does it.
	stamp  func(r, cur *R, now time.Time)
	create func(R) catalog.Command
	// update is the command that changes the record to r; in is the
	// decoded input, for kinds whose command is a patch.
	update func(in *In, r R) catalog.Command
	delete func(r *R, now time.Time) catalog.Command
	// view is one record's answer; secret is "" except in create's.
	view func(c *Call, r *R, secret string) *V
	// get, when set, is the answer of GET of one record instead of view
	// (a dependency adds its breaker's live state).
	get    func(c *Call, r *R) *V
	sortID func(*V) string // the list's order
	list   func([]V) *L
	// listCall, when set, is the list answer instead of list, for a kind
	// whose list answer holds more than its records (trust policies add
	// the built-in rules with the workspace's match counts).
	listCall func(c *Call, views []V) *L
}

// find resolves {workspace_id} and the record's id, answering 404 itself.
func (r *resource[R, In, V, L]) find(c *Call) *R {
	if r.notFound == nil {
		return inWorkspace(c, r.table(c.cat), r.param, r.what, r.owner)
	}
	w := c.Workspace()
	if w == nil {
		return nil
	}
	rec := r.table(c.cat)[c.Param(r.param)]
	if rec == nil || r.owner(rec) != w.ID {
		c.FailErr(r.notFound)
		return nil
	}
	return rec
}

func (r *resource[R, In, V, L]) handleCreate(c *Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	var in In
	if !c.Decode(&in) {
		return
	}
	CreateOnce(c, w.ID, &in, func() (catalog.Command, string, error) {
		rec, secret, err := r.build(c, &in, nil, w.ID)
		if err != nil {
			return nil, "", err
		}
		if r.stamp != nil {
			r.stamp(&rec, nil, c.Now().UTC())
		}
		return r.create(rec), secret, nil
	}, func(rec *R, secret string) { c.ok(r.view(c, rec, secret)) })
}

func (r *resource[R, In, V, L]) handleUpdate(c *Call) {
	cur := r.find(c)
	if cur == nil {
		return
	}
	var in In
	if !c.Decode(&in) {
		return
	}
	rec, _, err := r.build(c, &in, cur, r.owner(cur))
	if err != nil {
		c.FailErr(err)
		return
	}
	if r.stamp != nil {
		r.stamp(&rec, cur, c.Now().UTC())
	}
	if v, ok := c.Apply(r.update(&in, rec)); ok {
		c.ok(r.view(c, v.(*R), ""))
	}
}

func (r *resource[R, In, V, L]) handleList(c *Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	views := []V{}
	for _, rec := range r.table(c.cat) {
		if r.owner(rec) == w.ID {
			views = append(views, *r.view(c, rec, ""))
		}
	}
	sort.Slice(views, func(i, j int) bool { return r.sortID(&views[i]) < r.sortID(&views[j]) })
	if r.listCall != nil {
		c.ok(r.listCall(c, views))
		return
	}
	c.ok(r.list(views))
}

func (r *resource[R, In, V, L]) handleGet(c *Call) {
	rec := r.find(c)
	switch {
	case rec == nil:
	case r.get != nil:
		c.ok(r.get(c, rec))
	default:
		c.ok(r.view(c, rec, ""))
	}
}

func (r *resource[R, In, V, L]) handleDelete(c *Call) {
	rec := r.find(c)
	if rec == nil {
		return
	}
	v, ok := c.Apply(r.delete(rec, c.Now().UTC()))
	switch {
	case !ok:
	case r.deleted != nil:
		c.ok(r.deleted(rec, v))
	default:
		c.noContent()
	}
}

// routes are the admin operations of the kind.
func (r *resource[R, In, V, L]) routes(s *Server) []Route {
	a := []Auth{AuthAdmin}
	one := r.path + "/{" + r.param + "}"
	tag, method, verb, errs := r.tag, r.updateMethod, r.updateVerb, r.errors
	if tag == "" {
		tag = "Admin"
	}
	if verb == "" {
		verb = "update"
	}
	if method == "" {
		method = "PATCH"
	}
	if errs == nil {
		errs = adminErrors
	}
	sum := func(op, def string) string {
		if v, ok := r.summary[op]; ok {
			return v
		}
		return def
	}
	var out []Route
	if r.create != nil {
		out = append(out, IdempotentCreate(Route{Method: "POST", Path: r.path, Admin: true, ID: "create" + r.id, Tag: tag, Auth: a, Summary: sum("create", "Create a "+r.what+"."),
			Body: new(In), Status: 201, Result: new(V), Errors: append(append([]ErrorCode(nil), errs...), r.createErrors...), Handle: s.admin(r.handleCreate)}))
	}
	out = append(out, Route{Method: "GET", Path: r.path, Admin: true, ID: "list" + r.ids, Tag: tag, Auth: a, Summary: sum("list", "List a workspace's "+r.what+" records."),
		Result: new(L), Errors: errs, Handle: s.admin(r.handleList)})
	if !r.noGet {
		out = append(out, Route{Method: "GET", Path: one, Admin: true, ID: "get" + r.id, Tag: tag, Auth: a, Summary: sum("get", "Read a "+r.what+"."),
			Result: new(V), Errors: errs, Handle: s.admin(r.handleGet)})
	}
	if r.update != nil {
		out = append(out, Route{Method: method, Path: one, Admin: true, ID: verb + r.id, Tag: tag, Auth: a,
			Summary: sum("update", "Change a "+r.what+"; fields left out keep their values and the next request uses the new settings."),
			Body:    new(In), Result: new(V), Errors: append(append([]ErrorCode(nil), errs...), r.updateErrors...), Handle: s.admin(r.handleUpdate)})
	}
	if r.delete != nil {
		del := Route{Method: "DELETE", Path: one, Admin: true, ID: "delete" + r.id, Tag: tag, Auth: a, Summary: sum("delete", "Delete a "+r.what+"."),
			Status: 204, Errors: append(append([]ErrorCode(nil), errs...), r.deleteErrors...), Handle: s.admin(r.handleDelete)}
		if r.deleted != nil {
			del.Status, del.Result = 0, r.deletedView
		}
		out = append(out, del)
	}
	return out
}

// Stamped is the id, creation and update time of a record being written:
// new ones on create (cur nil), cur's id and creation time on update.
func Stamped[R any](cur *R, idAndCreated func(*R) (string, time.Time), now time.Time) (string, time.Time, time.Time) {
	if cur == nil {
		return uuid.NewString(), now, now
	}
	id, created := idAndCreated(cur)
	return id, created, now
}

// ViewOf adapts a view that needs neither the call nor a secret.
func ViewOf[R, V any](view func(*R) *V) func(*Call, *R, string) *V {
	return func(_ *Call, r *R, _ string) *V { return view(r) }
}

// Overlay sets *dst to src when a patch gives src (PATCH: a field left out
// keeps its value).
func Overlay[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// DefaultTo sets *dst to a copy of v when the input left it out.
func DefaultTo[T any](dst **T, v T) {
	if *dst == nil {
		*dst = &v
	}
}

// Deref is *p, or T's zero value when p is nil.
func Deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
