package api

import (
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/platform/lib/resilience"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/traffic/admission"
	"github.com/trustd/trustd/traffic/lease"
)

// Admin API of traffic control: a workspace's concurrency constraints and
// dependencies. Create and patch share one path: the input's fields are
// laid over the defaults (create) or the stored record (patch), and the
// result is validated whole, so no combination of patches can store an
// inconsistent configuration.

// adminAPI is the admin collections' transport: the lease module reads a
// constraint's holders, the router a dependency's breaker.
type adminAPI struct {
	lease  *lease.Module
	router Asker
}

// ConcurrencyConstraintInput creates or patches a concurrency constraint.
type ConcurrencyConstraintInput struct {
	Name          *string `json:"name,omitempty" required:"true" doc:"1 to 64 letters, digits, '.', '_', ':' or '-'; unique in the workspace. Refusals name it."`
	Scope         *string `json:"scope,omitempty" enum:"workspace|application|subject|device|custom" doc:"Which value keys the slots: one pool for the workspace, or one per application, subject_id, device_id or scope_key. Default workspace."`
	ApplicationID *string `json:"application_id,omitempty" doc:"A site_id or mobile_app_id of the workspace to limit the constraint to; empty for every application."`
	ActionPattern *string `json:"action_pattern,omitempty" required:"true" doc:"*, an action (export.report) or a prefix pattern (export.*)."`
	Capacity      *int    `json:"capacity,omitempty" required:"true" doc:"Leases held at once per scope value, 1 to 1000000."`
	MinTTLMs      *int64  `json:"min_ttl_ms,omitempty" doc:"Shortest lease lifetime, default 1000."`
	MaxTTLMs      *int64  `json:"max_ttl_ms,omitempty" doc:"Longest lease lifetime, default 300000; at most 86400000."`
	DefaultTTLMs  *int64  `json:"default_ttl_ms,omitempty" doc:"Lifetime when the acquire sends no ttl_ms, default 30000; within the bounds."`
}

// ConcurrencyConstraintView is a constraint as the admin API shows it.
type ConcurrencyConstraintView struct {
	ConstraintID  string    `json:"constraint_id" required:"true" format:"uuid"`
	WorkspaceID   string    `json:"workspace_id" required:"true" format:"uuid"`
	Name          string    `json:"name" required:"true"`
	Scope         string    `json:"scope" required:"true" enum:"workspace|application|subject|device|custom"`
	ApplicationID string    `json:"application_id" required:"true" doc:"Empty when the constraint covers every application."`
	ActionPattern string    `json:"action_pattern" required:"true"`
	Capacity      int       `json:"capacity" required:"true"`
	MinTTLMs      int64     `json:"min_ttl_ms" required:"true"`
	MaxTTLMs      int64     `json:"max_ttl_ms" required:"true"`
	DefaultTTLMs  int64     `json:"default_ttl_ms" required:"true"`
	CreatedAt     time.Time `json:"created_at" required:"true"`
	UpdatedAt     time.Time `json:"updated_at" required:"true"`
}

// ConcurrencyConstraintList is the answer of GET …/concurrency-constraints.
type ConcurrencyConstraintList struct {
	Constraints []ConcurrencyConstraintView `json:"concurrency_constraints" required:"true"`
}

// DependencyInput creates or patches a dependency. Unset fields take the
// defaults of resilience4j's breaker and Finagle's retry budget.
type DependencyInput struct {
	Name                 *string  `json:"name,omitempty" required:"true" doc:"1 to 64 letters, digits, '.', '_', ':' or '-'; unique in the workspace; admit names it."`
	WindowSize           *int     `json:"window_size,omitempty" doc:"Calls the failure rate is computed over, 1 to 1024; default 100."`
	MinimumCalls         *int     `json:"minimum_calls,omitempty" doc:"Calls the window must hold before the failure rate may open the circuit, 1 to window_size; default window_size."`
	FailureRateThreshold *float64 `json:"failure_rate_threshold,omitempty" doc:"Failure fraction that opens the circuit, (0, 1]; default 0.5."`
	ConsecutiveFailures  *int     `json:"consecutive_failures,omitempty" doc:"Failures in a row that open the circuit whatever the rate; 0 (default) is off."`
	OpenDurationMs       *int64   `json:"open_duration_ms,omitempty" doc:"How long an open circuit refuses before probing, 10 to 86400000; default 60000."`
	HalfOpenProbes       *int     `json:"half_open_probes,omitempty" doc:"Probes admitted half-open; all must succeed to close, 1 to 1000; default 10."`
	SlowCallMs           *int64   `json:"slow_call_ms,omitempty" doc:"A success slower than this counts as a failure; 0 (default) is off."`
	RetryRatio           *float64 `json:"retry_ratio,omitempty" doc:"Retries allowed per first attempt, 0 to 100; default 0.2."`
	RetryMinPerSecond    *int64   `json:"retry_min_per_second,omitempty" doc:"Retries always allowed per second, 0 to 100000; default 10."`
	RetryTTLMs           *int64   `json:"retry_ttl_ms,omitempty" doc:"Window of the retry budget, 1000 to 3600000; default 10000."`
	MaxConcurrent        *int     `json:"max_concurrent,omitempty" doc:"Bulkhead: admitted calls in flight at once, 0 (default, no bulkhead) to 1000000."`
	AdmissionTTLMs       *int64   `json:"admission_ttl_ms,omitempty" doc:"Lifetime of an admission token; an admission without feedback holds its bulkhead slot or probe this long. 100 to 3600000; default 30000."`
}

