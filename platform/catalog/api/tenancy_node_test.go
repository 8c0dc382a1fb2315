package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/platform/catalog"
)

type wsView struct {
	WorkspaceID string `json:"workspace_id"`
	Name        string `json:"name"`
	Settings    struct {
		RateLimitingEnabled bool   `json:"rate_limiting_enabled"`
		DefaultMode         string `json:"default_mode"`
	} `json:"settings"`
}

type siteView struct {
	SiteID    string   `json:"site_id"`
	SiteKey   string   `json:"site_key"`
	Secret    string   `json:"secret"`
	Hostnames []string `json:"hostnames"`
}

func TestAdminWorkspaceLifecycle(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "acme", "default_mode": "observe"}, &ws)
	if ws.Name != "acme" || ws.Settings.DefaultMode != "observe" || !ws.Settings.RateLimitingEnabled {
		t.Fatalf("created workspace = %+v", ws)
	}
	r := tn.Admin("PATCH", "/workspaces/"+ws.WorkspaceID, map[string]any{"rate_limiting_enabled": false, "name": "acme2"})
	var patched wsView
	r.Decode(t, &patched)
	if r.Status != 200 || patched.Name != "acme2" || patched.Settings.RateLimitingEnabled || patched.Settings.DefaultMode != "observe" {
		t.Fatalf("PATCH = %d %s", r.Status, r.Body)
	}
	r = tn.Admin("GET", "/workspaces", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), ws.WorkspaceID) {
		t.Fatalf("list = %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("DELETE", "/workspaces/"+ws.WorkspaceID, nil); r.Status != 204 {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("GET", "/workspaces/"+ws.WorkspaceID, nil); r.Status != 404 || r.ErrorCode(t) != "not-found" {
		t.Fatalf("GET deleted = %d %s", r.Status, r.Body)
	}
}

