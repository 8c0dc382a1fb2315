package console

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trustd/trustd/console/users"
)

// listPage is a read-only page of one workspace that lists what one admin
// list operation answers: the admin path (under the workspace), the JSON
// key of the list, and the columns to show. A module whose records need
// no form gets its console page from one entry here.
type listPage struct {
	Slug, Title, Intro string
	AdminPath, Key     string
	Columns            []column
	// Item, when set, is the admin path (under the workspace) of one
	// record, with {id} for the IDField value: it is read for each row
	// (e.g. a dependency's live breaker state) and replaces the row.
	Item, IDField string
	// Action, when set, adds a button per row posting to the console path
	// Action (with {id} for the IDField value); ActionPerm is what it needs.
	Action, ActionLabel string
	ActionPerm          users.Permission
	// Link, when set, links each row to the console path (with {id}).
	Link, LinkLabel string
	// Derive, when set, adds display fields to each row from the record
	// (after the Item read; e is that read's failure, if any).
	Derive func(row map[string]any, e *apiError)
}

type column struct {
	Header, Field string
}

// listPages are the generic pages; one line (entry) per page.
var listPages = []listPage{
	{Slug: "api-protection", Title: "API Protection policies", AdminPath: "/api-protection-policies", Key: "policies",
		Intro:   "Policies that assess API calls (authentication, limits, velocity).",
		Columns: []column{{"Name", "name"}, {"Method", "method"}, {"Path pattern", "path_pattern"}, {"Authentication required", "require_authentication"}, {"Enforcement", "enforcement_mode"}, {"Revision", "revision"}}},
	{Slug: "concurrency", Title: "Concurrency constraints", AdminPath: "/concurrency-constraints", Key: "concurrency_constraints",
		Item: "/concurrency-constraints/{id}/holders", IDField: "constraint_id",
		Intro: "Leases held at once per scope value, read live from the owners of the slots when the page loads. Workspace- and application-scoped constraints are read whole; " +
			"subject, device and custom scope values are stored only as keyed hashes, so their holders cannot be listed.",
		Columns: []column{{"Name", "name"}, {"Scope", "scope"}, {"Action", "action_pattern"}, {"Capacity", "capacity"}, {"Live holders", "live_holders"}, {"By scope value", "by_value"}},
		Derive:  deriveHolders},
	{Slug: "dependencies", Title: "Dependencies", AdminPath: "/dependencies", Key: "dependencies", Item: "/dependencies/{id}", IDField: "dependency_id",
		Intro:   "Circuit breakers with their live state, read from the breaker's owner when the page loads.",
		Columns: []column{{"Name", "name"}, {"Breaker state", "live.state"}, {"Calls in window", "live.calls"}, {"Failures", "live.failures"}, {"In flight", "live.in_flight"}, {"Failure rate threshold", "failure_rate_threshold"}, {"Open duration (ms)", "open_duration_ms"}}},
	{Slug: "webhooks", Title: "Webhook endpoints", AdminPath: "/webhooks", Key: "endpoints", IDField: "endpoint_id",
		Link: "webhooks/{id}/deliveries", LinkLabel: "Deliveries",
		Columns: []column{{"URL", "url"}, {"Status", "status"}, {"Events", "event_types"}, {"Consecutive failures", "consecutive_failures"}, {"Last success", "last_success_at"}}},
	{Slug: "webhook-events", Title: "Webhook events", AdminPath: "/webhook-events", Key: "events", IDField: "event_id",
		Action: "webhook-events/{id}/redeliver", ActionLabel: "Redeliver", ActionPerm: users.Edit,
		Columns: []column{{"Type", "type"}, {"Sequence", "sequence"}, {"Created", "created_at"}, {"Subject", "subject"}}},
	{Slug: "trust-policies", Title: "Trust policies", AdminPath: "/trust-policies", Key: "policies",
		Columns: []column{{"Name", "name"}, {"Condition", "condition"}, {"Outcome", "outcome"}, {"Mode", "mode"}, {"Matches today", "matches_today"}}},
}

