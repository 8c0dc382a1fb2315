package catalog

import "fmt"

// owned describes one table of workspace-owned records, so that every
// command on it finds, stores and removes a record the same way and names
// it alike in its errors. The commands and their JSON (the Raft log) are
// the record kind's own; only their Apply bodies share this.
type owned[V any] struct {
	name  string // the table's name for copy-on-write (Writable)
	what  string // how a not-found error names a record: "site"
	table func(*Catalog) *map[string]*V
	id    func(*V) string
	owner func(*V) string
	// For put: named ("a dependency") makes label unique per workspace;
	// max > 0 caps the records of a workspace, plural naming them.
	named  string
	label  func(*V) string
	max    int
	plural string
}

// needWorkspace refuses a record of a workspace that does not exist.
func needWorkspace(tx *Tx, id string) error {
	if _, ok := tx.next.Workspaces[id]; !ok {
		return fmt.Errorf("%w: workspace %s", ErrNotFound, id)
	}
	return nil
}

// get returns record id of workspaceID; one of another workspace is as
// absent as a missing one.
func (t *owned[V]) get(tx *Tx, workspaceID, id string) (*V, error) {
	cur, ok := (*t.table(tx.next))[id]
	if !ok || t.owner(cur) != workspaceID {
		return nil, fmt.Errorf("%w: %s %s", ErrNotFound, t.what, id)
	}
	return cur, nil
}

// of lists the records of a workspace, in no particular order.
func (t *owned[V]) of(c *Catalog, workspaceID string) []*V {
	var out []*V
	for _, v := range *t.table(c) {
		if t.owner(v) == workspaceID {
			out = append(out, v)
		}
	}
	return out
}

// store writes v under its id and returns the stored copy.
func (t *owned[V]) store(tx *Tx, v V) *V {
	Writable(tx, t.name, t.table(tx.next))[t.id(&v)] = &v
	return &v
}

// remove deletes record id of workspaceID.
func (t *owned[V]) remove(tx *Tx, workspaceID, id string) (any, error) {
	if _, err := t.get(tx, workspaceID, id); err != nil {
		return nil, err
	}
	delete(Writable(tx, t.name, t.table(tx.next)), id)
	return nil, nil
}

// removeAllOf deletes every record of a workspace (the workspace's delete).
func (t *owned[V]) removeAllOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, t.name, t.table(tx.next), workspaceID, t.owner)
}

