package catalog

import (
	"fmt"
	"time"
)

// Dependency is a downstream service a workspace's applications call and
// want protected: a circuit breaker, a retry budget and a bulkhead, all
// decided by the breaker actor that owns workspace + dependency.
type Dependency struct {
	ID          string `json:"dependency_id"`
	WorkspaceID string `json:"workspace_id"`
	// Name is unique within the workspace; admit requests name it.
	Name string `json:"name"`

	// Circuit breaker: the failure rate over the last WindowSize calls
	// (once MinimumCalls are in it) or ConsecutiveFailures in a row opens
	// it for OpenDurationMs; then HalfOpenProbes probes decide.
	WindowSize           int     `json:"window_size"`
	MinimumCalls         int     `json:"minimum_calls"`
	FailureRateThreshold float64 `json:"failure_rate_threshold"`
	ConsecutiveFailures  int     `json:"consecutive_failures"`
	OpenDurationMs       int64   `json:"open_duration_ms"`
	HalfOpenProbes       int     `json:"half_open_probes"`
	// SlowCallMs counts a success slower than this as a failure; 0 is off.
	SlowCallMs int64 `json:"slow_call_ms"`

	// Retry budget: retries at most RetryRatio of first attempts plus
	// RetryMinPerSecond, over RetryTTLMs.
	RetryRatio        float64 `json:"retry_ratio"`
	RetryMinPerSecond int64   `json:"retry_min_per_second"`
	RetryTTLMs        int64   `json:"retry_ttl_ms"`

	// MaxConcurrent bounds admitted calls in flight (the bulkhead); 0 is no
	// bulkhead.
	MaxConcurrent int `json:"max_concurrent"`
	// AdmissionTTLMs is how long an admission token lives, and so how long
	// an admission without feedback holds its bulkhead slot or probe.
	AdmissionTTLMs int64 `json:"admission_ttl_ms"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PutDependency creates a dependency or replaces one with the same ID.
// Names are unique within a workspace.
type PutDependency struct {
	Dependency Dependency `json:"dependency"`
}

func (*PutDependency) Kind() string { return "dependency.put" }
func (c *PutDependency) Apply(tx *Tx) (any, error) {
	d := c.Dependency
	if _, ok := tx.next.Workspaces[d.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, d.WorkspaceID)
	}
	if cur, ok := tx.next.Dependencies[d.ID]; ok && cur.WorkspaceID != d.WorkspaceID {
		return nil, fmt.Errorf("%w: dependency %s", ErrNotFound, d.ID)
	}
	for _, o := range tx.next.Dependencies {
		if o.WorkspaceID == d.WorkspaceID && o.Name == d.Name && o.ID != d.ID {
			return nil, fmt.Errorf("%w: a dependency named %q exists", ErrConflict, d.Name)
		}
	}
	Writable(tx, "dependencies", &tx.next.Dependencies)[d.ID] = &d
	return &d, nil
}

// DeleteDependency removes a dependency; its breaker state is forgotten
// when the actor evicts it.
type DeleteDependency struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"dependency_id"`
}

func (*DeleteDependency) Kind() string { return "dependency.delete" }
func (c *DeleteDependency) Apply(tx *Tx) (any, error) {
	cur, ok := tx.next.Dependencies[c.ID]
	if !ok || cur.WorkspaceID != c.WorkspaceID {
		return nil, fmt.Errorf("%w: dependency %s", ErrNotFound, c.ID)
	}
	delete(Writable(tx, "dependencies", &tx.next.Dependencies), c.ID)
	return nil, nil
}

func deleteDependenciesOf(tx *Tx, workspaceID string) {
	deleteOwned(tx, "dependencies", &tx.next.Dependencies, workspaceID,
		func(d *Dependency) string { return d.WorkspaceID })
}

// DependencyByName finds a workspace's dependency by name.
func (c *Catalog) DependencyByName(workspaceID, name string) *Dependency {
	return c.traffic.deps[depKey{workspaceID, name}]
}
