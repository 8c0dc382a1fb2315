package http

import (
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/risk/apiprotection"
	"math"
	"strings"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ratelimit"
)

// Admin API of API Protection policies and the public routes of the module.

// APILimitsBody are request-shape ceilings; 0 leaves a dimension unchecked.
type APILimitsBody struct {
	BodyBytes    int64   `json:"body_bytes" doc:"Largest expected body, bytes."`
	PageSize     int64   `json:"page_size" doc:"Largest expected page size."`
	QueryDepth   int64   `json:"query_depth" doc:"Deepest expected query (GraphQL nesting, filter depth)."`
	ResourceCost float64 `json:"resource_cost" doc:"Highest expected resource cost."`
}

// APIVelocityBody are request counts allowed per key within a window; 0
// leaves a key untracked.
type APIVelocityBody struct {
	WindowSeconds int64 `json:"window_seconds" doc:"1 to 86400; 0 turns velocity tracking off."`
	PerSubject    int64 `json:"per_subject"`
	PerDevice     int64 `json:"per_device"`
	PerRoute      int64 `json:"per_route" doc:"Counted per method and path."`
}

// APIProtectionPolicyInput creates (name and path_pattern required) or
// patches an API Protection policy.
type APIProtectionPolicyInput struct {
	Name                  *string           `json:"name,omitempty" required:"true"`
	Target                *PolicyTargetBody `json:"target,omitempty" doc:"Default: the whole workspace. Site targets apply to assessments made with that site's secret."`
	PathPattern           *string           `json:"path_pattern,omitempty" required:"true" doc:"An exact path (/v2/orders), a prefix (/v2/orders/*) or *."`
	Method                *string           `json:"method,omitempty" doc:"An HTTP method or *; default *."`
	RequireAuthentication *bool             `json:"require_authentication,omitempty"`
	Limits                *APILimitsBody    `json:"limits,omitempty"`
	Velocity              *APIVelocityBody  `json:"velocity,omitempty"`
	EnforcementMode       *string           `json:"enforcement_mode,omitempty" enum:"observe|enforce" doc:"Default observe."`
}

// APIProtectionPolicyView is a policy as the admin API shows it.
type APIProtectionPolicyView struct {
	PolicyID              string           `json:"policy_id" required:"true" format:"uuid"`
	WorkspaceID           string           `json:"workspace_id" required:"true" format:"uuid"`
	Name                  string           `json:"name" required:"true"`
	Target                PolicyTargetBody `json:"target" required:"true"`
	PathPattern           string           `json:"path_pattern" required:"true"`
	Method                string           `json:"method" required:"true"`
	RequireAuthentication bool             `json:"require_authentication" required:"true"`
	Limits                APILimitsBody    `json:"limits" required:"true"`
	Velocity              APIVelocityBody  `json:"velocity" required:"true"`
	EnforcementMode       string           `json:"enforcement_mode" required:"true"`
	Revision              int64            `json:"revision" required:"true"`
	CreatedAt             time.Time        `json:"created_at" required:"true"`
	UpdatedAt             time.Time        `json:"updated_at" required:"true"`
}

// APIProtectionPolicyList is the answer of GET …/api-protection-policies.
type APIProtectionPolicyList struct {
	Policies []APIProtectionPolicyView `json:"policies" required:"true"`
}

