package console

import (
	"encoding/json"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/console/users"
	"github.com/trustd/trustd/platform/cluster/summary"
)

// The console's view of the admin API's answers: the contract's field
// names, only the fields the pages show.

type apiError struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

type workspaceView struct {
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	CreatedAt   time.Time `json:"created_at"`
	Settings    struct {
		DefaultMode         string `json:"default_mode"`
		RateLimitingEnabled bool   `json:"rate_limiting_enabled"`
	} `json:"settings"`
}

type siteView struct {
	SiteID              string     `json:"site_id"`
	WorkspaceID         string     `json:"workspace_id"`
	Name                string     `json:"name"`
	SiteKey             string     `json:"site_key"`
	Secret              string     `json:"secret"`
	Hostnames           []string   `json:"hostnames"`
	Environment         string     `json:"environment"`
	ChallengeMode       string     `json:"challenge_mode"`
	BrandingProfileID   string     `json:"branding_profile_id"`
	PreviousSecretUntil *time.Time `json:"previous_secret_valid_until"`
	CreatedAt           time.Time  `json:"created_at"`
}

type mobileAppView struct {
	MobileAppID string `json:"mobile_app_id"`
	Name        string `json:"name"`
	Platform    string `json:"platform"`
	AppID       string `json:"app_id"`
}