// checkPut makes the checks of a create-or-replace: the workspace exists,
// an existing record of the id is the workspace's, the label is unique in
// the workspace and a new record stays under the cap. It returns the
// record v replaces, or nil.
func (t *owned[V]) checkPut(tx *Tx, v *V) (*V, error) {
	ws, id := t.owner(v), t.id(v)
	if err := needWorkspace(tx, ws); err != nil {
		return nil, err
	}
	cur, exists := (*t.table(tx.next))[id]
	if exists && t.owner(cur) != ws {
		return nil, fmt.Errorf("%w: %s %s", ErrNotFound, t.what, id)
	}
	n := 0
	for _, o := range *t.table(tx.next) {
		if t.owner(o) != ws {
			continue
		}
		n++
		if t.named != "" && t.label(o) == t.label(v) && t.id(o) != id {
			return nil, fmt.Errorf("%w: %s named %q exists", ErrConflict, t.named, t.label(v))
		}
	}
	if !exists {
		if err := t.full(n); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// full refuses a new record of a workspace that holds n at the cap.
func (t *owned[V]) full(n int) error {
	if t.max > 0 && n >= t.max {
		return fmt.Errorf("%w: the workspace has %d %s, the most allowed", ErrConflict, n, t.plural)
	}
	return nil
}

// checkCreate refuses a new record v past its workspace's cap (the
// create commands' own checks come first, so their errors are as before).
func (t *owned[V]) checkCreate(tx *Tx, v *V) error {
	ws, n := t.owner(v), 0
	for _, o := range *t.table(tx.next) {
		if t.owner(o) == ws {
			n++
		}
	}
	return t.full(n)
}

// put is checkPut then store.
func (t *owned[V]) put(tx *Tx, v V) (any, error) {
	if _, err := t.checkPut(tx, &v); err != nil {
		return nil, err
	}
	return t.store(tx, v), nil
}

// The workspace-owned tables.
var (
	sitesTable = &owned[Site]{name: "sites", what: "site",
		table: func(c *Catalog) *map[string]*Site { return &c.Sites },
		id:    func(v *Site) string { return v.ID }, owner: func(v *Site) string { return v.WorkspaceID },
		max: MaxSitesPerWorkspace, plural: "sites"}
	mobileAppsTable = &owned[MobileApp]{name: "mobile_apps", what: "mobile app",
		table: func(c *Catalog) *map[string]*MobileApp { return &c.MobileApps },
		id:    func(v *MobileApp) string { return v.ID }, owner: func(v *MobileApp) string { return v.WorkspaceID },
		max: MaxMobileAppsPerWorkspace, plural: "mobile apps"}
	credentialsTable = &owned[Credential]{name: "credentials", what: "credential",
		table: func(c *Catalog) *map[string]*Credential { return &c.Credentials },
		id:    func(v *Credential) string { return v.ID }, owner: func(v *Credential) string { return v.WorkspaceID },
		max: MaxCredentialsPerWorkspace, plural: "credentials"}
	constraintsTable = &owned[ConcurrencyConstraint]{name: "concurrency_constraints", what: "constraint",
		table: func(c *Catalog) *map[string]*ConcurrencyConstraint { return &c.ConcurrencyConstraints },
		id:    func(v *ConcurrencyConstraint) string { return v.ID }, owner: func(v *ConcurrencyConstraint) string { return v.WorkspaceID },
		named: "a concurrency constraint", label: func(v *ConcurrencyConstraint) string { return v.Name },
		max: MaxConcurrencyConstraintsPerWorkspace, plural: "concurrency constraints"}
	dependenciesTable = &owned[Dependency]{name: "dependencies", what: "dependency",
		table: func(c *Catalog) *map[string]*Dependency { return &c.Dependencies },
		id:    func(v *Dependency) string { return v.ID }, owner: func(v *Dependency) string { return v.WorkspaceID },
		named: "a dependency", label: func(v *Dependency) string { return v.Name },
		max: MaxDependenciesPerWorkspace, plural: "dependencies"}
	trustPoliciesTable = &owned[TrustPolicy]{name: "trust_policies", what: "trust policy",
		table: func(c *Catalog) *map[string]*TrustPolicy { return &c.TrustPolicies },
		id:    func(v *TrustPolicy) string { return v.ID }, owner: func(v *TrustPolicy) string { return v.WorkspaceID },
		named: "a trust policy", label: func(v *TrustPolicy) string { return v.Name },
		max: MaxTrustPoliciesPerWorkspace, plural: "trust policies"}
	agentsTable = &owned[Agent]{name: "agents", what: "agent",
		table: func(c *Catalog) *map[string]*Agent { return &c.Agents },
		id:    func(v *Agent) string { return v.ID }, owner: func(v *Agent) string { return v.WorkspaceID },
		named: "an agent", label: func(v *Agent) string { return v.Name },
		max: MaxAgentsPerWorkspace, plural: "agents"}
	rateLimitPoliciesTable = &policies[RateLimitPolicy]{owned: owned[RateLimitPolicy]{name: "rate_limit_policies", what: "rate-limit policy",
		table: func(c *Catalog) *map[string]*RateLimitPolicy { return &c.RateLimitPolicies },
		id:    func(v *RateLimitPolicy) string { return v.ID }, owner: func(v *RateLimitPolicy) string { return v.WorkspaceID },
		max: MaxRateLimitPolicies, plural: "rate-limit policies"},
		target: func(v *RateLimitPolicy) PolicyTarget { return v.Target },
		revise: func(v, cur *RateLimitPolicy) { v.CreatedAt, v.Revision = cur.CreatedAt, cur.Revision+1 },
		first:  func(v *RateLimitPolicy) { v.Revision = 1 }}
	apiProtectionPoliciesTable = &policies[APIProtectionPolicy]{owned: owned[APIProtectionPolicy]{name: "api_protection_policies", what: "API Protection policy",
		table: func(c *Catalog) *map[string]*APIProtectionPolicy { return &c.APIProtectionPolicies },
		id:    func(v *APIProtectionPolicy) string { return v.ID }, owner: func(v *APIProtectionPolicy) string { return v.WorkspaceID },
		max: MaxAPIProtectionPolicies, plural: "API Protection policies"},
		target: func(v *APIProtectionPolicy) PolicyTarget { return v.Target },
		revise: func(v, cur *APIProtectionPolicy) { v.CreatedAt, v.Revision = cur.CreatedAt, cur.Revision+1 },
		first:  func(v *APIProtectionPolicy) { v.Revision = 1 }}
)

// policies is a table of targeted, revised policies (rate-limit and API
// Protection): create starts at revision 1, replace keeps the creation
// time and counts the revision up, and both check the target.
type policies[V any] struct {
	owned[V]
	target func(*V) PolicyTarget
	revise func(v, cur *V)
	first  func(v *V)
}

func (t *policies[V]) create(tx *Tx, v V) (any, error) {
	ws, id := t.owner(&v), t.id(&v)
	if err := needWorkspace(tx, ws); err != nil {
		return nil, err
	}
	if _, ok := (*t.table(tx.next))[id]; ok {
		return nil, fmt.Errorf("%w: policy %s exists", ErrConflict, id)
	}
	if err := checkPolicyTarget(tx.next, ws, t.target(&v)); err != nil {
		return nil, err
	}
	if len(t.of(tx.next, ws)) >= t.max {
		return nil, fmt.Errorf("%w: workspace %s already has %d %s", ErrConflict, ws, t.max, t.plural)
	}
	t.first(&v)
	return t.store(tx, v), nil
}

func (t *policies[V]) replace(tx *Tx, v V) (any, error) {
	cur, err := t.get(tx, t.owner(&v), t.id(&v))
	if err != nil {
		return nil, err
	}
	if err := checkPolicyTarget(tx.next, t.owner(&v), t.target(&v)); err != nil {
		return nil, err
	}
	t.revise(&v, cur)
	return t.store(tx, v), nil
}
