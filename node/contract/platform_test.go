package contract_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/pb33f/libopenapi"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

func TestCommonHeadersOnEveryJSONAnswer(t *testing.T) {
	tn := nodetest.Start(t)
	for _, path := range []string{"/v1/", "/v1/changelog.json", "/v1/nope", "/admin/v1/workspaces"} {
		r := tn.Do("GET", path, "", nil)
		for _, h := range []string{"X-Request-Id", "X-Service-API-Base", "X-Service-API-Version", "X-Service-Contract-Version"} {
			if r.Header.Get(h) == "" {
				t.Errorf("GET %s: missing %s", path, h)
			}
		}
		if !strings.HasSuffix(r.Header.Get("X-Service-API-Base"), "/v1") || r.Header.Get("X-Service-API-Version") != "v1" {
			t.Errorf("GET %s: base %q version %q", path, r.Header.Get("X-Service-API-Base"), r.Header.Get("X-Service-API-Version"))
		}
	}
	r := tn.Do("GET", "/v1/", "", nil, "X-Request-Id", "caller-id-1")
	if r.Header.Get("X-Request-Id") != "caller-id-1" {
		t.Fatal("a caller's X-Request-Id is kept for correlation")
	}
	var info struct {
		Service string `json:"service"`
		Version string `json:"version"`
		Status  string `json:"status"`
	}
	r.Decode(t, &info)
	if r.Status != 200 || info.Service != "trustd" || info.Version != "v1" || info.Status != "ok" {
		t.Fatalf("GET /v1/ = %d %s", r.Status, r.Body)
	}
}

func TestUnknownPathAndWrongMethod(t *testing.T) {
	tn := nodetest.Start(t)
	r := tn.Do("GET", "/v1/no/such/thing", "", nil)
	if r.Status != 404 || r.ErrorCode(t) != "not-found" || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("unknown path = %d %s", r.Status, r.Body)
	}
	r = tn.Do("DELETE", "/v1/changelog.json", "", nil)
	if r.Status != 405 || r.ErrorCode(t) != "method-not-allowed" || r.Header.Get("Allow") != "GET" {
		t.Fatalf("wrong method = %d Allow=%q %s", r.Status, r.Header.Get("Allow"), r.Body)
	}
	r = tn.Do("PUT", "/admin/v1/workspaces/abc", tn.N.AdminToken(), nil)
	allow := r.Header.Get("Allow")
	if r.Status != 405 || !strings.Contains(allow, "GET") || !strings.Contains(allow, "PATCH") || !strings.Contains(allow, "DELETE") {
		t.Fatalf("wrong method on a parameterised path = %d Allow=%q", r.Status, allow)
	}
	if r := tn.Do("GET", "/admin/workspaces", "", nil); r.Status != 404 {
		t.Fatalf("admin operations have no legacy base: %d", r.Status)
	}
}

func TestLegacyBaseServesTheSameOperationsWithMigrationHeaders(t *testing.T) {
	tn := nodetest.Start(t)
	canonical := tn.Do("GET", "/v1/changelog.json", "", nil)
	legacy := tn.Do("GET", "/changelog.json", "", nil)
	if legacy.Status != 200 || string(legacy.Body) != string(canonical.Body) {
		t.Fatalf("legacy = %d, differs from canonical", legacy.Status)
	}
	if canonical.Header.Get("Deprecation") != "" {
		t.Fatal("the canonical base is not deprecated")
	}
	if legacy.Header.Get("Deprecation") == "" || legacy.Header.Get("Sunset") != "" {
		t.Fatalf("legacy headers: Deprecation=%q Sunset=%q", legacy.Header.Get("Deprecation"), legacy.Header.Get("Sunset"))
	}
	want := "<" + tn.N.APIURL() + "/v1/changelog.json>; rel=\"successor-version\""
	if got := legacy.Header.Get("Link"); got != want {
		t.Fatalf("Link = %q, want %q", got, want)
	}
	if r := tn.Do("GET", "/", "", nil); r.Status != 200 || r.Header.Get("Deprecation") == "" {
		t.Fatalf("legacy GET / = %d", r.Status)
	}
}