type policyView struct {
	PolicyID string `json:"policy_id"`
	Name     string `json:"name"`
	Target   struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"target"`
	ActionPattern string `json:"action_pattern"`
	Method        string `json:"method"`
	Scope         string `json:"scope"`
	Bucket        struct {
		Capacity              int64 `json:"capacity"`
		RefillAmount          int64 `json:"refill_amount"`
		RefillIntervalSeconds int64 `json:"refill_interval_seconds"`
	} `json:"bucket"`
	Mode              string `json:"mode"`
	EnforcePercentage int    `json:"enforce_percentage"`
	Revision          int64  `json:"revision"`
}

type policyStats struct {
	Node                  string    `json:"node"`
	Since                 time.Time `json:"since"`
	Matched               uint64    `json:"matched"`
	Allowed               uint64    `json:"allowed"`
	Throttled             uint64    `json:"throttled"`
	Rejected              uint64    `json:"rejected"`
	ObservedWouldThrottle uint64    `json:"observed_would_throttle"`
	ObservedWouldReject   uint64    `json:"observed_would_reject"`
	DegradedFailOpen      uint64    `json:"degraded_fail_open"`
	DegradedFailClosed    uint64    `json:"degraded_fail_closed"`
}

type clusterNode struct {
	NodeID         string  `json:"node_id"`
	APIAddr        string  `json:"api_addr"`
	State          string  `json:"state"`
	RaftRole       string  `json:"raft_role"`
	Self           bool    `json:"self"`
	Partitions     int     `json:"partitions"`
	OwnershipShare float64 `json:"ownership_share"`
	Health         string  `json:"health"`
	LastIndex      uint64  `json:"last_index"`
	AppliedIndex   uint64  `json:"applied_index"`
}

type clusterStatus struct {
	Leader string        `json:"leader"`
	Nodes  []clusterNode `json:"nodes"`
}

// refused answers a failed admin call and reports whether it failed: the
// not-found page when the thing is gone, else again, which shows the page
// once more with the API's error.
func (c *Console) refused(r *req, st int, e *apiError, again func(e *apiError)) bool {
	if e == nil {
		return false
	}
	if st == 404 && e.Error == "not-found" {
		c.notFound(r)
	} else {
		again(e)
	}
	return true
}

// call performs an admin operation and decodes a success answer into out.
// A failure is returned as the admin API's error (code and message) and
// its status.
func (c *Console) call(r *req, method, path string, body any, out any) (int, *apiError) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 500, &apiError{Error: "internal-error", Message: err.Error()}
		}
	}
	st, ans := c.b.Admin(r.actor(), method, path, b)
	if st >= 300 {
		e := &apiError{}
		if json.Unmarshal(ans, e) != nil || e.Error == "" {
			e = &apiError{Error: "internal-error", Message: "the admin API answered " + strconv.Itoa(st)}
		}
		return st, e
	}
	if out != nil && len(ans) > 0 {
		if err := json.Unmarshal(ans, out); err != nil {
			return 500, &apiError{Error: "internal-error", Message: "unreadable admin API answer: " + err.Error()}
		}
	}
	return st, nil
}

// failed renders the page of an admin API failure.
func (c *Console) failed(r *req, st int, e *apiError) {
	if st == 404 {
		c.notFound(r)
		return
	}
	if st < 400 {
		st = 500
	}
	c.render(r, st, "error", pageData{Title: "The operation failed", Message: e.Message + " (" + e.Error + ")"})
}

// The overview decodes getClusterMetrics into the answer's own types.
type (
	moduleCounts   = summary.ModuleCounts
	clusterMetrics = summary.ClusterMetrics
)

type overviewData struct {
	Metrics                                 *clusterMetrics
	MetricsError                            string
	Admin                                   bool
	Version                                 string
	Cluster                                 *clusterStatus
	ClusterError                            string
	Self                                    *clusterNode
	Workspaces, Sites, MobileApps, Policies int
}

// visible keeps the workspaces the session's principal may see.
func (c *Console) visible(r *req, ws []workspaceView) []workspaceView {
	if r.sess.principal.Admin {
		return ws
	}
	out := []workspaceView{}
	for _, w := range ws {
		if w.WorkspaceID == r.sess.principal.WorkspaceID {
			out = append(out, w)
		}
	}
	return out
}

func (c *Console) overview(r *req) {
	d := overviewData{Version: c.cfg.Version, Admin: r.sess.principal.Admin}
	var cs clusterStatus
	// The cluster's state is the admin's; a console user sees counts.
	if d.Admin {
		if _, e := c.call(r, "GET", "/cluster", nil, &cs); e != nil {
			d.ClusterError = e.Message
		} else {
			d.Cluster = &cs
			for i := range cs.Nodes {
				if cs.Nodes[i].Self {
					d.Self = &cs.Nodes[i]
				}
			}
		}
	}
	var wl struct {
		Workspaces []workspaceView `json:"workspaces"`
	}
	if !c.getAll(r, apiRead{"/workspaces", &wl}) {
		return
	}
	wl.Workspaces = c.visible(r, wl.Workspaces)
	d.Workspaces = len(wl.Workspaces)
	for _, w := range wl.Workspaces {
		var sl struct {
			Sites []siteView `json:"sites"`
		}
		var ml struct {
			MobileApps []mobileAppView `json:"mobile_apps"`
		}
		var pl struct {
			Policies []policyView `json:"policies"`
		}
		base := "/workspaces/" + w.WorkspaceID
		for _, q := range []struct {
			path string
			out  any
		}{{base + "/sites", &sl}, {base + "/mobile-apps", &ml}, {base + "/rate-limit-policies", &pl}} {
			if st, e := c.call(r, "GET", q.path, nil, q.out); e != nil && st != 404 {
				c.failed(r, st, e)
				return
			}
		}
		d.Sites += len(sl.Sites)
		d.MobileApps += len(ml.MobileApps)
		d.Policies += len(pl.Policies)
	}
	pd := pageData{Title: "Overview", Nav: "overview", Data: &d}
	if d.Admin {
		// Requests across the cluster: every member's totals (getClusterMetrics).
		var m clusterMetrics
		if _, e := c.call(r, "GET", "/cluster/metrics", nil, &m); e != nil {
			d.MetricsError = e.Message
		} else {
			d.Metrics = &m
		}
		pd.Scripts = []string{"uPlot.iife.min.js", "charts.js"}
	}
	c.render(r, 200, "overview", pd)
}

func (c *Console) cluster(r *req) {
	var cs clusterStatus
	d := struct {
		Cluster *clusterStatus
		Error   string
	}{}
	if _, e := c.call(r, "GET", "/cluster", nil, &cs); e != nil {
		d.Error = e.Message
	} else {
		sort.Slice(cs.Nodes, func(i, j int) bool { return cs.Nodes[i].NodeID < cs.Nodes[j].NodeID })
		d.Cluster = &cs
	}
	c.render(r, 200, "cluster", pageData{Title: "Cluster", Nav: "cluster", Data: d})
}

func (c *Console) workspaces(r *req) {
	var wl struct {
		Workspaces []workspaceView `json:"workspaces"`
	}
	if !c.getAll(r, apiRead{"/workspaces", &wl}) {
		return
	}
	wl.Workspaces = c.visible(r, wl.Workspaces)
	c.render(r, 200, "workspaces", pageData{Title: "Workspaces", Nav: "workspaces", Data: wl.Workspaces})
}

type workspaceData struct {
	Workspace  workspaceView
	Sites      []siteView
	MobileApps []mobileAppView
	// Profiles are the workspace's branding profiles a site may name
	// (empty when they cannot be read: the edit form then offers none).
	Profiles []brandingView
	// Form holds the create-site form's values after a refused submit.
	Form    siteForm
	CanEdit bool
	// ConsoleHost is the host this console answers on; a site that lists
	// it gets a live preview of its widget. APIBase starts the snippet's
	// script URL (this node, as the browser reached it).
	ConsoleHost, APIBase string
}

// Previews reports whether a site's widget can run on this page: the
// widget runs only on its site's hostnames, and never for a sandbox site
// (its tokens come from POST /sandbox/issue, not a challenge).
func (d workspaceData) Previews(s siteView) bool {
	return d.ConsoleHost != "" && s.Environment != "sandbox" && slices.Contains(s.Hostnames, d.ConsoleHost)
}

type siteForm struct {
	Name, Hostnames, Environment, ChallengeMode string
}

// Choices of the create-site form (the admin API validates them again).
var (
	Environments   = []string{"production", "staging", "development", "sandbox"}
	ChallengeModes = []string{"checkbox", "visual", "score_based", "score_enforced"}
)

func (d workspaceData) Environments() []string   { return Environments }
func (d workspaceData) ChallengeModes() []string { return ChallengeModes }

func (c *Console) loadWorkspace(r *req, id string, d *workspaceData) bool {
	base := "/workspaces/" + id
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return false
	}
	var sl struct {
		Sites []siteView `json:"sites"`
	}
	var ml struct {
		MobileApps []mobileAppView `json:"mobile_apps"`
	}
	if !c.getAll(r, apiRead{base + "/sites", &sl}) {
		return false
	}
	if !c.getAll(r, apiRead{base + "/mobile-apps", &ml}) {
		return false
	}
	d.Sites, d.MobileApps = sl.Sites, ml.MobileApps
	var bl struct {
		Profiles []brandingView `json:"profiles"`
	}
	if _, e := c.call(r, "GET", base+"/branding-profiles", nil, &bl); e == nil {
		d.Profiles = bl.Profiles
	}
	return true
}

// updateSite changes a site's hostnames, challenge mode and branding
// profile with the admin API's PATCH: its validation, its errors.
func (c *Console) updateSite(r *req, wsID, siteID string) {
	form := r.ctx.PostArgs()
	body := map[string]any{"hostnames": splitHostnames(string(form.Peek("hostnames"))),
		"branding_profile_id": string(form.Peek("branding_profile_id"))}
	if m := string(form.Peek("challenge_mode")); m != "" {
		body["challenge_mode"] = m
	}
	st, e := c.call(r, "PATCH", "/workspaces/"+wsID+"/sites/"+siteID, body, nil)
	if c.refused(r, st, e, func(e *apiError) {
		c.workspace(r, wsID, 422, "The site was not changed: "+e.Message)
	}) {
		return
	}
	c.redirect(r, Prefix+"workspaces/"+wsID+"?updated="+siteID+"#site-"+siteID)
}

func (c *Console) workspace(r *req, id string, status int, errMsg string) {
	d := workspaceData{Form: siteForm{Environment: "production", ChallengeMode: "checkbox"}}
	c.renderWorkspace(r, id, status, errMsg, &d)
}

func (c *Console) renderWorkspace(r *req, id string, status int, errMsg string, d *workspaceData) {
	if !c.loadWorkspace(r, id, d) {
		return
	}
	d.CanEdit = r.sess.principal.Can(users.Edit, id)
	host := string(r.ctx.Host())
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	d.ConsoleHost, d.APIBase = strings.Trim(strings.ToLower(host), "[]"), "http://"+string(r.ctx.Host())
	if r.ctx.IsTLS() {
		d.APIBase = "https://" + string(r.ctx.Host())
	}
	pd := pageData{Title: "Workspace " + d.Workspace.Name, Nav: "workspaces", Tab: "", Workspace: id, Error: errMsg, Data: d}
	for _, s := range d.Sites {
		if d.Previews(s) {
			// The widget's challenge is a same-origin POST that must carry
			// the page's Origin; under no-referrer a browser sends "null".
			pd.Widget, pd.Referrer = true, "same-origin"
			r.ctx.Response.Header.Set("Referrer-Policy", pd.Referrer)
			break
		}
	}
	c.render(r, status, "workspace", pd)
}

// splitHostnames reads the hostnames field: names separated by commas,
// spaces or new lines.
func splitHostnames(s string) []string {
	out := []string{}
	for _, h := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		out = append(out, h)
	}
	return out
}

type secretData struct {
	Site      siteView
	Rotated   bool
	Workspace string
}

func (c *Console) createSite(r *req, wsID string) {
	form := r.ctx.PostArgs()
	f := siteForm{Name: string(form.Peek("name")), Hostnames: string(form.Peek("hostnames")),
		Environment: string(form.Peek("environment")), ChallengeMode: string(form.Peek("challenge_mode"))}
	body := map[string]any{"name": f.Name, "hostnames": splitHostnames(f.Hostnames)}
	if f.Environment != "" {
		body["environment"] = f.Environment
	}
	if f.ChallengeMode != "" {
		body["challenge_mode"] = f.ChallengeMode
	}
	var site siteView
	st, e := c.call(r, "POST", "/workspaces/"+wsID+"/sites", body, &site)
	if e != nil {
		if st == 404 {
			c.notFound(r)
			return
		}
		c.renderWorkspace(r, wsID, 422, "The site was not created: "+e.Message, &workspaceData{Form: f})
		return
	}
	c.render(r, 201, "secret", pageData{Title: "Site created", Nav: "workspaces", Data: secretData{Site: site, Workspace: wsID}})
}

func (c *Console) rotateSecret(r *req, wsID, siteID string) {
	body := map[string]any{}
	if g := string(r.ctx.PostArgs().Peek("grace_period_seconds")); g != "" {
		n, err := strconv.Atoi(g)
		if err != nil {
			c.workspace(r, wsID, 422, "The secret was not rotated: grace_period_seconds: a whole number of seconds")
			return
		}
		body["grace_period_seconds"] = n
	}
	var site siteView
	st, e := c.call(r, "POST", "/workspaces/"+wsID+"/sites/"+siteID+"/rotate-secret", body, &site)
	if e != nil {
		if st == 404 {
			c.notFound(r)
			return
		}
		c.workspace(r, wsID, 422, "The secret was not rotated: "+e.Message)
		return
	}
	c.render(r, 200, "secret", pageData{Title: "Site secret rotated", Nav: "workspaces", Data: secretData{Site: site, Rotated: true, Workspace: wsID}})
}

type policyRow struct {
	Policy     policyView
	Stats      *policyStats
	StatsError string
	Error      string
}

type policiesData struct {
	Workspace workspaceView
	Policies  []policyRow
	Updated   string
	CanEdit   bool
	Sites     []siteView
}

func (d policiesData) Scopes() []string {
	return []string{"workspace", "application", "subject", "device", "route", "custom"}
}

// siteChoices lists the workspace's sites for the policy target field
// (empty when they cannot be read: the form then offers the workspace).
func (c *Console) siteChoices(r *req, wsID string) []siteView {
	var sl struct {
		Sites []siteView `json:"sites"`
	}
	c.call(r, "GET", "/workspaces/"+wsID+"/sites", nil, &sl)
	return sl.Sites
}

// Modes a policy may be set to (the admin API validates them again).
var Modes = []string{"observe", "throttle", "enforce", "workspace_default"}

func (d policiesData) Modes() []string { return Modes }

func (c *Console) policies(r *req, wsID string, status int, failedID, errMsg string) {
	d := policiesData{Updated: string(r.ctx.QueryArgs().Peek("updated"))}
	base := "/workspaces/" + wsID
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	var pl struct {
		Policies []policyView `json:"policies"`
	}
	if !c.getAll(r, apiRead{base + "/rate-limit-policies", &pl}) {
		return
	}
	for _, p := range pl.Policies {
		row := policyRow{Policy: p}
		var s policyStats
		if _, e := c.call(r, "GET", base+"/rate-limit-policies/"+p.PolicyID+"/stats?scope=cluster", nil, &s); e != nil {
			row.StatsError = e.Message
		} else {
			row.Stats = &s
		}
		if p.PolicyID == failedID {
			row.Error = errMsg
		}
		d.Policies = append(d.Policies, row)
	}
	pageErr := errMsg
	if failedID != "" && errMsg != "" {
		pageErr = "The policy was not changed: " + errMsg
	}
	d.CanEdit = r.sess.principal.Can(users.Edit, wsID)
	d.Sites = c.siteChoices(r, wsID)
	c.render(r, status, "policies", pageData{Title: "Rate-limit policies", Nav: "workspaces", Tab: "policies", Workspace: wsID, Error: pageErr, Data: d,
		Scripts: []string{"uPlot.iife.min.js", "charts.js"}})
}

// updatePolicy changes a policy's mode and/or enforce_percentage with the
// admin API's PATCH: its validation, its errors.
func (c *Console) updatePolicy(r *req, wsID, policyID string) {
	form := r.ctx.PostArgs()
	body := map[string]any{}
	if m := string(form.Peek("mode")); m != "" {
		body["mode"] = m
	}
	if p := strings.TrimSpace(string(form.Peek("enforce_percentage"))); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			c.policies(r, wsID, 422, policyID, "enforce_percentage: must be a whole number from 0 to 100")
			return
		}
		body["enforce_percentage"] = n
	}
	if len(body) == 0 {
		c.policies(r, wsID, 422, policyID, "choose a mode or an enforce percentage")
		return
	}
	st, e := c.call(r, "PATCH", "/workspaces/"+wsID+"/rate-limit-policies/"+policyID, body, nil)
	if e != nil {
		if st == 404 {
			c.notFound(r)
			return
		}
		c.policies(r, wsID, 422, policyID, e.Message)
		return
	}
	c.redirect(r, Prefix+"workspaces/"+wsID+"/policies?updated="+policyID+"#policy-"+policyID)
}

// clusterMetricsJSON answers getClusterMetrics for the overview chart
// (same-origin GET with the session cookie; no-store).
func (c *Console) clusterMetricsJSON(r *req) {
	st, ans := c.b.Admin(r.actor(), "GET", "/cluster/metrics", nil)
	r.ctx.SetStatusCode(st)
	r.ctx.SetContentType("application/json")
	r.ctx.SetBody(ans)
}

// apiRead is one admin API read of a page: the path and where its answer
// is decoded.
type apiRead struct {
	path string
	out  any
}

// getAll makes a page's reads in order; false: one failed and its failure
// page was rendered.
func (c *Console) getAll(r *req, reads ...apiRead) bool {
	for _, g := range reads {
		if st, e := c.call(r, "GET", g.path, nil, g.out); e != nil {
			c.failed(r, st, e)
			return false
		}
	}
	return true
}