func apPolicyView(p *catalog.APIProtectionPolicy) *APIProtectionPolicyView {
	return &APIProtectionPolicyView{PolicyID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name,
		Target: PolicyTargetBody{Type: p.Target.Type, ID: p.Target.ID}, PathPattern: p.PathPattern, Method: p.Method,
		RequireAuthentication: p.RequireAuthentication, Limits: APILimitsBody(p.Limits), Velocity: APIVelocityBody(p.Velocity),
		EnforcementMode: p.EnforcementMode, Revision: p.Revision, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func validPathPattern(p string) bool {
	if p == "*" {
		return true
	}
	return ident.Route(strings.TrimSuffix(p, "*")) && !strings.Contains(strings.TrimSuffix(p, "/*"), "*")
}

// toPolicy validates a complete input and builds the catalog policy.
func (in *APIProtectionPolicyInput) toPolicy(cat *catalog.Catalog, workspaceID string) (catalog.APIProtectionPolicy, error) {
	var p catalog.APIProtectionPolicy
	if err := validName("name", in.Name); err != nil {
		return p, err
	}
	if err := validTarget(cat, workspaceID, in.Target); err != nil {
		return p, err
	}
	if in.PathPattern == nil || !validPathPattern(*in.PathPattern) {
		return p, invalid("path_pattern", "required: an exact path, a prefix ending in /*, or *")
	}
	if in.Method == nil || !ratelimit.ValidMethodPattern(*in.Method) {
		return p, invalid("method", "an HTTP method such as GET, or *")
	}
	l := in.Limits
	if l.BodyBytes < 0 || l.PageSize < 0 || l.QueryDepth < 0 || l.ResourceCost < 0 || math.IsNaN(l.ResourceCost) || math.IsInf(l.ResourceCost, 0) {
		return p, invalid("limits", "every limit must be 0 (unchecked) or positive")
	}
	v := in.Velocity
	if v.WindowSeconds < 0 || v.WindowSeconds > 86400 || v.PerSubject < 0 || v.PerDevice < 0 || v.PerRoute < 0 {
		return p, invalid("velocity", "window_seconds 0 to 86400 and non-negative thresholds")
	}
	if m := deref(in.EnforcementMode); m != "observe" && m != "enforce" {
		return p, invalid("enforcement_mode", "must be observe or enforce")
	}
	method := *in.Method
	if method != "*" {
		method = strings.ToUpper(method)
	}
	return catalog.APIProtectionPolicy{WorkspaceID: workspaceID, Name: strings.TrimSpace(*in.Name),
		Target: catalog.PolicyTarget{Type: in.Target.Type, ID: in.Target.ID}, PathPattern: *in.PathPattern, Method: method,
		RequireAuthentication: deref(in.RequireAuthentication), Limits: catalog.APILimits(*l), Velocity: catalog.APIVelocity(*v),
		EnforcementMode: *in.EnforcementMode}, nil
}

func (in *APIProtectionPolicyInput) withDefaults() {
	defaultTo(&in.Target, PolicyTargetBody{Type: catalog.TargetWorkspace})
	defaultTo(&in.Method, "*")
	defaultTo(&in.Limits, APILimitsBody{})
	defaultTo(&in.Velocity, APIVelocityBody{})
	defaultTo(&in.EnforcementMode, "observe")
	defaultTo(&in.RequireAuthentication, false)
}

// mergeInto overlays a patch on current; nested objects are replaced whole.
func (in *APIProtectionPolicyInput) mergeInto(cur *catalog.APIProtectionPolicy) *APIProtectionPolicyInput {
	v := apPolicyView(cur)
	out := &APIProtectionPolicyInput{Name: &v.Name, Target: &v.Target, PathPattern: &v.PathPattern, Method: &v.Method,
		RequireAuthentication: &v.RequireAuthentication, Limits: &v.Limits, Velocity: &v.Velocity, EnforcementMode: &v.EnforcementMode}
	overlay(&out.Name, in.Name)
	overlay(&out.Target, in.Target)
	overlay(&out.PathPattern, in.PathPattern)
	overlay(&out.Method, in.Method)
	overlay(&out.RequireAuthentication, in.RequireAuthentication)
	overlay(&out.Limits, in.Limits)
	overlay(&out.Velocity, in.Velocity)
	overlay(&out.EnforcementMode, in.EnforcementMode)
	return out
}

// apiProtectionPolicies is the admin CRUD of API Protection policies.
var apiProtectionPolicies = &resource[catalog.APIProtectionPolicy, APIProtectionPolicyInput, APIProtectionPolicyView, APIProtectionPolicyList]{
	what: "API Protection policy", path: "/workspaces/{workspace_id}/api-protection-policies", param: "policy_id",
	id: "APIProtectionPolicy", ids: "APIProtectionPolicies",
	table: func(c *catalog.Catalog) map[string]*catalog.APIProtectionPolicy { return c.APIProtectionPolicies },
	owner: func(p *catalog.APIProtectionPolicy) string { return p.WorkspaceID },
	build: func(c *Call, in *APIProtectionPolicyInput, cur *catalog.APIProtectionPolicy, workspaceID string) (catalog.APIProtectionPolicy, string, error) {
		if cur == nil {
			in.withDefaults()
		} else {
			in = in.mergeInto(cur)
		}
		p, err := in.toPolicy(c.cat, workspaceID)
		return p, "", err
	},
	stamp: func(p, cur *catalog.APIProtectionPolicy, now time.Time) {
		p.ID, p.CreatedAt, p.UpdatedAt = stamped(cur, func(c *catalog.APIProtectionPolicy) (string, time.Time) { return c.ID, c.CreatedAt }, now)
	},
	create: func(p catalog.APIProtectionPolicy) catalog.Command {
		return &catalog.CreateAPIProtectionPolicy{Policy: p}
	},
	update: func(_ *APIProtectionPolicyInput, p catalog.APIProtectionPolicy) catalog.Command {
		return &catalog.ReplaceAPIProtectionPolicy{Policy: p}
	},
	delete: func(p *catalog.APIProtectionPolicy, _ time.Time) catalog.Command {
		return &catalog.DeleteAPIProtectionPolicy{WorkspaceID: p.WorkspaceID, ID: p.ID}
	},
	view:         viewOf(apPolicyView),
	sortID:       func(v *APIProtectionPolicyView) string { return v.PolicyID },
	createErrors: []ErrorCode{ErrConflict},
	list: func(vs []APIProtectionPolicyView) *APIProtectionPolicyList {
		return &APIProtectionPolicyList{Policies: vs}
	},
}

func (s *Server) apiProtectionRoutes() []Route {
	public := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrUnauthorized, ErrForbidden, ErrUnavailable}
	return append(apiProtectionPolicies.routes(s), []Route{
		{Method: "POST", Path: "/api-protection/assess", ID: "apiProtectionAssess", Tag: "API Protection",
			Summary: "Score an API request's shape, velocity and idempotency against the workspace's API Protection policy.",
			Auth:    []Auth{AuthCredential, AuthSiteSecret}, Body: &APIAssessInput{}, Result: &apiprotection.APIAssessment{},
			Errors: public, Handle: s.apiProtectionAssess},
		{Method: "POST", Path: "/api-protection/feedback", ID: "apiProtectionFeedback", Tag: "API Protection",
			Summary: "Label an assessment; labels of a subject raise or lower the risk of its later assessments.",
			Auth:    []Auth{AuthCredential, AuthSiteSecret}, Body: &APIFeedbackInput{}, Result: &apiprotection.FeedbackRecord{},
			Errors: append(public, ErrNotFound), Handle: s.apiProtectionFeedback},
	}...)
}