func TestBodyLimit(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.MaxBodyBytes = 1024 })
	big := `{"name":"` + strings.Repeat("a", 4096) + `"}`
	r := tn.Do("POST", "/admin/v1/workspaces", tn.N.AdminToken(), big)
	if r.Status != 413 || r.ErrorCode(t) != "body-too-large" || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("oversized body = %d %s", r.Status, r.Body)
	}
}

func TestIngressLimitPerClientIP(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.IngressIPRate = 5 })
	var last nodetest.Response
	limited := 0
	for i := 0; i < 20; i++ {
		last = tn.Do("GET", "/v1/", "", nil)
		if last.Status == 429 {
			limited++
			break
		}
	}
	if limited == 0 {
		t.Fatal("20 requests at a limit of 5/s burst 5 were never limited")
	}
	if last.ErrorCode(t) != "rate-limit-exceeded" {
		t.Fatalf("429 body = %s", last.Body)
	}
	for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if last.Header.Get(h) == "" {
			t.Errorf("429 lacks %s", h)
		}
	}
	if last.Header.Get("X-RateLimit-Limit") != "5" || last.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("limit headers: %v", last.Header)
	}
}

func TestOpenAPIIsValidAndMatchesTheRouter(t *testing.T) {
	tn := nodetest.Start(t)
	r := tn.Do("GET", "/v1/openapi.json", "", nil)
	if r.Status != 200 {
		t.Fatalf("GET openapi = %d", r.Status)
	}
	doc, err := libopenapi.NewDocument(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("OpenAPI 3.1 document does not build: %v", err)
	}
	if v := model.Model.Version; v != "3.1.0" {
		t.Fatalf("openapi version %q", v)
	}
	var raw struct {
		Paths map[string]map[string]struct {
			OperationID string         `json:"operationId"`
			Summary     string         `json:"summary"`
			Responses   map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &raw, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	ops := 0
	for path, item := range raw.Paths {
		for method, op := range item {
			ops++
			if op.OperationID == "" || op.Summary == "" || len(op.Responses) < 2 {
				t.Errorf("%s %s: contract entry incomplete", method, path)
			}
			// Every documented operation is served: the router never
			// answers 404 for it, nor 405 for its documented method.
			concrete := strings.NewReplacer("{workspace_id}", "x", "{site_id}", "x", "{mobile_app_id}", "x", "{credential_id}", "x").Replace(path)
			concrete = fillParams(concrete)
			got := tn.Do(strings.ToUpper(method), concrete, "", nil)
			if got.Status == 405 || (got.Status == 404 && got.ErrorCode(t) == "not-found" && !strings.Contains(path, "{")) {
				t.Errorf("%s %s is in the contract but the router answers %d %s", method, path, got.Status, got.Body)
			}
		}
	}
	if ops < 20 {
		t.Fatalf("only %d operations in the contract", ops)
	}
	// And the reverse: an operation missing from the contract fails here.
	col := tn.Do("GET", "/v1/postman-collection.json", "", nil)
	var pm struct {
		Info struct {
			Schema string `json:"schema"`
		} `json:"info"`
		Item []struct {
			Item []struct {
				Name string `json:"name"`
			} `json:"item"`
		} `json:"item"`
	}
	col.Decode(t, &pm)
	n := 0
	for _, f := range pm.Item {
		n += len(f.Item)
	}
	if !strings.Contains(pm.Info.Schema, "v2.1.0") || n != ops {
		t.Fatalf("postman collection has %d requests (schema %q), contract has %d operations", n, pm.Info.Schema, ops)
	}
}

// fillParams replaces any remaining {param} with a placeholder value.
func fillParams(p string) string {
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return p
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return p
		}
		p = p[:i] + "x" + p[i+j+1:]
	}
}

