package http

import (
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/risk/apiprotection"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

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
	if in.Target == nil {
		in.Target = &PolicyTargetBody{Type: catalog.TargetWorkspace}
	}
	if in.Method == nil {
		in.Method = ptr("*")
	}
	if in.Limits == nil {
		in.Limits = &APILimitsBody{}
	}
	if in.Velocity == nil {
		in.Velocity = &APIVelocityBody{}
	}
	if in.EnforcementMode == nil {
		in.EnforcementMode = ptr("observe")
	}
	if in.RequireAuthentication == nil {
		in.RequireAuthentication = ptr(false)
	}
}

// mergeInto overlays a patch on current; nested objects are replaced whole.
func (in *APIProtectionPolicyInput) mergeInto(cur *catalog.APIProtectionPolicy) *APIProtectionPolicyInput {
	v := apPolicyView(cur)
	out := &APIProtectionPolicyInput{Name: &v.Name, Target: &v.Target, PathPattern: &v.PathPattern, Method: &v.Method,
		RequireAuthentication: &v.RequireAuthentication, Limits: &v.Limits, Velocity: &v.Velocity, EnforcementMode: &v.EnforcementMode}
	if in.Name != nil {
		out.Name = in.Name
	}
	if in.Target != nil {
		out.Target = in.Target
	}
	if in.PathPattern != nil {
		out.PathPattern = in.PathPattern
	}
	if in.Method != nil {
		out.Method = in.Method
	}
	if in.RequireAuthentication != nil {
		out.RequireAuthentication = in.RequireAuthentication
	}
	if in.Limits != nil {
		out.Limits = in.Limits
	}
	if in.Velocity != nil {
		out.Velocity = in.Velocity
	}
	if in.EnforcementMode != nil {
		out.EnforcementMode = in.EnforcementMode
	}
	return out
}

func (c *Call) apPolicy() *catalog.APIProtectionPolicy {
	return inWorkspace(c, c.cat.APIProtectionPolicies, "policy_id", "API Protection policy", func(v *catalog.APIProtectionPolicy) string { return v.WorkspaceID })
}

func (s *Server) createAPIProtectionPolicy(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	var in APIProtectionPolicyInput
	if !c.decode(&in) {
		return
	}
	in.withDefaults()
	p, err := in.toPolicy(c.cat, w.ID)
	if err != nil {
		c.failErr(err)
		return
	}
	now := c.Now().UTC()
	p.ID, p.CreatedAt, p.UpdatedAt = uuid.NewString(), now, now
	if v, ok := c.apply(&catalog.CreateAPIProtectionPolicy{Policy: p}); ok {
		c.ok(apPolicyView(v.(*catalog.APIProtectionPolicy)))
	}
}

func (s *Server) updateAPIProtectionPolicy(c *Call) {
	cur := c.apPolicy()
	if cur == nil {
		return
	}
	var in APIProtectionPolicyInput
	if !c.decode(&in) {
		return
	}
	p, err := in.mergeInto(cur).toPolicy(c.cat, cur.WorkspaceID)
	if err != nil {
		c.failErr(err)
		return
	}
	p.ID, p.CreatedAt, p.UpdatedAt = cur.ID, cur.CreatedAt, c.Now().UTC()
	if v, ok := c.apply(&catalog.ReplaceAPIProtectionPolicy{Policy: p}); ok {
		c.ok(apPolicyView(v.(*catalog.APIProtectionPolicy)))
	}
}

func (s *Server) listAPIProtectionPolicies(c *Call) {
	w := c.workspace()
	if w == nil {
		return
	}
	out := APIProtectionPolicyList{Policies: []APIProtectionPolicyView{}}
	for _, p := range c.cat.APIProtectionPoliciesOf(w.ID) {
		out.Policies = append(out.Policies, *apPolicyView(p))
	}
	sort.Slice(out.Policies, func(i, j int) bool { return out.Policies[i].PolicyID < out.Policies[j].PolicyID })
	c.ok(&out)
}

func (s *Server) apiProtectionRoutes() []Route {
	ws := "/workspaces/{workspace_id}/api-protection-policies"
	a := []Auth{AuthAdmin}
	public := []ErrorCode{ErrMalformedJSON, ErrUnknownField, ErrInvalidField, ErrUnsupportedType, ErrBodyTooLarge,
		ErrUnauthorized, ErrForbidden, ErrUnavailable}
	return []Route{
		{Method: "POST", Path: "/api-protection/assess", ID: "apiProtectionAssess", Tag: "API Protection",
			Summary: "Score an API request's shape, velocity and idempotency against the workspace's API Protection policy.",
			Auth:    []Auth{AuthCredential, AuthSiteSecret}, Body: &APIAssessInput{}, Result: &apiprotection.APIAssessment{},
			Errors: public, Handle: s.apiProtectionAssess},
		{Method: "POST", Path: "/api-protection/feedback", ID: "apiProtectionFeedback", Tag: "API Protection",
			Summary: "Label an assessment; labels of a subject raise or lower the risk of its later assessments.",
			Auth:    []Auth{AuthCredential, AuthSiteSecret}, Body: &APIFeedbackInput{}, Result: &apiprotection.FeedbackRecord{},
			Errors: append(public, ErrNotFound), Handle: s.apiProtectionFeedback},
		{Method: "POST", Path: ws, Admin: true, ID: "createAPIProtectionPolicy", Tag: "Admin", Auth: a, Summary: "Create an API Protection policy.",
			Body: &APIProtectionPolicyInput{}, Status: 201, Result: &APIProtectionPolicyView{}, Errors: append(adminErrors, ErrConflict),
			Handle: s.admin(s.createAPIProtectionPolicy)},
		{Method: "GET", Path: ws, Admin: true, ID: "listAPIProtectionPolicies", Tag: "Admin", Auth: a, Summary: "List API Protection policies.",
			Result: &APIProtectionPolicyList{}, Errors: adminErrors, Handle: s.admin(s.listAPIProtectionPolicies)},
		{Method: "GET", Path: ws + "/{policy_id}", Admin: true, ID: "getAPIProtectionPolicy", Tag: "Admin", Auth: a, Summary: "Read an API Protection policy.",
			Result: &APIProtectionPolicyView{}, Errors: adminErrors, Handle: s.admin(func(c *Call) {
				if p := c.apPolicy(); p != nil {
					c.ok(apPolicyView(p))
				}
			})},
		{Method: "PATCH", Path: ws + "/{policy_id}", Admin: true, ID: "updateAPIProtectionPolicy", Tag: "Admin", Auth: a, Summary: "Change an API Protection policy.",
			Body: &APIProtectionPolicyInput{}, Result: &APIProtectionPolicyView{}, Errors: adminErrors, Handle: s.admin(s.updateAPIProtectionPolicy)},
		{Method: "DELETE", Path: ws + "/{policy_id}", Admin: true, ID: "deleteAPIProtectionPolicy", Tag: "Admin", Auth: a, Summary: "Delete an API Protection policy.",
			Status: 204, Errors: adminErrors, Handle: s.admin(func(c *Call) {
				if p := c.apPolicy(); p != nil {
					if _, ok := c.apply(&catalog.DeleteAPIProtectionPolicy{WorkspaceID: p.WorkspaceID, ID: p.ID}); ok {
						c.noContent()
					}
				}
			})},
	}
}