// DependencyView is a dependency as the admin API shows it.
type DependencyView struct {
	DependencyID         string          `json:"dependency_id" required:"true" format:"uuid"`
	WorkspaceID          string          `json:"workspace_id" required:"true" format:"uuid"`
	Name                 string          `json:"name" required:"true"`
	WindowSize           int             `json:"window_size" required:"true"`
	MinimumCalls         int             `json:"minimum_calls" required:"true"`
	FailureRateThreshold float64         `json:"failure_rate_threshold" required:"true"`
	ConsecutiveFailures  int             `json:"consecutive_failures" required:"true"`
	OpenDurationMs       int64           `json:"open_duration_ms" required:"true"`
	HalfOpenProbes       int             `json:"half_open_probes" required:"true"`
	SlowCallMs           int64           `json:"slow_call_ms" required:"true"`
	RetryRatio           float64         `json:"retry_ratio" required:"true"`
	RetryMinPerSecond    int64           `json:"retry_min_per_second" required:"true"`
	RetryTTLMs           int64           `json:"retry_ttl_ms" required:"true"`
	MaxConcurrent        int             `json:"max_concurrent" required:"true"`
	AdmissionTTLMs       int64           `json:"admission_ttl_ms" required:"true"`
	CreatedAt            time.Time       `json:"created_at" required:"true"`
	UpdatedAt            time.Time       `json:"updated_at" required:"true"`
	Live                 *DependencyLive `json:"live,omitempty" doc:"The breaker's current state; only on GET of one dependency."`
}

// DependencyLive is the live state of a dependency's breaker.
type DependencyLive struct {
	State    string `json:"state" required:"true" enum:"closed|open|half-open" doc:"An open circuit whose open period has passed reads open until the next admit probes it."`
	Calls    int    `json:"calls" required:"true" doc:"Outcomes in the closed circuit's window."`
	Failures int    `json:"failures" required:"true"`
	InFlight int    `json:"in_flight" required:"true"`
}

// DependencyList is the answer of GET …/dependencies.
type DependencyList struct {
	Dependencies []DependencyView `json:"dependencies" required:"true"`
}

