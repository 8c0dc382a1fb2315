package http

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
)

// Resource is the one admin CRUD path of a workspace-owned record kind R
// (list, get, create, update, delete under /workspaces/{workspace_id}/…):
// each kind supplies only what differs — where its records live, how an
// input becomes a validated record, and its catalog commands and view.
// In is the create/update body, V the answer of one record, L the list
// answer. An operation whose hook is nil (create, update, delete) or that
// is switched off (NoGet) has no route. Areas declare their kinds with
// it (the sites, credentials, policies, agents, …).
type Resource[R, In, V, L any] struct {
	What  string // "rate-limit policy", for 404 messages and summaries
	Path  string // the collection path, e.g. "/workspaces/{workspace_id}/rate-limit-policies"
	Param string // the id path parameter, e.g. "policy_id"
	ID    string // the operation-id noun: "RateLimitPolicy" → createRateLimitPolicy, …
	IDs   string // its plural for list: "RateLimitPolicies"

	Tag          string                     // OpenAPI tag; default "Admin"
	UpdateMethod string                     // PATCH (default: fields left out keep their values) or PUT
	UpdateVerb   string                     // the update's operation-id verb; default "update" ("replace" → replaceTrustPolicy)
	Summary      map[string]string          // per operation ("create", "list", "get", "update", "delete"), over the defaults
	Errors       []ErrorCode                // every operation's errors; default adminErrors
	CreateErrors []ErrorCode                // create's, beyond errors
	UpdateErrors []ErrorCode                // update's, beyond errors
	DeleteErrors []ErrorCode                // delete's, beyond errors
	NotFound     error                      // the answer for a missing record; default not-found naming it
	NoGet        bool                       // no GET of one record
	Deleted      func(r *R, result any) any // delete answers 200 with this instead of 204
	DeletedView  any                        // deleted's answer type, for the contract

	Table func(*catalog.Catalog) map[string]*R
	Owner func(*R) string
	// Build turns a decoded input into the record to store; cur is nil on
	// create (defaults apply) and the current record on update. On create
	// it may return a secret, shown once in the create answer and never
	// again (the record keeps only its hash).
	Build func(c *Call, in *In, cur *R, workspaceID string) (R, string, error)
	// Stamp sets the record's id and times: a new id and creation time
	// when cur is nil, else cur's. Nil when build does it.
	Stamp  func(r, cur *R, now time.Time)
	Create func(R) catalog.Command
	// Update is the command that changes the record to r; in is the
	// decoded input, for kinds whose command is a patch.
	Update func(in *In, r R) catalog.Command
	Delete func(r *R, now time.Time) catalog.Command
	// View is one record's answer; secret is "" except in create's.
	View func(c *Call, r *R, secret string) *V
	// Get, when set, is the answer of GET of one record instead of view
	// (a dependency adds its breaker's live state).
	Get    func(c *Call, r *R) *V
	SortID func(*V) string // the list's order
	List   func([]V) *L
	// ListCall, when set, is the list answer instead of list, for a kind
	// whose list answer holds more than its records (trust policies add
	// the built-in rules with the workspace's match counts).
	ListCall func(c *Call, views []V) *L
}

// Find resolves {workspace_id} and the record's id, answering 404 itself
// (also for an operation beside the kind's CRUD, such as a policy's stats).
func (r *Resource[R, In, V, L]) Find(c *Call) *R {
	if r.NotFound == nil {
		return inWorkspace(c, r.Table(c.cat), r.Param, r.What, r.Owner)
	}
	w := c.Workspace()
	if w == nil {
		return nil
	}
	rec := r.Table(c.cat)[c.Param(r.Param)]
	if rec == nil || r.Owner(rec) != w.ID {
		c.FailErr(r.NotFound)
		return nil
	}
	return rec
}

func (r *Resource[R, In, V, L]) handleCreate(c *Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	var in In
	if !c.Decode(&in) {
		return
	}
	CreateOnce(c, w.ID, &in, func() (catalog.Command, string, error) {
		rec, secret, err := r.Build(c, &in, nil, w.ID)
		if err != nil {
			return nil, "", err
		}
		if r.Stamp != nil {
			r.Stamp(&rec, nil, c.Now().UTC())
		}
		return r.Create(rec), secret, nil
	}, func(rec *R, secret string) { c.ok(r.View(c, rec, secret)) })
}

