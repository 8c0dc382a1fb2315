package http

import (
	"sort"
	"strings"
)

// Auth names how an operation authenticates, for the contract.
type Auth string

// The authentication models of spec section 5.
const (
	AuthNone       Auth = ""
	AuthAdmin      Auth = "admin"
	AuthSiteSecret Auth = "site_secret"
	// AuthBodySecret is the site secret in the body field secret only
	// (/siteverify and its dialects, as the vendors' APIs are); OpenAPI
	// has no scheme for it, so the contract says it in the operation.
	AuthBodySecret Auth = "body_secret"
	AuthSiteKey    Auth = "site_key"
	AuthMobile     Auth = "mobile_secret"
	AuthCredential Auth = "credential"
	AuthAgent      Auth = "agent_signature"
	// AuthAgentHTTPSig is an RFC 9421 signature (Web Bot Auth profile) by
	// an agent with a registered Ed25519 key.
	AuthAgentHTTPSig Auth = "agent_http_signature"
	// AuthMessaging is a request signed with a workspace's messaging
	// secret (risk/messaging, risk/api/messaging.go).
	AuthMessaging Auth = "messaging_signature"
	// AuthHosted is the hosted-capture capability of one identity session
	// (header X-Service-Hosted-Token).
	AuthHosted Auth = "hosted_token"
)

// Route is one operation. The route table is the single source of truth:
// the router, /openapi.json and /postman-collection.json are all built
// from it.
type Route struct {
	Method string
	// Path relative to its base, with {name} parameters.
	Path string
	// Admin routes live under /admin/v1; the others under /v1 and, with
	// migration headers, the legacy root base.
	Admin   bool
	ID      string
	Summary string
	Tag     string
	Auth    []Auth
	// Body is a pointer to the request body type, or nil.
	Body any
	// Form reports that the body may also be form-encoded.
	Form bool
	// Multipart, a pointer to a type, documents a multipart/form-data
	// form of the body (file fields tagged format:"binary").
	Multipart any
	// Status and Result describe the success answer.
	Status int
	Result any
	// ContentType of a non-JSON answer (script, HTML, image).
	ContentType string
	// Conditional reports that the operation honours If-None-Match and
	// answers 304 Not Modified (static assets).
	Conditional bool
	// Errors lists the error codes the operation can answer with.
	Errors []ErrorCode
	// SpecErrors marks operations whose error body is the spec's
	// {success:false,error} shape rather than ApiError.
	SpecErrors bool
	Handle     func(*Call)
	// MaxBody raises the body limit for this route above the server's
	// MaxBodyBytes (document images); 0 keeps the server's.
	MaxBody int
	// Params documents optional query and header parameters for the
	// contract (path parameters come from Path).
	Params []Param

	segs []string
	idx  int
}

// Param is an optional query or header parameter of an operation.
type Param struct {
	Name, In, Description string // In: "query" or "header"
	Enum                  []string
}

// FullPath is the canonical path of the route.
func (r *Route) FullPath() string {
	if r.Admin {
		return AdminBase + r.Path
	}
	return PublicBase + r.Path
}

// table is the compiled route table.
type table struct {
	routes []*Route
	// static maps "METHOD path" to routes without parameters: the hot
	// operations never walk the slow path.
	static map[string]*Route
	// paths groups routes by full path pattern, for 405 answers.
	paths map[string][]*Route
	param []*Route
}

func buildTable(rs []Route) *table {
	t := &table{static: map[string]*Route{}, paths: map[string][]*Route{}}
	for i := range rs {
		r := &rs[i]
		r.idx = i
		full := r.FullPath()
		r.segs = strings.Split(strings.Trim(full, "/"), "/")
		t.routes = append(t.routes, r)
		t.paths[full] = append(t.paths[full], r)
		if strings.Contains(full, "{") {
			t.param = append(t.param, r)
		} else {
			t.static[r.Method+" "+full] = r
		}
	}
	// More specific patterns (fewer parameters) win.
	sort.SliceStable(t.param, func(i, j int) bool {
		return strings.Count(t.param[i].Path, "{") < strings.Count(t.param[j].Path, "{")
	})
	return t
}

// match finds the route for method and path. When the path exists with
// other methods, it returns nil and those methods.
func (t *table) match(method, path string, params *[4]string) (*Route, []string) {
	if r := t.static[method+" "+path]; r != nil {
		return r, nil
	}
	if rs, ok := t.paths[path]; ok {
		return nil, methodsOf(rs)
	}
	segs := splitPath(path)
	var allow []string
	for _, r := range t.param {
		if !matchSegs(r.segs, segs, params) {
			continue
		}
		if r.Method == method {
			return r, nil
		}
		allow = append(allow, r.Method)
	}
	return nil, allow
}

func methodsOf(rs []*Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Method
	}
	return out
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return []string{""}
	}
	return strings.Split(p, "/")
}

func matchSegs(pattern, segs []string, params *[4]string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	n := 0
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" || n == len(params) {
				return false
			}
			params[n] = segs[i]
			n++
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return true
}

// paramNames lists the {names} of a path in order.
func paramNames(path string) []string {
	var out []string
	for _, s := range strings.Split(path, "/") {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			out = append(out, s[1:len(s)-1])
		}
	}
	return out
}

// bodyLimit is the body limit of r under the server's default.
func (r *Route) bodyLimit(def int) int {
	if r.MaxBody > 0 {
		return r.MaxBody
	}
	return def
}

// maxBody is the largest body any route accepts: fasthttp's own limit,
// each route's own checked after routing.
func (t *table) maxBody(def int) int {
	m := def
	for _, r := range t.routes {
		m = max(m, r.MaxBody)
	}
	return m
}
