package catalog

import (
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
	return dependenciesTable.put(tx, c.Dependency)
}

// DeleteDependency removes a dependency; its breaker state is forgotten
// when the actor evicts it.
type DeleteDependency struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"dependency_id"`
}

func (*DeleteDependency) Kind() string { return "dependency.delete" }
func (c *DeleteDependency) Apply(tx *Tx) (any, error) {
	return dependenciesTable.remove(tx, c.WorkspaceID, c.ID)
}

func deleteDependenciesOf(tx *Tx, workspaceID string) {
	dependenciesTable.removeAllOf(tx, workspaceID)
}

// DependencyByName finds a workspace's dependency by name.
func (c *Catalog) DependencyByName(workspaceID, name string) *Dependency {
	return c.traffic.deps[depKey{workspaceID, name}]
}