func (r *Resource[R, In, V, L]) handleUpdate(c *Call) {
	cur := r.Find(c)
	if cur == nil {
		return
	}
	var in In
	if !c.Decode(&in) {
		return
	}
	rec, _, err := r.Build(c, &in, cur, r.Owner(cur))
	if err != nil {
		c.FailErr(err)
		return
	}
	if r.Stamp != nil {
		r.Stamp(&rec, cur, c.Now().UTC())
	}
	if v, ok := c.Apply(r.Update(&in, rec)); ok {
		c.ok(r.View(c, v.(*R), ""))
	}
}

func (r *Resource[R, In, V, L]) handleList(c *Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	views := []V{}
	for _, rec := range r.Table(c.cat) {
		if r.Owner(rec) == w.ID {
			views = append(views, *r.View(c, rec, ""))
		}
	}
	sort.Slice(views, func(i, j int) bool { return r.SortID(&views[i]) < r.SortID(&views[j]) })
	if r.ListCall != nil {
		c.ok(r.ListCall(c, views))
		return
	}
	c.ok(r.List(views))
}

func (r *Resource[R, In, V, L]) handleGet(c *Call) {
	rec := r.Find(c)
	switch {
	case rec == nil:
	case r.Get != nil:
		c.ok(r.Get(c, rec))
	default:
		c.ok(r.View(c, rec, ""))
	}
}

func (r *Resource[R, In, V, L]) handleDelete(c *Call) {
	rec := r.Find(c)
	if rec == nil {
		return
	}
	v, ok := c.Apply(r.Delete(rec, c.Now().UTC()))
	switch {
	case !ok:
	case r.Deleted != nil:
		c.ok(r.Deleted(rec, v))
	default:
		c.noContent()
	}
}

// Routes are the kind's admin operations.
func (r *Resource[R, In, V, L]) Routes() []Route {
	a := []Auth{AuthAdmin}
	one := r.Path + "/{" + r.Param + "}"
	tag, method, verb, errs := r.Tag, r.UpdateMethod, r.UpdateVerb, r.Errors
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
		if v, ok := r.Summary[op]; ok {
			return v
		}
		return def
	}
	var out []Route
	if r.Create != nil {
		out = append(out, IdempotentCreate(Route{Method: "POST", Path: r.Path, Admin: true, ID: "create" + r.ID, Tag: tag, Auth: a, Summary: sum("create", "Create a "+r.What+"."),
			Body: new(In), Status: 201, Result: new(V), Errors: append(append([]ErrorCode(nil), errs...), r.CreateErrors...), Handle: AdminOnly(r.handleCreate)}))
	}
	out = append(out, Route{Method: "GET", Path: r.Path, Admin: true, ID: "list" + r.IDs, Tag: tag, Auth: a, Summary: sum("list", "List a workspace's "+r.What+" records."),
		Result: new(L), Errors: errs, Handle: AdminOnly(r.handleList)})
	if !r.NoGet {
		out = append(out, Route{Method: "GET", Path: one, Admin: true, ID: "get" + r.ID, Tag: tag, Auth: a, Summary: sum("get", "Read a "+r.What+"."),
			Result: new(V), Errors: errs, Handle: AdminOnly(r.handleGet)})
	}
	if r.Update != nil {
		out = append(out, Route{Method: method, Path: one, Admin: true, ID: verb + r.ID, Tag: tag, Auth: a,
			Summary: sum("update", "Change a "+r.What+"; fields left out keep their values and the next request uses the new settings."),
			Body:    new(In), Result: new(V), Errors: append(append([]ErrorCode(nil), errs...), r.UpdateErrors...), Handle: AdminOnly(r.handleUpdate)})
	}
	if r.Delete != nil {
		del := Route{Method: "DELETE", Path: one, Admin: true, ID: "delete" + r.ID, Tag: tag, Auth: a, Summary: sum("delete", "Delete a "+r.What+"."),
			Status: 204, Errors: append(append([]ErrorCode(nil), errs...), r.DeleteErrors...), Handle: AdminOnly(r.handleDelete)}
		if r.Deleted != nil {
			del.Status, del.Result = 0, r.DeletedView
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