func (a adminAPI) routes() []kernel.Route {
	rs := append(constraints.Routes(), a.dependencies().Routes()...)
	return append(rs, kernel.Route{Method: "GET", Path: constraints.Path + "/{constraint_id}/holders", Admin: true, ID: "getConcurrencyHolders", Tag: "Admin",
		Auth: []kernel.Auth{kernel.AuthAdmin}, Summary: "A concurrency constraint's live holders, read from the owners of its slots: per scope value for workspace and application scopes; subject, device and custom scope values are stored only as keyed hashes and are not enumerable.",
		Result: &lease.Holders{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(func(c *kernel.Call) {
			k := constraints.Find(c)
			if k == nil {
				return
			}
			cat := c.Catalog()
			h, err := a.lease.Holders(cat, cat.Workspaces[k.WorkspaceID], k)
			if err != nil {
				c.Fail(kernel.ErrUnavailable, "a slot's owner did not answer")
				return
			}
			c.OK(h)
		})})
}

// constraints is the admin CRUD of concurrency constraints.
var constraints = &kernel.Resource[catalog.ConcurrencyConstraint, ConcurrencyConstraintInput, ConcurrencyConstraintView, ConcurrencyConstraintList]{
	What: "concurrency constraint", Path: "/workspaces/{workspace_id}/concurrency-constraints", Param: "constraint_id",
	ID: "ConcurrencyConstraint", IDs: "ConcurrencyConstraints",
	Summary: map[string]string{"list": "List a workspace's concurrency constraints.",
		"update": "Change a concurrency constraint; held leases keep their slots, new acquires see the change."},
	CreateErrors: []kernel.ErrorCode{kernel.ErrConflict}, UpdateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	Table: func(c *catalog.Catalog) map[string]*catalog.ConcurrencyConstraint { return c.ConcurrencyConstraints },
	Owner: func(k *catalog.ConcurrencyConstraint) string { return k.WorkspaceID },
	Build: buildConstraint,
	Create: func(k catalog.ConcurrencyConstraint) catalog.Command {
		return &catalog.PutConcurrencyConstraint{Constraint: k}
	},
	Update: func(_ *ConcurrencyConstraintInput, k catalog.ConcurrencyConstraint) catalog.Command {
		return &catalog.PutConcurrencyConstraint{Constraint: k}
	},
	Delete: func(k *catalog.ConcurrencyConstraint, _ time.Time) catalog.Command {
		return &catalog.DeleteConcurrencyConstraint{WorkspaceID: k.WorkspaceID, ID: k.ID}
	},
	View:   kernel.ViewOf(constraintView),
	SortID: func(v *ConcurrencyConstraintView) string { return v.ConstraintID },
	List: func(vs []ConcurrencyConstraintView) *ConcurrencyConstraintList {
		return &ConcurrencyConstraintList{Constraints: vs}
	},
}

// dependencies is the admin CRUD of dependencies; GET of one adds its
// breaker's live state, read from the breaker's owner.
func (a adminAPI) dependencies() *kernel.Resource[catalog.Dependency, DependencyInput, DependencyView, DependencyList] {
	return &kernel.Resource[catalog.Dependency, DependencyInput, DependencyView, DependencyList]{
		What: "dependency", Path: "/workspaces/{workspace_id}/dependencies", Param: "dependency_id",
		ID: "Dependency", IDs: "Dependencies",
		Summary: map[string]string{"create": "Configure a dependency's circuit breaker, retry budget and bulkhead.",
			"list": "List a workspace's dependencies.", "get": "Read a dependency and its breaker's live state.",
			"update": "Change a dependency; the next admission uses the new settings."},
		CreateErrors: []kernel.ErrorCode{kernel.ErrConflict}, UpdateErrors: []kernel.ErrorCode{kernel.ErrConflict},
		Table:  func(c *catalog.Catalog) map[string]*catalog.Dependency { return c.Dependencies },
		Owner:  func(d *catalog.Dependency) string { return d.WorkspaceID },
		Build:  buildDependency,
		Create: func(d catalog.Dependency) catalog.Command { return &catalog.PutDependency{Dependency: d} },
		Update: func(_ *DependencyInput, d catalog.Dependency) catalog.Command {
			return &catalog.PutDependency{Dependency: d}
		},
		Delete: func(d *catalog.Dependency, _ time.Time) catalog.Command {
			return &catalog.DeleteDependency{WorkspaceID: d.WorkspaceID, ID: d.ID}
		},
		View: kernel.ViewOf(dependencyView),
		Get: func(_ *kernel.Call, d *catalog.Dependency) *DependencyView {
			v := dependencyView(d)
			peek := &actors.BreakerPeek{Key: actors.BreakerKey(d.WorkspaceID, d.ID)}
			if err := a.router.Ask(peek.Key, peek); err == nil {
				v.Live = &DependencyLive{State: peek.State.String(), Calls: peek.Calls, Failures: peek.Failures, InFlight: peek.InFlight}
			}
			return v
		},
		SortID: func(v *DependencyView) string { return v.Name },
		List:   func(vs []DependencyView) *DependencyList { return &DependencyList{Dependencies: vs} },
	}
}

func constraintView(k *catalog.ConcurrencyConstraint) *ConcurrencyConstraintView {
	return &ConcurrencyConstraintView{ConstraintID: k.ID, WorkspaceID: k.WorkspaceID, Name: k.Name, Scope: k.Scope,
		ApplicationID: k.ApplicationID, ActionPattern: k.ActionPattern, Capacity: k.Capacity, MinTTLMs: k.MinTTLMs,
		MaxTTLMs: k.MaxTTLMs, DefaultTTLMs: k.DefaultTTLMs, CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt}
}

func dependencyView(d *catalog.Dependency) *DependencyView {
	return &DependencyView{DependencyID: d.ID, WorkspaceID: d.WorkspaceID, Name: d.Name, WindowSize: d.WindowSize,
		MinimumCalls: d.MinimumCalls, FailureRateThreshold: d.FailureRateThreshold, ConsecutiveFailures: d.ConsecutiveFailures,
		OpenDurationMs: d.OpenDurationMs, HalfOpenProbes: d.HalfOpenProbes, SlowCallMs: d.SlowCallMs, RetryRatio: d.RetryRatio,
		RetryMinPerSecond: d.RetryMinPerSecond, RetryTTLMs: d.RetryTTLMs, MaxConcurrent: d.MaxConcurrent,
		AdmissionTTLMs: d.AdmissionTTLMs, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

// validConfigName accepts 1 to 64 letters, digits, '.', '_', ':' or '-'.
func validConfigName(v string) bool {
	if len(v) == 0 || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == ':' || ch == '-') {
			return false
		}
	}
	return true
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// buildConstraint lays the input over the defaults (create) or the stored
// constraint (update) and validates the result whole.
func buildConstraint(c *kernel.Call, in *ConcurrencyConstraintInput, cur *catalog.ConcurrencyConstraint, workspaceID string) (catalog.ConcurrencyConstraint, string, error) {
	k := catalog.ConcurrencyConstraint{ID: uuid.NewString(), WorkspaceID: workspaceID, Scope: catalog.ScopeWorkspace,
		MinTTLMs: 1000, MaxTTLMs: 300_000, DefaultTTLMs: 30_000, CreatedAt: c.Now().UTC()}
	if cur != nil {
		k = *cur
	} else if in.Name == nil || in.ActionPattern == nil || in.Capacity == nil {
		return k, "", kernel.Invalid("name, action_pattern, capacity", "required")
	}
	setIf(&k.Name, in.Name)
	setIf(&k.Scope, in.Scope)
	setIf(&k.ApplicationID, in.ApplicationID)
	setIf(&k.ActionPattern, in.ActionPattern)
	setIf(&k.Capacity, in.Capacity)
	setIf(&k.MinTTLMs, in.MinTTLMs)
	setIf(&k.MaxTTLMs, in.MaxTTLMs)
	setIf(&k.DefaultTTLMs, in.DefaultTTLMs)
	k.UpdatedAt = c.Now().UTC()
	if err := validateConstraint(c.Catalog(), &k); err != nil {
		return k, "", err
	}
	if cur == nil && len(c.Catalog().ConstraintsOf(workspaceID)) >= token.MaxLeaseSlots {
		return k, "", kernel.Invalid("name", "a workspace holds at most "+strconv.Itoa(token.MaxLeaseSlots)+" concurrency constraints")
	}
	return k, "", nil
}

func validateConstraint(cat *catalog.Catalog, k *catalog.ConcurrencyConstraint) error {
	switch {
	case !validConfigName(k.Name):
		return kernel.Invalid("name", "1 to 64 letters, digits, '.', '_', ':' or '-'")
	case k.Scope != catalog.ScopeWorkspace && k.Scope != catalog.ScopeApplication && k.Scope != catalog.ScopeSubject &&
		k.Scope != catalog.ScopeDevice && k.Scope != catalog.ScopeCustom:
		return kernel.Invalid("scope", "must be workspace, application, subject, device or custom")
	case !ratelimit.ValidPattern(k.ActionPattern):
		return kernel.Invalid("action_pattern", "must be *, an action name or a prefix pattern such as export.*")
	case k.Capacity < 1 || k.Capacity > 1_000_000:
		return kernel.Invalid("capacity", "must be 1 to 1000000")
	case k.MinTTLMs < lease.MinTTLMs || k.MinTTLMs > lease.MaxTTLMs:
		return kernel.Invalid("min_ttl_ms", "must be 100 to 86400000")
	case k.MaxTTLMs < k.MinTTLMs || k.MaxTTLMs > lease.MaxTTLMs:
		return kernel.Invalid("max_ttl_ms", "must be min_ttl_ms to 86400000")
	case k.DefaultTTLMs < k.MinTTLMs || k.DefaultTTLMs > k.MaxTTLMs:
		return kernel.Invalid("default_ttl_ms", "must be within min_ttl_ms and max_ttl_ms")
	}
	if k.ApplicationID != "" {
		site, app := cat.Sites[k.ApplicationID], cat.MobileApps[k.ApplicationID]
		if (site == nil || site.WorkspaceID != k.WorkspaceID) && (app == nil || app.WorkspaceID != k.WorkspaceID) {
			return kernel.Invalid("application_id", "no site or mobile app "+k.ApplicationID+" in this workspace")
		}
	}
	return nil
}

// buildDependency lays the input over the defaults (create) or the stored
// dependency (update) and validates the result whole.
func buildDependency(c *kernel.Call, in *DependencyInput, cur *catalog.Dependency, workspaceID string) (catalog.Dependency, string, error) {
	d := catalog.Dependency{ID: uuid.NewString(), WorkspaceID: workspaceID, FailureRateThreshold: 0.5, OpenDurationMs: 60_000,
		HalfOpenProbes: 10, WindowSize: 100, RetryRatio: 0.2, RetryMinPerSecond: 10, RetryTTLMs: 10_000,
		AdmissionTTLMs: 30_000, CreatedAt: c.Now().UTC()}
	if cur != nil {
		d = *cur
	} else if in.Name == nil {
		return d, "", kernel.Invalid("name", "required")
	}
	setIf(&d.Name, in.Name)
	setIf(&d.WindowSize, in.WindowSize)
	setIf(&d.MinimumCalls, in.MinimumCalls)
	if cur == nil && in.MinimumCalls == nil {
		d.MinimumCalls = d.WindowSize
	}
	setIf(&d.FailureRateThreshold, in.FailureRateThreshold)
	setIf(&d.ConsecutiveFailures, in.ConsecutiveFailures)
	setIf(&d.OpenDurationMs, in.OpenDurationMs)
	setIf(&d.HalfOpenProbes, in.HalfOpenProbes)
	setIf(&d.SlowCallMs, in.SlowCallMs)
	setIf(&d.RetryRatio, in.RetryRatio)
	setIf(&d.RetryMinPerSecond, in.RetryMinPerSecond)
	setIf(&d.RetryTTLMs, in.RetryTTLMs)
	setIf(&d.MaxConcurrent, in.MaxConcurrent)
	setIf(&d.AdmissionTTLMs, in.AdmissionTTLMs)
	d.UpdatedAt = c.Now().UTC()
	return d, "", validateDependency(&d)
}

func validateDependency(d *catalog.Dependency) error {
	switch {
	case !validConfigName(d.Name):
		return kernel.Invalid("name", "1 to 64 letters, digits, '.', '_', ':' or '-'")
	case d.OpenDurationMs < 10 || d.OpenDurationMs > 86_400_000:
		return kernel.Invalid("open_duration_ms", "must be 10 to 86400000")
	case d.SlowCallMs < 0 || d.SlowCallMs > 3_600_000:
		return kernel.Invalid("slow_call_ms", "must be 0 to 3600000")
	case d.MaxConcurrent < 0 || d.MaxConcurrent > 1_000_000:
		return kernel.Invalid("max_concurrent", "must be 0 to 1000000")
	case d.AdmissionTTLMs < 100 || d.AdmissionTTLMs > 3_600_000:
		return kernel.Invalid("admission_ttl_ms", "must be 100 to 3600000")
	case d.RetryTTLMs < 1000 || d.RetryTTLMs > 3_600_000:
		return kernel.Invalid("retry_ttl_ms", "must be 1000 to 3600000")
	}
	cfg := admission.Config(d)
	if err := cfg.Breaker.Validate(); err != nil {
		field := map[error]string{
			resilience.ErrWindowSize: "window_size", resilience.ErrMinimumCalls: "minimum_calls",
			resilience.ErrFailureRate: "failure_rate_threshold", resilience.ErrConsecutiveFailures: "consecutive_failures",
			resilience.ErrOpenDuration: "open_duration_ms", resilience.ErrHalfOpenProbes: "half_open_probes",
		}
		for sentinel, name := range field {
			if errors.Is(err, sentinel) {
				return kernel.Invalid(name, err.Error())
			}
		}
		return kernel.Invalid("dependency", err.Error())
	}
	if err := cfg.Budget.Validate(); err != nil {
		switch {
		case errors.Is(err, resilience.ErrMinPerSecond):
			return kernel.Invalid("retry_min_per_second", err.Error())
		case errors.Is(err, resilience.ErrRetryRatio):
			return kernel.Invalid("retry_ratio", err.Error())
		}
		return kernel.Invalid("retry_ttl_ms", err.Error())
	}
	return nil
}
