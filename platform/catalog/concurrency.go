package catalog

import (
	"sort"
	"time"
)

// Scopes of a concurrency constraint: which request value keys its slots.
const (
	ScopeWorkspace   = "workspace"
	ScopeApplication = "application"
	ScopeSubject     = "subject"
	ScopeDevice      = "device"
	ScopeCustom      = "custom"
)

// ConcurrencyConstraint bounds how many leases may be held at once for the
// actions its pattern matches, per value of its scope: one pool for the
// whole workspace, one per application, one per subject, device or custom
// key. Constraints nest: an acquire must win a slot in every constraint
// that matches it, so a workspace-wide cap, a per-application cap and a
// per-subject cap hold together.
type ConcurrencyConstraint struct {
	ID          string `json:"constraint_id"`
	WorkspaceID string `json:"workspace_id"`
	// Name is unique within the workspace and is what a refusal names.
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// ApplicationID limits the constraint to one site or mobile app; empty
	// means every application of the workspace.
	ApplicationID string `json:"application_id"`
	ActionPattern string `json:"action_pattern"`
	Capacity      int    `json:"capacity"`
	// Lease lifetimes, in milliseconds: a request's ttl_ms is clamped into
	// [MinTTLMs, MaxTTLMs] and DefaultTTLMs applies when it sends none.
	MinTTLMs     int64     `json:"min_ttl_ms"`
	MaxTTLMs     int64     `json:"max_ttl_ms"`
	DefaultTTLMs int64     `json:"default_ttl_ms"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// PutConcurrencyConstraint creates a constraint or replaces one with the
// same ID. Names are unique within a workspace.
type PutConcurrencyConstraint struct {
	Constraint ConcurrencyConstraint `json:"constraint"`
}

func (*PutConcurrencyConstraint) Kind() string { return "concurrency_constraint.put" }
func (c *PutConcurrencyConstraint) Apply(tx *Tx) (any, error) {
	return constraintsTable.put(tx, c.Constraint)
}

// DeleteConcurrencyConstraint removes a constraint. Leases held on it stay
// valid until they expire but it takes no new ones.
type DeleteConcurrencyConstraint struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"constraint_id"`
}

func (*DeleteConcurrencyConstraint) Kind() string { return "concurrency_constraint.delete" }
func (c *DeleteConcurrencyConstraint) Apply(tx *Tx) (any, error) {
	return constraintsTable.remove(tx, c.WorkspaceID, c.ID)
}

func deleteConcurrencyConstraintsOf(tx *Tx, workspaceID string) {
	constraintsTable.removeAllOf(tx, workspaceID)
}

// ConstraintsOf lists a workspace's concurrency constraints ordered by ID,
// the order in which an acquire reserves them.
func (c *Catalog) ConstraintsOf(workspaceID string) []*ConcurrencyConstraint {
	return c.traffic.constraints[workspaceID]
}

// trafficIndex holds the derived lookups of the traffic-control tables.
type trafficIndex struct {
	constraints map[string][]*ConcurrencyConstraint // workspace → by ID
	deps        map[depKey]*Dependency
}

type depKey struct{ workspace, name string }

func (c *Catalog) reindexTraffic() {
	c.traffic.constraints = make(map[string][]*ConcurrencyConstraint)
	for _, k := range c.ConcurrencyConstraints {
		c.traffic.constraints[k.WorkspaceID] = append(c.traffic.constraints[k.WorkspaceID], k)
	}
	for _, ks := range c.traffic.constraints {
		sort.Slice(ks, func(i, j int) bool { return ks[i].ID < ks[j].ID })
	}
	c.traffic.deps = make(map[depKey]*Dependency, len(c.Dependencies))
	for _, d := range c.Dependencies {
		c.traffic.deps[depKey{d.WorkspaceID, d.Name}] = d
	}
}
