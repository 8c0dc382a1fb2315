package http

import (
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// The contract is generated from the route table and the Go types of
// request and answer bodies, so it cannot drift from what the server does.
// Struct tags add what types cannot say: `doc` (description), `enum`
// (values separated by |), `required:"true"`, `format`, `example`.

type schemaGen struct {
	components map[string]any
	seen       map[reflect.Type]string
}

func (g *schemaGen) ref(v any) map[string]any {
	if v == nil {
		return nil
	}
	return g.schema(reflect.TypeOf(v))
}

var timeType = reflect.TypeOf(time.Time{})

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name, ok := g.seen[t]
		if !ok {
			name = t.Name()
			if n, ok := schemaNames[name]; ok {
				name = n
			}
			if name == "" {
				return g.object(t)
			}
			g.seen[t] = name
			g.components[name] = map[string]any{} // placeholder against recursion
			g.components[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			// An embedded struct is inlined by the JSON codec; so here.
			inner := g.object(f.Type)
			for k, v := range inner["properties"].(map[string]any) {
				props[k] = v
			}
			if req, ok := inner["required"].([]string); ok {
				required = append(required, req...)
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		s := g.schema(f.Type)
		if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() != reflect.Struct {
			if typ, ok := s["type"].(string); ok {
				s = clone(s)
				s["type"] = []any{typ, "null"}
			}
		}
		if doc := f.Tag.Get("doc"); doc != "" {
			s = withRefSafe(s, "description", doc)
		}
		if enum := f.Tag.Get("enum"); enum != "" {
			var vals []any
			for _, v := range strings.Split(enum, "|") {
				vals = append(vals, v)
			}
			if s["type"] == "array" {
				s = clone(s)
				s["items"] = withRefSafe(s["items"].(map[string]any), "enum", vals)
			} else {
				s = withRefSafe(s, "enum", vals)
			}
		}
		if fm := f.Tag.Get("format"); fm != "" {
			s = withRefSafe(s, "format", fm)
		}
		if f.Tag.Get("required") == "true" {
			required = append(required, name)
		}
		props[name] = s
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		out["required"] = required
	}
	return out
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// withRefSafe adds a keyword; OpenAPI 3.1 allows siblings of $ref.
func withRefSafe(s map[string]any, k string, v any) map[string]any {
	s = clone(s)
	s[k] = v
	return s
}

// schemaNames renames Go types whose contract name the spec fixes.
var schemaNames = map[string]string{"APIError": "ApiError"}

// commonHeaders are on every JSON answer (spec 2.1); rateLimitHeaders
// also on 429 answers, retryHeaders on 503 answers (retryLater).
var commonHeaders = []string{"X-Request-Id", "X-Service-API-Base", "X-Service-API-Version", "X-Service-Contract-Version"}
var rateLimitHeaders = []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
var retryHeaders = []string{"Retry-After"}

var headerComponents = map[string]any{
	"X-Request-Id":               map[string]any{"description": "Opaque correlation identifier; also in server logs.", "schema": map[string]any{"type": "string"}},
	"X-Service-API-Base":         map[string]any{"description": "Canonical API base.", "schema": map[string]any{"type": "string", "format": "uri"}},
	"X-Service-API-Version":      map[string]any{"description": "API version (v1).", "schema": map[string]any{"type": "string"}},
	"X-Service-Contract-Version": map[string]any{"description": "Contract revision (" + ContractVersion + ").", "schema": map[string]any{"type": "string"}},
	"Retry-After":                map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer"}},
	"X-RateLimit-Limit":          map[string]any{"description": "Requests allowed in the window.", "schema": map[string]any{"type": "integer"}},
	"X-RateLimit-Remaining":      map[string]any{"description": "Requests left in the window.", "schema": map[string]any{"type": "integer"}},
	"X-RateLimit-Reset":          map[string]any{"description": "Seconds until the window resets.", "schema": map[string]any{"type": "integer"}},
}

func headerRefs(names ...[]string) map[string]any {
	out := map[string]any{}
	for _, list := range names {
		for _, n := range list {
			out[n] = map[string]any{"$ref": "#/components/headers/" + n}
		}
	}
	return out
}

// securitySchemes of spec section 5, by Auth: how each credential
// travels. A scheme one area verifies (an agent's or a messaging
// provider's signature, an identity session's hosted token) is described
// by that area (Area.Schemes, securityScheme).
var securitySchemes = map[Auth]map[string]any{
	AuthAdmin:        {"type": "http", "scheme": "bearer", "description": "Admin token: generated on first start into <data-dir>/admin-token, or TRUSTD_ADMIN_TOKEN."},
	AuthSiteSecret:   {"type": "http", "scheme": "bearer", "description": "A site's private secret (server-side only). Operations that say so also accept it as the body field secret."},
	AuthSiteKey:      {"type": "apiKey", "in": "query", "name": "sitekey", "description": "The public site key; the browser widget sends it in the body field sitekey."},
	AuthMobile:       {"type": "http", "scheme": "bearer", "description": "A registered mobile app's server secret, plus platform and app_id in the body."},
	AuthCredential:   {"type": "http", "scheme": "bearer", "description": "A scoped server credential."},
	AuthAgent:        {"type": "apiKey", "in": "header", "name": "X-Service-Signature"},
	AuthAgentHTTPSig: {"type": "apiKey", "in": "header", "name": "Signature"},
	AuthMessaging:    {"type": "apiKey", "in": "header", "name": "X-Service-Signature"},
	AuthHosted:       {"type": "apiKey", "in": "header", "name": "X-Service-Hosted-Token"},
}

// SpecError is the fixed error body of /siteverify and the rate-limit check.
type SpecError struct {
	Success bool   `json:"success" required:"true"`
	Error   string `json:"error" required:"true" doc:"Error code of spec section 7.2 or 7.3."`
}

// openAPI builds the OpenAPI 3.1 document of every route.
func (s *Server) openAPI() map[string]any {
	g := &schemaGen{components: map[string]any{}, seen: map[reflect.Type]string{}}
	apiErr := g.ref(APIError{})
	// The ApiError schema lists every code with its status and meaning, so
	// integrators find the whole error vocabulary in one place.
	var codes []string
	for _, e := range s.contractErrors() {
		codes = append(codes, e.Code+" ("+strconv.Itoa(e.Status)+"): "+e.Meaning)
	}
	if sch, ok := g.components["ApiError"].(map[string]any); ok {
		sch["description"] = "The error body of every operation except /siteverify and the rate-limit check. Codes:\n" + strings.Join(codes, "\n")
	}
	specErr := g.ref(SpecError{})
	paths := map[string]any{}
	usedSchemes := map[string]any{}
	for _, r := range s.table.routes {
		path := r.FullPath()
		if len(path) > 1 && strings.HasSuffix(path, "/") {
			path = strings.TrimSuffix(path, "/") // served with and without
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		op := map[string]any{
			"operationId": r.ID,
			"summary":     r.Summary,
			"tags":        []any{r.Tag},
		}
		var params []any
		for _, p := range paramNames(r.Path) {
			params = append(params, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, p := range r.Params {
			sch := map[string]any{"type": "string"}
			if len(p.Enum) > 0 {
				sch["enum"] = p.Enum
			}
			params = append(params, map[string]any{"name": p.Name, "in": p.In, "required": false, "description": p.Description, "schema": sch})
		}
		if params != nil {
			op["parameters"] = params
		}
		if len(r.Auth) == 1 && r.Auth[0] == AuthBodySecret {
			op["security"] = []any{}
			op["description"] = "Authenticated by the site's private secret in the body field secret (form-encoded or JSON), never a header."
		} else if len(r.Auth) > 0 {
			var sec []any
			for _, a := range r.Auth {
				name := string(a)
				usedSchemes[name] = s.securityScheme(a)
				sec = append(sec, map[string]any{name: []any{}})
			}
			op["security"] = sec
		} else {
			op["security"] = []any{}
		}
		if r.Body != nil {
			content := map[string]any{"application/json": map[string]any{"schema": g.ref(r.Body)}}
			if r.Form {
				content["application/x-www-form-urlencoded"] = map[string]any{"schema": g.ref(r.Body)}
			}
			if r.Multipart != nil {
				content["multipart/form-data"] = map[string]any{"schema": g.ref(r.Multipart)}
			}
			op["requestBody"] = map[string]any{"required": true, "content": content}
		}
		responses := map[string]any{}
		status := r.Status
		if status == 0 {
			status = 200
		}
		okResp := map[string]any{"description": "Success.", "headers": headerRefs(commonHeaders)}
		switch {
		case r.ContentType == "application/json":
			okResp["content"] = map[string]any{r.ContentType: map[string]any{"schema": map[string]any{"type": "object"}}}
		case r.ContentType != "":
			okResp["content"] = map[string]any{r.ContentType: map[string]any{"schema": map[string]any{"type": "string"}}}
		case r.Result != nil:
			okResp["content"] = map[string]any{"application/json": map[string]any{"schema": g.ref(r.Result)}}
		}
		responses[strconv.Itoa(status)] = okResp
		if r.Conditional {
			responses["304"] = map[string]any{"description": "Not Modified: If-None-Match names the current version (ETag); no body."}
			params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
				"description": "ETags of a cached copy.", "schema": map[string]any{"type": "string"}})
			op["parameters"] = params
		}
		errBody := apiErr
		if r.SpecErrors {
			errBody = specErr
		}
		byStatus := map[int][]string{}
		for _, e := range append(append([]ErrorCode{}, r.Errors...), ErrMethod, ErrRateLimited) {
			byStatus[e.Status] = append(byStatus[e.Status], e.Code+": "+e.Meaning)
		}
		for st, codes := range byStatus {
			body := errBody
			if st == 405 {
				body = apiErr
			}
			hdrs := headerRefs(commonHeaders)
			switch st {
			case 429:
				hdrs = headerRefs(commonHeaders, rateLimitHeaders)
			case 503:
				hdrs = headerRefs(commonHeaders, retryHeaders)
			}
			responses[strconv.Itoa(st)] = map[string]any{
				"description": strings.Join(dedupe(codes), "\n"),
				"headers":     hdrs,
				"content":     map[string]any{"application/json": map[string]any{"schema": body}},
			}
		}
		op["responses"] = responses
		item[strings.ToLower(r.Method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "trustd Trust and Verification API",
			"version":     ContractVersion,
			"license":     map[string]any{"name": "Proprietary", "url": s.cfg.BaseURL + PublicBase + "/"},
			"description": "Generated from the route table of the running node. Every JSON answer carries X-Request-Id, X-Service-API-Base, X-Service-API-Version and X-Service-Contract-Version. The legacy base (the same paths without /v1) is deprecated, has no sunset, and adds Deprecation and Link: rel=\"successor-version\" headers.",
		},
		"servers": []any{map[string]any{"url": s.cfg.BaseURL}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         g.components,
			"securitySchemes": usedSchemes,
			"headers":         headerComponents,
		},
	}
}

func dedupe(in []string) []string {
	sort.Strings(in)
	out := in[:0]
	for i, v := range in {
		if i == 0 || v != in[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// example renders a zero-valued instance of a body type, for the collection.
func example(v any) string {
	if v == nil {
		return ""
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	b, err := json.Marshal(reflect.New(t).Interface(), json.Deterministic(true))
	if err != nil {
		return "{}"
	}
	return string(b)
}

// openAPI30 rewrites the 3.1 document as OpenAPI 3.0.3, for generators
// that read only 3.0: a type list with "null" becomes nullable, and a
// $ref with sibling keywords (which 3.0 ignores) is wrapped in allOf.
// The input is not changed.
func openAPI30(doc map[string]any) map[string]any {
	out := downgrade(doc).(map[string]any)
	out["openapi"] = "3.0.3"
	return out
}

func downgrade(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = downgrade(e)
		}
		if types, ok := m["type"].([]any); ok {
			var nonNull []any
			for _, t := range types {
				if t != "null" {
					nonNull = append(nonNull, t)
				}
			}
			if len(nonNull) == 1 {
				m["type"] = nonNull[0]
				if len(nonNull) != len(types) {
					m["nullable"] = true
				}
			}
		}
		if ref, ok := m["$ref"]; ok && len(m) > 1 {
			delete(m, "$ref")
			m["allOf"] = []any{map[string]any{"$ref": ref}}
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = downgrade(e)
		}
		return out
	}
	return v
}

// securityScheme is the contract's scheme of a: securitySchemes' entry,
// with the description of the area that verifies it when it gives one.
func (s *Server) securityScheme(a Auth) map[string]any {
	for _, ar := range s.cfg.Areas {
		if d, ok := ar.Schemes[a]; ok {
			sch := maps.Clone(securitySchemes[a])
			sch["description"] = d
			return sch
		}
	}
	return securitySchemes[a]
}
