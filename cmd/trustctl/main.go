// Command trustctl is the admin CLI of trustd: a thin client of the admin
// REST API (/admin/v1).
//
//	trustctl workspaces create --name acme
//	trustctl sites create --workspace <id> --name shop --hostnames shop.example.com,www.example.com
//	trustctl sites list --workspace <id> --json
//	trustctl policies create --workspace <id> --file policy.json
//
// The address and admin token come from --addr/--admin-token, or
// TRUSTD_ADDR/TRUSTD_ADMIN_TOKEN, or the admin-token file of --data-dir.
package main

import (
	"bytes"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// resource is one kind of thing the admin API manages.
type resource struct {
	path   string   // collection path, below the workspace when scoped
	scoped bool     // lives under /workspaces/{id}
	cols   []string // table columns
	lists  []string // fields given as comma-separated lists
	// replace sends update as PUT: the record is replaced whole, not
	// merged from the fields given (PATCH).
	replace bool
}

var resources = map[string]resource{
	"workspaces":              {path: "/workspaces", cols: []string{"workspace_id", "name", "created_at"}},
	"sites":                   {path: "/sites", scoped: true, cols: []string{"site_id", "name", "site_key", "environment", "challenge_mode", "hostnames", "branding_profile_id", "secret"}, lists: []string{"hostnames"}},
	"mobile-apps":             {path: "/mobile-apps", scoped: true, cols: []string{"mobile_app_id", "name", "platform", "app_id", "mobile_secret"}},
	"credentials":             {path: "/credentials", scoped: true, cols: []string{"credential_id", "name", "scopes", "credential"}, lists: []string{"scopes"}},
	"policies":                {path: "/rate-limit-policies", scoped: true, cols: []string{"policy_id", "name", "action_pattern", "method", "scope", "mode"}},
	"api-protection-policies": {path: "/api-protection-policies", scoped: true, cols: []string{"policy_id", "name", "path_pattern", "method", "enforcement_mode"}},
	"concurrency-constraints": {path: "/concurrency-constraints", scoped: true, cols: []string{"constraint_id", "name", "scope", "capacity"}},
	"dependencies":            {path: "/dependencies", scoped: true, cols: []string{"dependency_id", "name"}},
	"signing-keys":            {path: "/signing-keys", cols: []string{"key_id", "purpose", "state", "created_at", "superseded_at"}},
	"agents":                  {path: "/agents", scoped: true, cols: []string{"agent_id", "name", "status", "allowed_actions", "allowed_scopes", "secrets_valid", "secret"}, lists: []string{"allowed_actions", "allowed_scopes"}, replace: true},
	"webhooks":                {path: "/webhooks", scoped: true, cols: []string{"endpoint_id", "url", "status", "event_types", "secrets_valid", "consecutive_failures", "secret"}, lists: []string{"event_types"}},
	"webhook-events":          {path: "/webhook-events", scoped: true, cols: []string{"event_id", "type", "subject", "sequence", "created_at"}},
	"console-users":           {path: "/console-users", scoped: true, cols: []string{"console_user_id", "email", "role", "has_password", "sign_in_link_pending", "sign_in_url", "sign_in_expires_at"}},
	"audit":                   {path: "/audit", cols: []string{"seq", "at", "actor", "via", "operation", "path", "status"}},
	"approvals":               {path: "/approvals", scoped: true, cols: []string{"approval_id", "agent_id", "action", "scope", "status", "consumed", "decided_by", "expires_at"}},
	"branding-profiles":       {path: "/branding-profiles", scoped: true, cols: []string{"profile_id", "name", "colors", "logo", "updated_at"}},
	"journeys":                {path: "/journeys", scoped: true, cols: journeyCols},
	"trust-policies":          {path: "/trust-policies", scoped: true, cols: trustPolicyCols, replace: true},
}

const usage = `usage: trustctl [--addr URL] [--admin-token T] [--data-dir D] [--json] <resource> <verb> [id] [--field value ...]

The node: --addr, else TRUSTD_ADDR, else http://127.0.0.1:8080 (the quick
start's node). The admin token: --admin-token, else TRUSTD_ADMIN_TOKEN, else
the file admin-token in --data-dir (default ./data, where the quick start's
node keeps it): run from the folder you started trustd in, and nothing else
is needed.

resources: workspaces, sites, mobile-apps, credentials, policies, api-protection-policies,
           concurrency-constraints, dependencies, agents, approvals, signing-keys, webhooks, webhook-events, trust-policies,
           console-users, audit, branding-profiles, journeys, messaging
verbs:     create, list, get <id>, update <id>, delete <id>; sites|agents rotate-secret <id>;
           agents suspend|activate <id>; approvals approve|deny <id> --by <who>;
           webhooks rotate-secret|test|deliveries <id>; webhooks alerts; webhook-events redeliver <id> [--endpoint-id E];
           trust-policies create|list|get|update|delete: Trust API rules (CEL), see trustctl trust.go
           messaging get|policy|rotate-secret|delete: messaging preflight settings, see trustctl messaging.go
           branding-profiles create|list|get|update|delete; branding-profiles logo <id> --in FILE | remove-logo <id>
           journeys put|list|get|delete <key>, journeys erase-subject --subject-id S: journey definitions, see journeys.go
           signing-keys list | signing-keys rotate [--purpose live|sandbox|receipt] (two-phase: published to every node before it signs)
           policies stats <id> (this node's counts, incl. what an observed policy would have refused)
           cluster status | cluster leave [--node <id>]
           tls ca create | tls cert create --node <id> [--ip …] [--dns …] (local, see trustctl tls)
           snapshot save|inspect|restore <file> (--passphrase-file F | --key-file F): encrypted backups, see trustctl snapshot.go
           passwords import --in PATH [--mode sha1|ntlm] | passwords verify (local, see trustctl passwords)
Scoped resources need --workspace <id>. Fields are the API's JSON fields with
dashes (--challenge-mode score_based); values that parse as JSON numbers,
booleans, arrays or objects are sent as such. --file F sends F as the body.
`

func main() {
	if wantsHelp(os.Args[1:]) {
		fmt.Print(usage)
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trustctl:", err)
		os.Exit(1)
	}
}

// wantsHelp reports a request for the usage: help, -h or --help as the
// first word, or -h/--help anywhere (never a field: no API field is named
// help).
func wantsHelp(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if args[0] == "help" {
		return true
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}

type options struct {
	addr, token, dataDir, workspace, file string
	asJSON                                bool
	fields                                map[string]string
	positional                            []string
}

func parse(args []string) (*options, error) {
	o := &options{addr: os.Getenv("TRUSTD_ADDR"), token: os.Getenv("TRUSTD_ADMIN_TOKEN"), dataDir: "data", fields: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			o.positional = append(o.positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if name == "json" {
			o.asJSON = true
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "addr":
			o.addr = val
		case "admin-token":
			o.token = val
		case "data-dir":
			o.dataDir = val
		case "workspace":
			o.workspace = val
		case "file":
			o.file = val
		default:
			o.fields[strings.ReplaceAll(name, "-", "_")] = val
		}
	}
	if o.addr == "" {
		o.addr = "http://127.0.0.1:8080"
	}
	o.addr = strings.TrimRight(o.addr, "/")
	if o.token == "" {
		if b, err := os.ReadFile(filepath.Join(o.dataDir, "admin-token")); err == nil {
			o.token = strings.TrimSpace(string(b))
		}
	}
	return o, nil
}

func run(args []string, out io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if len(o.positional) >= 1 && o.positional[0] == "tls" {
		return o.tlsCmd(o.positional[1:], out, time.Now())
	}
	if len(o.positional) >= 1 && o.positional[0] == "snapshot" {
		return o.snapshot(o.positional[1:], out)
	}
	if len(o.positional) >= 1 && o.positional[0] == "passwords" {
		return o.passwordsCmd(o.positional[1:], out)
	}
	if len(o.positional) < 2 {
		return fmt.Errorf("%s", usage)
	}
	noun, verb, rest := o.positional[0], o.positional[1], o.positional[2:]
	if noun == "cluster" {
		return o.cluster(verb, out)
	}
	if noun == "messaging" {
		return o.messaging(verb, out)
	}
	if noun == "branding-profiles" && (verb == "logo" || verb == "remove-logo") {
		return o.brandingLogo(verb, rest, out)
	}
	res, ok := resources[noun]
	if !ok {
		return fmt.Errorf("unknown resource %q\n%s", noun, usage)
	}
	coll := "/admin/v1" + res.path
	if res.scoped {
		if o.workspace == "" {
			return fmt.Errorf("%s needs --workspace <id>", noun)
		}
		coll = "/admin/v1/workspaces/" + o.workspace + res.path
	}
	if handled, err := o.webhookVerb(noun, verb, rest, coll, res, out); handled {
		return err
	}
	if handled, err := o.consoleVerb(noun, verb, rest, coll, res, out); handled {
		return err
	}
	if handled, err := o.journeyVerb(noun, verb, rest, coll, res, out); handled {
		return err
	}
	if handled, err := o.trustPolicyVerb(noun, verb, coll, res, out); handled {
		return err
	}
	id := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("%s %s needs one id", noun, verb)
		}
		return rest[0], nil
	}
	switch verb {
	case "create":
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("POST", coll, body, res, out)
	case "list":
		return o.call("GET", coll, nil, res, out)
	case "get", "delete":
		x, err := id()
		if err != nil {
			return err
		}
		if verb == "delete" && noun == "agents" {
			res = agentDeletedColumns // what happened to its approvals
		}
		return o.call(map[string]string{"get": "GET", "delete": "DELETE"}[verb], coll+"/"+x, nil, res, out)
	case "update":
		x, err := id()
		if err != nil {
			return err
		}
		body, err := o.body(res)
		if err != nil {
			return err
		}
		method := "PATCH"
		if res.replace {
			method = "PUT"
		}
		return o.call(method, coll+"/"+x, body, res, out)
	case "suspend", "activate", "approve", "deny":
		x, err := id()
		if err != nil {
			return err
		}
		if (verb == "suspend" || verb == "activate") != (noun == "agents") || (verb == "approve" || verb == "deny") != (noun == "approvals") {
			return fmt.Errorf("usage: trustctl agents suspend|activate <agent id> | approvals approve|deny <approval id> --by <who> (--workspace <id>)")
		}
		var body any
		if noun == "approvals" {
			if body, err = o.body(res); err != nil {
				return err
			}
		}
		return o.call("POST", coll+"/"+x+"/"+verb, body, res, out)
	case "stats":
		x, err := id()
		if err != nil || noun != "policies" {
			return fmt.Errorf("usage: trustctl policies stats <policy id> --workspace <id>")
		}
		stats := resource{cols: []string{"policy_id", "node", "matched", "allowed", "throttled", "rejected",
			"observed_would_throttle", "observed_would_reject", "degraded_fail_open", "degraded_fail_closed"}}
		return o.call("GET", coll+"/"+x+"/stats", nil, stats, out)
	case "rotate":
		if noun != "signing-keys" {
			return fmt.Errorf("usage: trustctl signing-keys rotate [--purpose live|sandbox]")
		}
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("POST", coll+"/rotate", body, res, out)
	case "rotate-secret":
		x, err := id()
		if err != nil || noun != "sites" && noun != "agents" {
			return fmt.Errorf("usage: trustctl sites|agents rotate-secret <id> --workspace <id> [--grace-period-seconds N | --overlap-seconds N]")
		}
		body, err := o.body(res)
		if err != nil {
			return err
		}
		return o.call("POST", coll+"/"+x+"/rotate-secret", body, res, out)
	}
	return fmt.Errorf("unknown verb %q\n%s", verb, usage)
}

func (o *options) cluster(verb string, out io.Writer) error {
	res := resource{cols: []string{"node_id", "api_addr", "raft_role", "ownership_share", "health"}}
	switch verb {
	case "status":
		return o.call("GET", "/admin/v1/cluster", nil, res, out)
	case "leave":
		body := map[string]any{}
		if n := o.fields["node"]; n != "" {
			body["node_id"] = n
		}
		return o.call("POST", "/admin/v1/cluster/leave", body, res, out)
	}
	return fmt.Errorf("usage: trustctl cluster status | cluster leave [--node <id>]")
}

// body builds the JSON body from --file or --field flags.
func (o *options) body(res resource) (any, error) {
	if o.file != "" {
		b, err := os.ReadFile(o.file)
		if err != nil {
			return nil, err
		}
		return jsontext.Value(b), nil
	}
	m := map[string]any{}
	for k, v := range o.fields {
		isList := false
		for _, l := range res.lists {
			isList = isList || l == k
		}
		switch {
		case isList && !strings.HasPrefix(v, "["):
			var items []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			m[k] = items
		default:
			var j any
			if err := json.Unmarshal([]byte(v), &j); err == nil && !isString(v) {
				m[k] = j
			} else {
				m[k] = v
			}
		}
	}
	return m, nil
}

func isString(v string) bool { return strings.HasPrefix(strings.TrimSpace(v), `"`) }

func (o *options) call(method, path string, body any, res resource, out io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, o.addr+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.token == "" {
		return fmt.Errorf("no admin token: pass --admin-token, set TRUSTD_ADMIN_TOKEN or --data-dir")
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	client := &nethttp.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if resp.StatusCode == 204 {
		if o.asJSON {
			fmt.Fprintln(out, "{}")
		} else {
			fmt.Fprintln(out, "ok")
		}
		return nil
	}
	if o.asJSON {
		v := jsontext.Value(b)
		if err := v.Indent(); err == nil {
			b = v
		}
		fmt.Fprintf(out, "%s\n", b)
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return table(out, v, res.cols)
}

// table prints an object, or the first list inside an object, as columns.
func table(out io.Writer, v any, cols []string) error {
	rows := []map[string]any{}
	if m, ok := v.(map[string]any); ok {
		var list []any
		for _, k := range sortedKeys(m) {
			if l, ok := m[k].([]any); ok && len(m) <= 2 {
				list = l
				break
			}
		}
		if list == nil {
			rows = append(rows, m)
		}
		for _, it := range list {
			if r, ok := it.(map[string]any); ok {
				rows = append(rows, r)
			}
		}
	}
	if len(cols) == 0 && len(rows) > 0 {
		cols = sortedKeys(rows[0])
	}
	var used []string
	for _, c := range cols {
		for _, r := range rows {
			if _, ok := r[c]; ok {
				used = append(used, c)
				break
			}
		}
	}
	tw := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(used, "\t")))
	for _, r := range rows {
		var cells []string
		for _, c := range used {
			cells = append(cells, cell(r[c]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		var s []string
		for _, e := range x {
			s = append(s, cell(e))
		}
		return strings.Join(s, ",")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
