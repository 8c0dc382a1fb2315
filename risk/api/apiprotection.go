package api

import (
	"math"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/risk/apiprotection"
)

// API Protection (spec 2.4, 2.5, 4.5): its policies' admin API on the
// generic admin resource, and the public operations. Scoring, velocity,
// idempotency and feedback are risk/apiprotection's.

// APIAssessInput is the body of POST /api-protection/assess (spec 4.5).
type APIAssessInput struct {
	Secret string `json:"secret,omitempty" doc:"Site secret, when no scoped credential is sent as Authorization: Bearer."`
	apiprotection.AssessRequest
}

// APIFeedbackInput is the body of POST /api-protection/feedback.
type APIFeedbackInput struct {
	Secret string `json:"secret,omitempty"`
	apiprotection.FeedbackRequest
}

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
	Name                  *string                   `json:"name,omitempty" required:"true"`
	Target                *catalog.PolicyTargetBody `json:"target,omitempty" doc:"Default: the whole workspace. Site targets apply to assessments made with that site's secret."`
	PathPattern           *string                   `json:"path_pattern,omitempty" required:"true" doc:"An exact path (/v2/orders), a prefix (/v2/orders/*) or *."`
	Method                *string                   `json:"method,omitempty" doc:"An HTTP method or *; default *."`
	RequireAuthentication *bool                     `json:"require_authentication,omitempty"`
	Limits                *APILimitsBody            `json:"limits,omitempty"`
	Velocity              *APIVelocityBody          `json:"velocity,omitempty"`
	EnforcementMode       *string                   `json:"enforcement_mode,omitempty" enum:"observe|enforce" doc:"Default observe."`
}

// APIProtectionPolicyView is a policy as the admin API shows it.
type APIProtectionPolicyView struct {
	PolicyID              string                   `json:"policy_id" required:"true" format:"uuid"`
	WorkspaceID           string                   `json:"workspace_id" required:"true" format:"uuid"`
	Name                  string                   `json:"name" required:"true"`
	Target                catalog.PolicyTargetBody `json:"target" required:"true"`
	PathPattern           string                   `json:"path_pattern" required:"true"`
	Method                string                   `json:"method" required:"true"`
	RequireAuthentication bool                     `json:"require_authentication" required:"true"`
	Limits                APILimitsBody            `json:"limits" required:"true"`
	Velocity              APIVelocityBody          `json:"velocity" required:"true"`
	EnforcementMode       string                   `json:"enforcement_mode" required:"true"`
	Revision              int64                    `json:"revision" required:"true"`
	CreatedAt             time.Time                `json:"created_at" required:"true"`
	UpdatedAt             time.Time                `json:"updated_at" required:"true"`
}

// APIProtectionPolicyList is the answer of GET …/api-protection-policies.
type APIProtectionPolicyList struct {
	Policies []APIProtectionPolicyView `json:"policies" required:"true"`
}