func TestAdminSitesAppsCredentials(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "acme"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID
	var site siteView
	tn.MustCreate(base+"/sites", map[string]any{"name": "shop", "hostnames": []string{"Shop.Example.com"}}, &site)
	if site.Secret == "" || !strings.HasPrefix(site.Secret, "sk_live_") || site.Hostnames[0] != "shop.example.com" {
		t.Fatalf("created site = %+v", site)
	}
	r := tn.Admin("GET", base+"/sites/"+site.SiteID, nil)
	if r.Status != 200 || strings.Contains(string(r.Body), site.Secret) || strings.Contains(string(r.Body), `"secret"`) {
		t.Fatalf("GET site must not reveal the secret: %s", r.Body)
	}
	r = tn.Admin("PATCH", base+"/sites/"+site.SiteID, map[string]any{"challenge_mode": "score_enforced", "score_threshold": 0.7})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"score_enforced"`) {
		t.Fatalf("PATCH site = %d %s", r.Status, r.Body)
	}
	r = tn.Admin("POST", base+"/sites/"+site.SiteID+"/rotate-secret", map[string]any{"grace_period_seconds": 60})
	var rotated siteView
	r.Decode(t, &rotated)
	if r.Status != 200 || rotated.Secret == "" || rotated.Secret == site.Secret || !strings.Contains(string(r.Body), "previous_secret_valid_until") {
		t.Fatalf("rotate = %d %s", r.Status, r.Body)
	}
	cat := tn.N.Store().Catalog()
	now := cat.Sites[site.SiteID].CreatedAt
	if cat.SiteBySecret(site.Secret, now) == nil || cat.SiteBySecret(rotated.Secret, now) == nil {
		t.Fatal("both the old (in grace) and the new secret must authenticate")
	}
	var app struct {
		MobileAppID  string `json:"mobile_app_id"`
		MobileSecret string `json:"mobile_secret"`
	}
	tn.MustCreate(base+"/mobile-apps", map[string]any{"name": "app", "platform": "ios", "app_id": "com.acme.app"}, &app)
	if app.MobileSecret == "" {
		t.Fatal("mobile secret missing from the create answer")
	}
	if r := tn.Admin("POST", base+"/mobile-apps", map[string]any{"name": "dup", "platform": "ios", "app_id": "com.acme.app"}); r.Status != 409 {
		t.Fatalf("duplicate app = %d %s", r.Status, r.Body)
	}
	var cred struct {
		CredentialID string   `json:"credential_id"`
		Credential   string   `json:"credential"`
		Scopes       []string `json:"scopes"`
	}
	tn.MustCreate(base+"/credentials", map[string]any{"name": "backend", "scopes": []string{"site.verify"}}, &cred)
	if cred.Credential == "" || len(cred.Scopes) != 1 {
		t.Fatalf("credential = %+v", cred)
	}
	for _, path := range []string{base + "/sites", base + "/mobile-apps", base + "/credentials"} {
		r := tn.Admin("GET", path, nil)
		if r.Status != 200 || strings.Contains(string(r.Body), "sk_live_") || strings.Contains(string(r.Body), "ms_") || strings.Contains(string(r.Body), "cred_") {
			t.Fatalf("GET %s = %d, and lists must never show secrets: %s", path, r.Status, r.Body)
		}
	}
	for _, path := range []string{base + "/mobile-apps/" + app.MobileAppID, base + "/credentials/" + cred.CredentialID, base + "/sites/" + site.SiteID} {
		if r := tn.Admin("DELETE", path, nil); r.Status != 204 {
			t.Fatalf("DELETE %s = %d %s", path, r.Status, r.Body)
		}
		if r := tn.Admin("DELETE", path, nil); r.Status != 404 {
			t.Fatalf("second DELETE %s = %d %s", path, r.Status, r.Body)
		}
	}
}

func TestAdminErrors(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "acme"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID
	tests := []struct {
		name   string
		method string
		path   string
		token  string
		body   any
		status int
		code   string
	}{
		{"a missing admin token is refused", "GET", "/workspaces", "-", nil, 401, "unauthorized"},
		{"a wrong admin token is refused", "GET", "/workspaces", "adm_wrong", nil, 401, "unauthorized"},
		{"a site secret is not an admin token", "GET", "/workspaces", "sk_live_x", nil, 401, "unauthorized"},
		{"an unknown workspace is 404", "GET", "/workspaces/nope", "", nil, 404, "not-found"},
		{"sites of an unknown workspace are 404", "POST", "/workspaces/nope/sites", "", map[string]any{"name": "x", "hostnames": []string{"a.com"}}, 404, "not-found"},
		{"an unknown site is 404", "GET", base + "/sites/nope", "", nil, 404, "not-found"},
		{"a workspace needs a name", "POST", "/workspaces", "", map[string]any{}, 400, "invalid-field"},
		{"a blank name is invalid", "POST", "/workspaces", "", map[string]any{"name": "  "}, 400, "invalid-field"},
		{"an unknown default mode is invalid", "PATCH", base, "", map[string]any{"default_mode": "panic"}, 400, "invalid-field"},
		{"a wrong type is invalid", "POST", "/workspaces", "", `{"name":42}`, 400, "invalid-field"},
		{"an unknown field is refused", "POST", "/workspaces", "", `{"name":"a","nmae":"b"}`, 400, "unknown-field"},
		{"a duplicate key is refused", "POST", "/workspaces", "", `{"name":"a","name":"b"}`, 400, "malformed-json"},
		{"a case-insensitive key is refused", "POST", "/workspaces", "", `{"Name":"a"}`, 400, "unknown-field"},
		{"trailing data is refused", "POST", "/workspaces", "", `{"name":"a"}x`, 400, "malformed-json"},
		// A JSON null is no object: it is not an empty change (issue 24).
		{"a null PATCH of a workspace is refused", "PATCH", base, "", `null`, 400, "malformed-json"},
		{"a null PATCH with spaces around it is refused", "PATCH", base, "", " null\n", 400, "malformed-json"},
		{"a null PUT of the messaging policy is refused", "PUT", base + "/messaging/policy", "", `null`, 400, "malformed-json"},
		{"a messaging policy PUT without its policy is refused", "PUT", base + "/messaging/policy", "", `{}`, 400, "invalid-field"},
		{"a messaging policy PUT with a null policy is refused", "PUT", base + "/messaging/policy", "", `{"policy":null}`, 400, "invalid-field"},
		{"a null create of a workspace is refused", "POST", "/workspaces", "", `null`, 400, "malformed-json"},
		{"a site needs hostnames", "POST", base + "/sites", "", map[string]any{"name": "x"}, 400, "invalid-field"},
		{"a wildcard hostname is invalid", "POST", base + "/sites", "", map[string]any{"name": "x", "hostnames": []string{"*.example.com"}}, 400, "invalid-field"},
		{"a hostname with a scheme is invalid", "POST", base + "/sites", "", map[string]any{"name": "x", "hostnames": []string{"https://a.com"}}, 400, "invalid-field"},
		{"an unknown challenge mode is invalid", "POST", base + "/sites", "", map[string]any{"name": "x", "hostnames": []string{"a.com"}, "challenge_mode": "puzzle"}, 400, "invalid-field"},
		{"a score threshold above 1 is invalid", "POST", base + "/sites", "", map[string]any{"name": "x", "hostnames": []string{"a.com"}, "score_threshold": 1.5}, 400, "invalid-field"},
		{"an unknown environment is invalid", "POST", base + "/sites", "", map[string]any{"name": "x", "hostnames": []string{"a.com"}, "environment": "prod"}, 400, "invalid-field"},
		{"an unknown platform is invalid", "POST", base + "/mobile-apps", "", map[string]any{"name": "x", "platform": "symbian", "app_id": "a.b"}, 400, "invalid-field"},
		{"an unknown scope is invalid", "POST", base + "/credentials", "", map[string]any{"name": "x", "scopes": []string{"root"}}, 400, "invalid-field"},
		{"a credential needs a scope", "POST", base + "/credentials", "", map[string]any{"name": "x", "scopes": []string{}}, 400, "invalid-field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			token := tn.N.AdminToken()
			if tc.token == "-" {
				token = ""
			} else if tc.token != "" {
				token = tc.token
			}
			r := tn.Do(tc.method, "/admin/v1"+tc.path, token, tc.body)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.method, tc.path, r.Status, r.Body, tc.status, tc.code)
			}
			if r.Header.Get("X-Request-Id") == "" {
				t.Fatal("error answers carry X-Request-Id too")
			}
		})
	}
	r := tn.Do("POST", "/admin/v1/workspaces", tn.N.AdminToken(), nil, "Content-Type", "text/plain")
	if r.Status != 415 || r.ErrorCode(t) != "unsupported-media-type" {
		t.Fatalf("text/plain body = %d %s", r.Status, r.Body)
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, Dev: true}
	tn := nodetest.StartConfig(t, cfg)
	dev := *tn.N.Dev()
	token := tn.N.AdminToken()
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "kept", "adaptive_cost_enabled": true}, &ws)
	var site siteView
	tn.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "s", "hostnames": []string{"kept.example"}, "challenge_mode": "visual"}, &site)
	tn.Stop()

	tn2 := nodetest.StartConfig(t, cfg)
	if tn2.N.AdminToken() != token {
		t.Fatal("the admin token changed across a restart")
	}
	if d := tn2.N.Dev(); d == nil || d.WorkspaceID != dev.WorkspaceID || d.Secret != dev.Secret {
		t.Fatalf("--dev reseeded on restart: %+v vs %+v", d, dev)
	}
	cat := tn2.N.Store().Catalog()
	if len(cat.Workspaces) != 2 {
		t.Fatalf("workspaces after restart = %d, want 2 (dev + kept)", len(cat.Workspaces))
	}
	w := cat.Workspaces[ws.WorkspaceID]
	if w == nil || !w.Settings.AdaptiveCostEnabled {
		t.Fatalf("workspace settings lost: %+v", w)
	}
	s := cat.Sites[site.SiteID]
	if s == nil || s.ChallengeMode != "visual" || cat.SiteBySecret(site.Secret, s.CreatedAt) != s {
		t.Fatalf("site or its secret lost: %+v", s)
	}
	if cat.SigningKey("live") == nil || cat.SigningKey("sandbox") == nil {
		t.Fatal("signing keys lost")
	}
	if r := tn2.Admin("GET", "/workspaces/"+ws.WorkspaceID, nil); r.Status != 200 {
		t.Fatalf("GET after restart = %d", r.Status)
	}
}

// A workspace's credentials are capped (issue 24): the one past
// catalog.MaxCredentialsPerWorkspace is 409 conflict, and a delete makes
// room again.
func TestAWorkspaceCannotCreateCredentialsPastItsCap(t *testing.T) {
	tn := nodetest.Start(t)
	var ws wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "acme"}, &ws)
	base := "/workspaces/" + ws.WorkspaceID + "/credentials"
	var first struct {
		ID string `json:"credential_id"`
	}
	for i := 0; i < catalog.MaxCredentialsPerWorkspace; i++ {
		tn.MustCreate(base, map[string]any{"name": fmt.Sprint("c", i), "scopes": []string{"site.verify"}}, &first)
	}
	r := tn.Admin("POST", base, map[string]any{"name": "one too many", "scopes": []string{"site.verify"}})
	if r.Status != 409 || r.ErrorCode(t) != "conflict" {
		t.Fatalf("credential %d: %d %s", catalog.MaxCredentialsPerWorkspace+1, r.Status, r.Body)
	}
	if r := tn.Admin("DELETE", base+"/"+first.ID, nil); r.Status != 200 && r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("POST", base, map[string]any{"name": "room again", "scopes": []string{"site.verify"}}); r.Status != 201 {
		t.Fatalf("after a delete: %d %s", r.Status, r.Body)
	}
}