func TestOneCredentialHasOneIngressBudgetAcrossOperations(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "acme", "ingress_per_second": 1, "ingress_burst": 2}, &ws)
	var site siteView
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "s", "hostnames": []string{"a.example"}}, &site)
	for i := 0; i < 2; i++ {
		r := tn.Do("POST", "/v1/rate-limit/check", site.Secret, map[string]any{"action": "login"})
		if r.Status != 200 {
			t.Fatalf("check %d = %d %s", i, r.Status, r.Body)
		}
	}
	r := tn.Do("POST", "/v1/concurrency/acquire", site.Secret, map[string]any{"action": "login"})
	if r.Status != 429 || r.ErrorCode(t) != "rate-limit-exceeded" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a third call with the same secret, to another module = %d %s; the budget is per credential", r.Status, r.Body)
	}
}

func TestTransportErrorsAnswerJSON(t *testing.T) {
	tn := nodetest.Start(t)
	addr := strings.TrimPrefix(tn.N.APIURL(), "http://")
	raw := func(req string) string {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(conn)
		return string(b)
	}
	tests := []struct {
		name, req, status, code string
	}{
		{"an unparsable request is a JSON bad-request", "NOT A REQUEST\r\n\r\n", "400", `"error":"bad-request"`},
		{"oversized headers are a JSON headers-too-large", "GET /v1/ HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", "431", `"error":"headers-too-large"`},
		// A request framed two ways is refused and its connection closed:
		// the pipelined GET behind it, which a proxy might have framed as
		// part of the body, is never answered (no request smuggling).
		{"Content-Length with Transfer-Encoding is refused and the connection closed",
			"POST /v1/siteverify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\nGET /v1/ HTTP/1.1\r\nHost: x\r\n\r\n",
			"400", `"error":"bad-request"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := raw(tc.req)
			if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status) || !strings.Contains(got, tc.code) || !strings.Contains(got, "X-Request-Id") {
				t.Fatalf("answer:\n%.400s", got)
			}
			if n := strings.Count(got, "HTTP/1.1 "); n != 1 {
				t.Fatalf("%d answers on one connection, want 1:\n%.1200s", n, got)
			}
		})
	}
	doc := tn.Do("GET", "/v1/openapi.json", "", nil)
	if !strings.Contains(string(doc.Body), "headers-too-large (431)") {
		t.Fatal("the contract's ApiError schema lists every code")
	}
}

func TestContractHeadersAndTheOpenAPI30Document(t *testing.T) {
	tn := nodetest.Start(t)
	r := tn.Do("GET", "/v1/", "", nil)
	if got := r.Header.Get("X-Service-Contract-Version"); got != "2026-08-08.3" {
		t.Fatalf("X-Service-Contract-Version = %q, want exactly the spec's revision", got)
	}
	if r.Header.Get("X-Service-Build") == "" {
		t.Fatal("the build is not named in X-Service-Build")
	}
	doc := tn.Do("GET", "/v1/openapi-3.0.json", "", nil)
	var d struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Security []map[string]any `json:"security"`
		} `json:"paths"`
	}
	doc.Decode(t, &d)
	if d.OpenAPI != "3.0.3" || d.Components.Schemas["ApiError"] == nil {
		t.Fatalf("openapi-3.0.json: version %q, ApiError present %v", d.OpenAPI, d.Components.Schemas["ApiError"] != nil)
	}
	if sv := d.Paths["/v1/siteverify"]["post"]; len(sv.Security) != 0 {
		t.Fatalf("/siteverify declares %v; its secret is in the body", sv.Security)
	}
	if _, ok := d.Paths["/v1/"]; ok {
		t.Fatal("a path with a trailing slash is declared")
	}
	if strings.Contains(string(doc.Body), `"type":["`) {
		t.Fatal("the 3.0 document still has 3.1 type lists")
	}
}
