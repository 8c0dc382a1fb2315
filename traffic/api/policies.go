package api

import (
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// Admin API of rate-limit policies (spec 2.11): create, list, read, patch,
// delete, and the per-policy counters operators watch while a policy is
// observed before it is enforced.

// PolicyBucketBody is a token bucket.
type PolicyBucketBody struct {
	Capacity              int64 `json:"capacity" required:"true" doc:"1 to 1000000000000 tokens."`
	RefillAmount          int64 `json:"refill_amount" required:"true" doc:"Tokens credited per interval, 1 to capacity."`
	RefillIntervalSeconds int64 `json:"refill_interval_seconds" required:"true" doc:"1 to 31536000."`
}

// PolicyQuotaBody is a fixed quota on a UTC calendar window.
type PolicyQuotaBody struct {
	Limit  int64  `json:"limit" required:"true" doc:"1 to 1000000000000 units per window."`
	Window string `json:"window" required:"true" enum:"minute|hour|day|month"`
}

// RateLimitPolicyInput creates a policy (name, target, action_pattern,
// scope and bucket required) or patches one (any subset).
type RateLimitPolicyInput struct {
	Name              *string                   `json:"name,omitempty" doc:"1 to 100 characters." required:"true"`
	Target            *catalog.PolicyTargetBody `json:"target,omitempty" required:"true"`
	ActionPattern     *string                   `json:"action_pattern,omitempty" required:"true" doc:"An action (otp.send), a prefix pattern (payment.*) or *."`
	Method            *string                   `json:"method,omitempty" doc:"An HTTP method or *; default *."`
	Scope             *string                   `json:"scope,omitempty" required:"true" enum:"workspace|application|subject|device|route|custom"`
	Bucket            *PolicyBucketBody         `json:"bucket,omitempty" required:"true"`
	DefaultCost       *int64                    `json:"default_cost,omitempty" doc:"Minimum cost of a check, 1 to capacity; default 1."`
	Quota             *PolicyQuotaBody          `json:"quota,omitempty" doc:"Optional fixed quota. On PATCH, null removes it."`
	AdaptiveCost      *bool                     `json:"adaptive_cost,omitempty" doc:"Multiply the cost by an API Protection assessment's risk; needs the workspace setting too. Default false."`
	Mode              *string                   `json:"mode,omitempty" enum:"observe|throttle|enforce|workspace_default" doc:"Default workspace_default."`
	DegradedBehaviour *string                   `json:"degraded_behaviour,omitempty" enum:"fail_open|fail_closed" doc:"Answer when the bucket's owner is unavailable; default fail_open."`
	EnforcePercentage *int                      `json:"enforce_percentage,omitempty" doc:"0 to 100, default 100: the share of scope keys (by a stable hash) that are enforced; the others are observed."`
}

// RateLimitPolicyView is a policy as the admin API shows it.
type RateLimitPolicyView struct {
	PolicyID          string                   `json:"policy_id" required:"true" format:"uuid"`
	WorkspaceID       string                   `json:"workspace_id" required:"true" format:"uuid"`
	Name              string                   `json:"name" required:"true"`
	Target            catalog.PolicyTargetBody `json:"target" required:"true"`
	ActionPattern     string                   `json:"action_pattern" required:"true"`
	Method            string                   `json:"method" required:"true"`
	Scope             string                   `json:"scope" required:"true"`
	Bucket            PolicyBucketBody         `json:"bucket" required:"true"`
	DefaultCost       int64                    `json:"default_cost" required:"true"`
	Quota             *PolicyQuotaBody         `json:"quota,omitempty"`
	AdaptiveCost      bool                     `json:"adaptive_cost" required:"true"`
	Mode              string                   `json:"mode" required:"true"`
	DegradedBehaviour string                   `json:"degraded_behaviour" required:"true"`
	EnforcePercentage int                      `json:"enforce_percentage" required:"true"`
	Revision          int64                    `json:"revision" required:"true" doc:"Counts the policy's writes."`
	CreatedAt         time.Time                `json:"created_at" required:"true"`
	UpdatedAt         time.Time                `json:"updated_at" required:"true"`
}

// RateLimitPolicyList is the answer of GET …/rate-limit-policies.
type RateLimitPolicyList struct {
	Policies []RateLimitPolicyView `json:"policies" required:"true"`
}

// RateLimitPolicyStats are a policy's counters on the node that answers
// (each node counts the checks it served), or with scope=cluster their sum
// over the live members that answered.
type RateLimitPolicyStats struct {
	PolicyID              string    `json:"policy_id" required:"true" format:"uuid"`
	Node                  string    `json:"node" required:"true" doc:"The node that counted, or \"cluster\" for the sum over members."`
	Members               int       `json:"members,omitempty" doc:"scope=cluster: the live members asked."`
	Answered              int       `json:"answered,omitempty" doc:"scope=cluster: the members whose counters are in the sum (a member that does not answer within 2 s is left out)."`
	Since                 time.Time `json:"since" required:"true" doc:"When this node started counting (scope=cluster: the earliest of the members summed)."`
	Matched               uint64    `json:"matched" required:"true" doc:"Checks the policy took part in."`
	Allowed               uint64    `json:"allowed" required:"true" doc:"Enforced checks it allowed."`
	Throttled             uint64    `json:"throttled" required:"true" doc:"Enforced checks it throttled."`
	Rejected              uint64    `json:"rejected" required:"true" doc:"Enforced checks it rejected."`
	ObservedWouldThrottle uint64    `json:"observed_would_throttle" required:"true" doc:"Observed checks it would have throttled."`
	ObservedWouldReject   uint64    `json:"observed_would_reject" required:"true" doc:"Observed checks it would have rejected."`
	DegradedFailOpen      uint64    `json:"degraded_fail_open" required:"true"`
	DegradedFailClosed    uint64    `json:"degraded_fail_closed" required:"true"`
}

func policyView(p *catalog.RateLimitPolicy) *RateLimitPolicyView {
	v := &RateLimitPolicyView{PolicyID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name,
		Target: catalog.PolicyTargetBody{Type: p.Target.Type, ID: p.Target.ID}, ActionPattern: p.ActionPattern,
		Method: p.Method, Scope: p.Scope,
		Bucket: PolicyBucketBody{Capacity: p.Bucket.Capacity, RefillAmount: p.Bucket.RefillAmount,
			RefillIntervalSeconds: p.Bucket.RefillIntervalSeconds},
		DefaultCost: p.DefaultCost, AdaptiveCost: p.AdaptiveCost, Mode: p.Mode,
		DegradedBehaviour: p.DegradedBehaviour, EnforcePercentage: p.EnforcePercentage,
		Revision: p.Revision, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if p.Quota != nil {
		v.Quota = &PolicyQuotaBody{Limit: p.Quota.Limit, Window: p.Quota.Window}
	}
	return v
}

// toPolicy validates a complete input (after defaults or a merge) and
// builds the catalog policy.
func (in *RateLimitPolicyInput) toPolicy(cat *catalog.Catalog, workspaceID string) (catalog.RateLimitPolicy, error) {
	var p catalog.RateLimitPolicy
	if err := kernel.ValidName("name", in.Name); err != nil {
		return p, err
	}
	if in.Target == nil {
		return p, kernel.Invalid("target", "required")
	}
	if err := cat.ValidPolicyTarget(workspaceID, in.Target); err != nil {
		return p, err
	}
	if in.ActionPattern == nil || !ratelimit.ValidPattern(*in.ActionPattern) {
		return p, kernel.Invalid("action_pattern", "required: an action such as otp.send, a prefix pattern such as payment.*, or *")
	}
	if in.Method == nil || !ratelimit.ValidMethodPattern(*in.Method) {
		return p, kernel.Invalid("method", "an HTTP method such as POST, or *")
	}
	if in.Scope == nil {
		return p, kernel.Invalid("scope", "required")
	}
	if _, ok := ratecheck.ParseScope(*in.Scope); !ok {
		return p, kernel.Invalid("scope", "must be workspace, application, subject, device, route or custom")
	}
	if in.Bucket == nil {
		return p, kernel.Invalid("bucket", "required: capacity, refill_amount, refill_interval_seconds")
	}
	b := in.Bucket
	if b.RefillIntervalSeconds < 1 || b.RefillIntervalSeconds > 365*24*3600 {
		return p, kernel.Invalid("bucket.refill_interval_seconds", "must be 1 to 31536000")
	}
	cfg := ratelimit.BucketConfig{Capacity: b.Capacity, RefillAmount: b.RefillAmount, RefillInterval: b.RefillIntervalSeconds * int64(time.Second)}
	if err := cfg.Validate(); err != nil {
		if b.Capacity < 1 || b.Capacity > ratelimit.MaxCapacity {
			return p, kernel.Invalid("bucket.capacity", "must be 1 to 1000000000000")
		}
		return p, kernel.Invalid("bucket.refill_amount", "must be 1 to capacity")
	}
	if in.DefaultCost == nil || *in.DefaultCost < 1 || *in.DefaultCost > b.Capacity {
		return p, kernel.Invalid("default_cost", "must be 1 to the bucket capacity (a larger cost could never be admitted)")
	}
	if q := in.Quota; q != nil {
		if q.Limit < 1 || q.Limit > ratelimit.MaxCapacity {
			return p, kernel.Invalid("quota.limit", "must be 1 to 1000000000000")
		}
		if _, err := ratelimit.ParseWindow(q.Window); err != nil {
			return p, kernel.Invalid("quota.window", "must be minute, hour, day or month")
		}
		if *in.DefaultCost > q.Limit {
			return p, kernel.Invalid("default_cost", "must not exceed quota.limit")
		}
	}
	switch m := kernel.Deref(in.Mode); m {
	case "observe", "throttle", "enforce", "workspace_default":
	default:
		return p, kernel.Invalid("mode", "must be observe, throttle, enforce or workspace_default")
	}
	switch d := kernel.Deref(in.DegradedBehaviour); d {
	case "fail_open", "fail_closed":
	default:
		return p, kernel.Invalid("degraded_behaviour", "must be fail_open or fail_closed")
	}
	if in.EnforcePercentage == nil || *in.EnforcePercentage < 0 || *in.EnforcePercentage > 100 {
		return p, kernel.Invalid("enforce_percentage", "must be 0 to 100")
	}
	method := *in.Method
	if method != "*" {
		method = strings.ToUpper(method)
	}
	p = catalog.RateLimitPolicy{WorkspaceID: workspaceID, Name: strings.TrimSpace(*in.Name),
		Target:        catalog.PolicyTarget{Type: in.Target.Type, ID: in.Target.ID},
		ActionPattern: strings.ToLower(*in.ActionPattern), Method: method, Scope: *in.Scope,
		Bucket:      catalog.PolicyBucket{Capacity: b.Capacity, RefillAmount: b.RefillAmount, RefillIntervalSeconds: b.RefillIntervalSeconds},
		DefaultCost: *in.DefaultCost, AdaptiveCost: in.AdaptiveCost != nil && *in.AdaptiveCost,
		Mode: *in.Mode, DegradedBehaviour: *in.DegradedBehaviour, EnforcePercentage: *in.EnforcePercentage}
	if q := in.Quota; q != nil {
		p.Quota = &catalog.PolicyQuota{Limit: q.Limit, Window: q.Window}
	}
	return p, nil
}

// withDefaults fills what a create may leave out.
func (in *RateLimitPolicyInput) withDefaults() {
	kernel.DefaultTo(&in.Method, "*")
	kernel.DefaultTo(&in.DefaultCost, int64(1))
	kernel.DefaultTo(&in.Mode, "workspace_default")
	kernel.DefaultTo(&in.DegradedBehaviour, "fail_open")
	kernel.DefaultTo(&in.EnforcePercentage, 100)
}

// mergeInto overlays a patch on the input form of current.
func (in *RateLimitPolicyInput) mergeInto(cur *catalog.RateLimitPolicy, removeQuota bool) *RateLimitPolicyInput {
	v := policyView(cur)
	out := &RateLimitPolicyInput{Name: &v.Name, Target: &v.Target, ActionPattern: &v.ActionPattern, Method: &v.Method,
		Scope: &v.Scope, Bucket: &v.Bucket, DefaultCost: &v.DefaultCost, Quota: v.Quota, AdaptiveCost: &v.AdaptiveCost,
		Mode: &v.Mode, DegradedBehaviour: &v.DegradedBehaviour, EnforcePercentage: &v.EnforcePercentage}
	kernel.Overlay(&out.Name, in.Name)
	kernel.Overlay(&out.ActionPattern, in.ActionPattern)
	kernel.Overlay(&out.Method, in.Method)
	kernel.Overlay(&out.Scope, in.Scope)
	kernel.Overlay(&out.Mode, in.Mode)
	kernel.Overlay(&out.DegradedBehaviour, in.DegradedBehaviour)
	kernel.Overlay(&out.Target, in.Target)
	kernel.Overlay(&out.Bucket, in.Bucket)
	kernel.Overlay(&out.DefaultCost, in.DefaultCost)
	if in.Quota != nil {
		out.Quota = in.Quota
	} else if removeQuota {
		out.Quota = nil
	}
	kernel.Overlay(&out.AdaptiveCost, in.AdaptiveCost)
	kernel.Overlay(&out.EnforcePercentage, in.EnforcePercentage)
	return out
}

// bodySetsNull reports whether the JSON body has member name set to null
// (PATCH uses null to remove an optional part). The body was already
// decoded strictly, so it is well-formed here.
func bodySetsNull(body []byte, name string) bool {
	var probe map[string]jsontext.Value
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	v, ok := probe[name]
	return ok && string(v) == "null"
}

// RateLimitCheckInput is the body of POST /rate-limit/check (spec 4.10).
// The handler reads it with a strict hand-written scanner; this type
// documents it in the contract.
type RateLimitCheckInput struct {
	Secret                    string `json:"secret,omitempty" doc:"The site's private secret, when not sent as Authorization: Bearer."`
	Action                    string `json:"action" required:"true" doc:"Stable protected action name, e.g. payment.card or otp.send."`
	Method                    string `json:"method,omitempty" doc:"HTTP method for matching; default POST."`
	SubjectID                 string `json:"subject_id,omitempty" doc:"Required when a subject-scoped policy matches; kept only as a keyed hash."`
	DeviceID                  string `json:"device_id,omitempty" doc:"Required when a device-scoped policy matches; kept only as a keyed hash."`
	Route                     string `json:"route,omitempty" doc:"Required when a route-scoped policy matches: URL path only, no query string."`
	ScopeKey                  string `json:"scope_key,omitempty" doc:"Required when a custom-scoped policy matches."`
	Cost                      int64  `json:"cost,omitempty" doc:"Requested base cost, 1 to 1000000000; the policy's default cost is the minimum."`
	APIProtectionAssessmentID string `json:"api_protection_assessment_id,omitempty" format:"uuid" doc:"A fresh API Protection assessment of the same application, for adaptive cost."`
}

// MobileRateLimitCheckInput is the body of POST /mobile/rate-limit/check.
type MobileRateLimitCheckInput struct {
	Secret                    string `json:"secret,omitempty" doc:"The mobile server secret, when not sent as Authorization: Bearer."`
	Action                    string `json:"action" required:"true"`
	Method                    string `json:"method,omitempty"`
	SubjectID                 string `json:"subject_id,omitempty"`
	DeviceID                  string `json:"device_id,omitempty"`
	Route                     string `json:"route,omitempty"`
	ScopeKey                  string `json:"scope_key,omitempty"`
	Cost                      int64  `json:"cost,omitempty"`
	APIProtectionAssessmentID string `json:"api_protection_assessment_id,omitempty" format:"uuid"`
	Platform                  string `json:"platform" required:"true" doc:"Registered platform, e.g. android."`
	AppID                     string `json:"app_id" required:"true" doc:"Registered application identifier."`
}

// RateLimitDecision is the answer of the check (spec 2.10).
type RateLimitDecision struct {
	Success             bool                      `json:"success" required:"true"`
	DecisionID          string                    `json:"decision_id" required:"true" format:"uuid"`
	Allowed             bool                      `json:"allowed" required:"true" doc:"true only when decision is allow."`
	RecommendedDecision string                    `json:"recommended_decision" required:"true" enum:"allow|throttle|reject" doc:"What capacity recommends, including observed policies."`
	Decision            string                    `json:"decision" required:"true" enum:"allow|throttle|reject" doc:"What the application applies."`
	RetryAfterMs        int64                     `json:"retry_after_ms" required:"true" doc:"Wait until the refusing policies would admit this cost; 0 when allowed or when waiting cannot help."`
	RetryAfterSeconds   int64                     `json:"retry_after_seconds" required:"true"`
	MatchedPolicyCount  int                       `json:"matched_policy_count" required:"true"`
	Remaining           *int64                    `json:"remaining,omitempty" doc:"Lowest tokens left across matching policies; absent when no bucket answered."`
	AdaptiveMultiplier  float64                   `json:"adaptive_multiplier" required:"true" doc:"Highest authoritative cost multiplier applied (1 when none)."`
	ReasonCodes         []string                  `json:"reason_codes" required:"true" doc:"token-bucket-exhausted, fixed-window-quota-exceeded, no-matching-policy, observe-only, adaptive-cost-applied, adaptive-assessment-unusable, adaptive-assessment-unavailable, degraded-fail-open, degraded-fail-closed."`
	Policies            []RateLimitPolicyDecision `json:"policies" required:"true"`
}

// RateLimitPolicyDecision is one matching policy's part of a decision.
type RateLimitPolicyDecision struct {
	PolicyID            string               `json:"policy_id" required:"true" format:"uuid"`
	Name                string               `json:"name" required:"true"`
	Scope               string               `json:"scope" required:"true"`
	Mode                string               `json:"mode" required:"true" enum:"observe|throttle|enforce" doc:"The policy's mode, workspace default resolved."`
	Enforced            bool                 `json:"enforced" required:"true" doc:"false when the policy only observed this key (mode observe, or outside enforce_percentage): simulation capacity was used and allow applied."`
	RecommendedDecision string               `json:"recommended_decision" required:"true" enum:"allow|throttle|reject"`
	Decision            string               `json:"decision" required:"true" enum:"allow|throttle|reject"`
	Cost                int64                `json:"cost" required:"true" doc:"Tokens this check asked of the policy, adaptive multiplier included."`
	AdaptiveMultiplier  float64              `json:"adaptive_multiplier" required:"true"`
	Capacity            int64                `json:"capacity" required:"true"`
	Remaining           *int64               `json:"remaining,omitempty" doc:"Tokens left; absent when the bucket owner did not answer."`
	RetryAfterMs        int64                `json:"retry_after_ms" required:"true"`
	Quota               *RateLimitQuotaState `json:"quota,omitempty"`
	Refunded            bool                 `json:"refunded" required:"true" doc:"The check was refused elsewhere, so this policy's reservation was given back."`
	ReasonCodes         []string             `json:"reason_codes" required:"true"`
}

// RateLimitQuotaState is a policy's fixed quota in a decision.
type RateLimitQuotaState struct {
	Limit     int64      `json:"limit" required:"true"`
	Window    string     `json:"window" required:"true" enum:"minute|hour|day|month"`
	Remaining *int64     `json:"remaining,omitempty"`
	ResetsAt  *time.Time `json:"resets_at,omitempty" doc:"End of the current UTC window."`
}

// rateLimitPolicies is the admin CRUD of rate-limit policies.
var rateLimitPolicies = &kernel.Resource[catalog.RateLimitPolicy, RateLimitPolicyInput, RateLimitPolicyView, RateLimitPolicyList]{
	What: "rate-limit policy", Path: "/workspaces/{workspace_id}/rate-limit-policies", Param: "policy_id",
	ID: "RateLimitPolicy", IDs: "RateLimitPolicies",
	Table: func(c *catalog.Catalog) map[string]*catalog.RateLimitPolicy { return c.RateLimitPolicies },
	Owner: func(p *catalog.RateLimitPolicy) string { return p.WorkspaceID },
	Build: func(c *kernel.Call, in *RateLimitPolicyInput, cur *catalog.RateLimitPolicy, workspaceID string) (catalog.RateLimitPolicy, string, error) {
		if cur == nil {
			in.withDefaults()
		} else {
			in = in.mergeInto(cur, bodySetsNull(c.Ctx.Request.Body(), "quota"))
		}
		p, err := in.toPolicy(c.Catalog(), workspaceID)
		return p, "", err
	},
	Stamp: func(p, cur *catalog.RateLimitPolicy, now time.Time) {
		p.ID, p.CreatedAt, p.UpdatedAt = kernel.Stamped(cur, func(c *catalog.RateLimitPolicy) (string, time.Time) { return c.ID, c.CreatedAt }, now)
	},
	Create: func(p catalog.RateLimitPolicy) catalog.Command { return &catalog.CreateRateLimitPolicy{Policy: p} },
	Update: func(_ *RateLimitPolicyInput, p catalog.RateLimitPolicy) catalog.Command {
		return &catalog.ReplaceRateLimitPolicy{Policy: p}
	},
	Delete: func(p *catalog.RateLimitPolicy, _ time.Time) catalog.Command {
		return &catalog.DeleteRateLimitPolicy{WorkspaceID: p.WorkspaceID, ID: p.ID}
	},
	View:         kernel.ViewOf(policyView),
	SortID:       func(v *RateLimitPolicyView) string { return v.PolicyID },
	CreateErrors: []kernel.ErrorCode{kernel.ErrConflict},
	List:         func(vs []RateLimitPolicyView) *RateLimitPolicyList { return &RateLimitPolicyList{Policies: vs} },
}

// rateLimitRoutes are the policies' admin collection, the two checks and
// a policy's counters, in the contract's order.
func rateLimitRoutes(rl *checkAPI, st statsAPI) []kernel.Route {
	ws := "/workspaces/{workspace_id}/rate-limit-policies"
	a := []kernel.Auth{kernel.AuthAdmin}
	return append(rateLimitPolicies.Routes(), []kernel.Route{
		{Method: "POST", Path: "/rate-limit/check", ID: "rateLimitCheck", Tag: "Traffic control",
			Summary: "Atomically check and consume rate-limit capacity for a protected action.",
			Auth:    []kernel.Auth{kernel.AuthSiteSecret}, Body: &RateLimitCheckInput{}, Result: &RateLimitDecision{},
			Errors: rateLimitCheckErrors, SpecErrors: true, Handle: rl.rateLimitCheck},
		{Method: "POST", Path: "/mobile/rate-limit/check", ID: "mobileRateLimitCheck", Tag: "Traffic control",
			Summary: "Mobile counterpart of the rate-limit check: mobile server secret plus platform and app_id.",
			Auth:    []kernel.Auth{kernel.AuthMobile}, Body: &MobileRateLimitCheckInput{}, Result: &RateLimitDecision{},
			Errors: append(append([]kernel.ErrorCode{}, rateLimitCheckErrors...), kernel.ErrInvalidAppIdentity), SpecErrors: true, Handle: rl.mobileRateLimitCheck},
		{Method: "GET", Path: ws + "/{policy_id}/stats", Admin: true, ID: "rateLimitPolicyStats", Tag: "Admin", Auth: a,
			Summary: "Counters of a policy on this node or summed over the cluster, including what it would have throttled or rejected while observed.",
			Params: []kernel.Param{{Name: "scope", In: "query", Enum: []string{"node", "cluster"},
				Description: "node (default): the answering node's counters; cluster: the sum over every live member that answers within 2 s, over the authenticated peer channel."}},
			Result: &RateLimitPolicyStats{}, Errors: kernel.AdminErrors(), Handle: kernel.AdminOnly(st.rateLimitPolicyStats)},
	}...)
}