func apPolicyView(p *catalog.APIProtectionPolicy) *APIProtectionPolicyView {
	return &APIProtectionPolicyView{PolicyID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name,
		Target: catalog.PolicyTargetBody{Type: p.Target.Type, ID: p.Target.ID}, PathPattern: p.PathPattern, Method: p.Method,
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
	if err := kernel.ValidName("name", in.Name); err != nil {
		return p, err
	}
	if err := cat.ValidPolicyTarget(workspaceID, in.Target); err != nil {
		return p, err
	}
	if in.PathPattern == nil || !validPathPattern(*in.PathPattern) {
		return p, kernel.Invalid("path_pattern", "required: an exact path, a prefix ending in /*, or *")
	}
	if in.Method == nil || !ratelimit.ValidMethodPattern(*in.Method) {
		return p, kernel.Invalid("method", "an HTTP method such as GET, or *")
	}
	l := in.Limits
	if l.BodyBytes < 0 || l.PageSize < 0 || l.QueryDepth < 0 || l.ResourceCost < 0 || math.IsNaN(l.ResourceCost) || math.IsInf(l.ResourceCost, 0) {
		return p, kernel.Invalid("limits", "every limit must be 0 (unchecked) or positive")
	}
	v := in.Velocity
	if v.WindowSeconds < 0 || v.WindowSeconds > 86400 || v.PerSubject < 0 || v.PerDevice < 0 || v.PerRoute < 0 {
		return p, kernel.Invalid("velocity", "window_seconds 0 to 86400 and non-negative thresholds")
	}
	if m := kernel.Deref(in.EnforcementMode); m != "observe" && m != "enforce" {
		return p, kernel.Invalid("enforcement_mode", "must be observe or enforce")
	}
	method := *in.Method
	if method != "*" {
		method = strings.ToUpper(method)
	}
	return catalog.APIProtectionPolicy{WorkspaceID: workspaceID, Name: strings.TrimSpace(*in.Name),
		Target: catalog.PolicyTarget{Type: in.Target.Type, ID: in.Target.ID}, PathPattern: *in.PathPattern, Method: method,
		RequireAuthentication: kernel.Deref(in.RequireAuthentication), Limits: catalog.APILimits(*l), Velocity: catalog.APIVelocity(*v),
		EnforcementMode: *in.EnforcementMode}, nil
}

func (in *APIProtectionPolicyInput) withDefaults() {
	kernel.DefaultTo(&in.Target, catalog.PolicyTargetBody{Type: catalog.TargetWorkspace})
	kernel.DefaultTo(&in.Method, "*")
	kernel.DefaultTo(&in.Limits, APILimitsBody{})
	kernel.DefaultTo(&in.Velocity, APIVelocityBody{})
	kernel.DefaultTo(&in.EnforcementMode, "observe")
	kernel.DefaultTo(&in.RequireAuthentication, false)
}

// mergeInto overlays a patch on current; nested objects are replaced whole.
func (in *APIProtectionPolicyInput) mergeInto(cur *catalog.APIProtectionPolicy) *APIProtectionPolicyInput {
	v := apPolicyView(cur)
	out := &APIProtectionPolicyInput{Name: &v.Name, Target: &v.Target, PathPattern: &v.PathPattern, Method: &v.Method,
		RequireAuthentication: &v.RequireAuthentication, Limits: &v.Limits, Velocity: &v.Velocity, EnforcementMode: &v.EnforcementMode}
	kernel.Overlay(&out.Name, in.Name)
	kernel.Overlay(&out.Target, in.Target)
	kernel.Overlay(&out.PathPattern, in.PathPattern)
	kernel.Overlay(&out.Method, in.Method)
	kernel.Overlay(&out.RequireAuthentication, in.RequireAuthentication)
	kernel.Overlay(&out.Limits, in.Limits)
	kernel.Overlay(&out.Velocity, in.Velocity)
	kernel.Overlay(&out.EnforcementMode, in.EnforcementMode)
	return out
}

// apiProtectionPolicies is the admin CRUD of API Protection policies.
var apiProtectionPolicies = &kernel.Resource[catalog.APIProtectionPolicy, APIProtectionPolicyInput, APIProtectionPolicyView, APIProtectionPolicyList]{
	What: "API Protection policy", Path: "/workspaces/{workspace_id}/api-protection-policies", Param: "policy_id",
	ID: "APIProtectionPolicy", IDs: "APIProtectionPolicies",
	Table: func(c *catalog.Catalog) map[string]*catalog.APIProtectionPolicy { return c.APIProtectionPolicies },
	Owner: func(p *catalog.APIProtectionPolicy) string { return p.WorkspaceID },
	Build: func(c *kernel.Call, in *APIProtectionPolicyInput, cur *catalog.APIProtectionPolicy, workspaceID string) (catalog.APIProtectionPolicy, string, error) {
		if cur == nil {
			in.withDefaults()
		} else {
			in = in.mergeInto(cur)
		}
		p, err := in.toPolicy(c.Catalog(), workspaceID)
		return p, "", err
	},
	Stamp: func(p, cur *catalog.APIProtectionPolicy, now time.Time) {
		p.ID, p.CreatedAt, p.UpdatedAt = kernel.Stamped(cur, func(c *catalog.APIProtectionPolicy) (string, time.Time) { return c.ID, c.CreatedAt }, now)
	},
	Create: func(p catalog.APIProtectionPolicy) catalog.Command {
		return &catalog.CreateAPIProtectionPolicy{Policy: p}
	},
	Update: func(_ *APIProtectionPolicyInput, p catalog.APIProtectionPolicy) catalog.Command {
		return &catalog.ReplaceAPIProtectionPolicy{Policy: p}
	},
	Delete: func(p *catalog.APIProtectionPolicy, _ time.Time) catalog.Command {
		return &catalog.DeleteAPIProtectionPolicy{WorkspaceID: p.WorkspaceID, ID: p.ID}
	},
	View:         kernel.ViewOf(apPolicyView),
	SortID:       func(v *APIProtectionPolicyView) string { return v.PolicyID },
	CreateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	List: func(vs []APIProtectionPolicyView) *APIProtectionPolicyList {
		return &APIProtectionPolicyList{Policies: vs}
	},
}

func (a apAPI) routes() []kernel.Route {
	public := []kernel.ErrorCode{kernel.ErrMalformedJSON, kernel.ErrUnknownField, kernel.ErrInvalidField, kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge,
		kernel.ErrUnauthorized, kernel.ErrForbidden, kernel.ErrUnavailable}
	auth := []kernel.Auth{kernel.AuthCredential, kernel.AuthSiteSecret}
	return append(apiProtectionPolicies.Routes(), []kernel.Route{
		{Method: "POST", Path: "/api-protection/assess", ID: "apiProtectionAssess", Tag: "API Protection",
			Summary: "Score an API request's shape, velocity and idempotency against the workspace's API Protection policy.",
			Auth:    auth, Body: &APIAssessInput{}, Result: &apiprotection.APIAssessment{},
			Errors: public, Handle: siteVerifyOp(a.assess)},
		{Method: "POST", Path: "/api-protection/feedback", ID: "apiProtectionFeedback", Tag: "API Protection",
			Summary: "Label an assessment; labels of a subject raise or lower the risk of its later assessments.",
			Auth:    auth, Body: &APIFeedbackInput{}, Result: &apiprotection.FeedbackRecord{},
			Errors: append(public, kernel.ErrNotFound), Handle: siteVerifyOp(a.feedback)},
	}...)
}

type apAPI struct{ m *apiprotection.Module }

func (in *APIAssessInput) SiteSecret() string   { return in.Secret }
func (in *APIFeedbackInput) SiteSecret() string { return in.Secret }

func (a apAPI) assess(c *kernel.Call, ws *catalog.Workspace, appID string, in *APIAssessInput) (*apiprotection.APIAssessment, error) {
	return a.m.Assess(c.Catalog(), apiprotection.Caller{Workspace: ws, AppID: appID}, &in.AssessRequest)
}

func (a apAPI) feedback(_ *kernel.Call, ws *catalog.Workspace, appID string, in *APIFeedbackInput) (*apiprotection.FeedbackRecord, error) {
	return a.m.Feedback(apiprotection.Caller{Workspace: ws, AppID: appID}, &in.FeedbackRequest)
}