// workspaceTabs is a workspace's sub-navigation: the fixed pages, then
// every list page, then users and audit.
func workspaceTabs() []tab {
	out := append([]tab(nil), tabs[:len(tabs)-2]...)
	for _, p := range listPages {
		out = append(out, tab{p.Slug, p.Title, users.View})
	}
	return append(out, tabs[len(tabs)-2:]...)
}

func findListPage(slug string) *listPage {
	for i := range listPages {
		if listPages[i].Slug == slug {
			return &listPages[i]
		}
	}
	return nil
}

type listRow struct {
	ID     string
	Cells  []string
	Action string
	Link   string
}

type listData struct {
	Workspace workspaceView
	Page      *listPage
	Headers   []string
	Rows      []listRow
	CanAct    bool
	Message   string
}

// field reads a dotted path of a decoded JSON object as text.
func field(m map[string]any, path string) string {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = o[k]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil && len(x) >= 20 {
			return t.UTC().Format("2006-01-02 15:04:05Z")
		}
		return x
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", x), "0"), ".")
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (c *Console) listPage(r *req) {
	p := findListPage(r.params.id)
	if p == nil {
		c.notFound(r)
		return
	}
	c.renderList(r, p, 200, "", "")
}

func (c *Console) renderList(r *req, p *listPage, status int, msg, errMsg string) {
	ws := r.params.ws
	d := listData{Page: p, Message: msg, CanAct: p.Action != "" && r.sess.principal.Can(p.ActionPerm, ws)}
	base := "/workspaces/" + ws
	if !c.getAll(r, apiRead{base, &d.Workspace}) {
		return
	}
	var raw map[string]json.RawMessage
	if !c.getAll(r, apiRead{base + p.AdminPath, &raw}) {
		return
	}
	var items []map[string]any
	_ = json.Unmarshal(raw[p.Key], &items)
	for _, col := range p.Columns {
		d.Headers = append(d.Headers, col.Header)
	}
	for _, it := range items {
		id := field(it, p.IDField)
		var itemErr *apiError
		if p.Item != "" && validID(id) {
			var full map[string]any
			if _, itemErr = c.call(r, "GET", base+strings.ReplaceAll(p.Item, "{id}", id), nil, &full); itemErr == nil {
				it = full
			}
		}
		if p.Derive != nil {
			p.Derive(it, itemErr)
		}
		row := listRow{ID: id}
		for _, col := range p.Columns {
			row.Cells = append(row.Cells, field(it, col.Field))
		}
		if validID(id) {
			if p.Action != "" {
				row.Action = Prefix + "workspaces/" + ws + "/" + strings.ReplaceAll(p.Action, "{id}", id)
			}
			if p.Link != "" {
				row.Link = Prefix + "workspaces/" + ws + "/" + strings.ReplaceAll(p.Link, "{id}", id)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	c.render(r, status, "list", pageData{Title: p.Title, Nav: "workspaces", Tab: p.Slug, Workspace: ws, Notice: msg, Error: errMsg, Data: d})
}

// deriveHolders shows a constraint's live holders (getConcurrencyHolders):
// the count for scopes whose values can be listed, the per-value counts,
// and says so when they cannot be listed or were not read.
func deriveHolders(row map[string]any, e *apiError) {
	switch {
	case e != nil:
		row["live_holders"] = "unavailable: " + e.Message
	case row["enumerable"] != true:
		row["live_holders"] = "not listable (scope values are keyed hashes)"
	default:
		row["live_holders"] = field(row, "in_use")
		vals, _ := row["values"].([]any)
		parts := []string{}
		for _, v := range vals {
			if m, ok := v.(map[string]any); ok {
				parts = append(parts, field(m, "value")+": "+field(m, "in_use"))
			}
		}
		row["by_value"] = strings.Join(parts, ", ")
	}
}
