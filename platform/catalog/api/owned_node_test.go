package api_test

import (
	"strings"
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// The generic admin path keeps each workspace's records to itself, shows
// a secret only in the create answer, and keeps a site's fixed fields
// fixed.
func TestAdminRecordsBelongToTheirWorkspace(t *testing.T) {
	tn := nodetest.Start(t)
	var a, b wsView
	tn.MustCreate("/workspaces", map[string]any{"name": "a"}, &a)
	tn.MustCreate("/workspaces", map[string]any{"name": "b"}, &b)
	baseA, baseB := "/workspaces/"+a.WorkspaceID, "/workspaces/"+b.WorkspaceID
	var app struct {
		MobileAppID string `json:"mobile_app_id"`
	}
	tn.MustCreate(baseA+"/mobile-apps", map[string]any{"name": "app", "platform": "android", "app_id": "com.a.app"}, &app)
	var cred struct {
		CredentialID string `json:"credential_id"`
	}
	tn.MustCreate(baseA+"/credentials", map[string]any{"name": "k", "scopes": []string{"site.verify"}}, &cred)
	var staging, sandbox siteView
	tn.MustCreate(baseA+"/sites", map[string]any{"name": "s", "hostnames": []string{"a.example"}, "environment": "staging"}, &staging)
	tn.MustCreate(baseA+"/sites", map[string]any{"name": "box", "environment": "sandbox"}, &sandbox)
	if !strings.HasPrefix(staging.Secret, "sk_stag_") || !strings.HasPrefix(sandbox.Secret, "sk_sandbox_") || !strings.HasPrefix(sandbox.SiteKey, "site_sandbox_") {
		t.Fatalf("secret prefixes: staging %q, sandbox %q (key %q)", staging.Secret, sandbox.Secret, sandbox.SiteKey)
	}
	for _, path := range []string{baseB + "/mobile-apps/" + app.MobileAppID, baseB + "/credentials/" + cred.CredentialID, baseB + "/sites/" + staging.SiteID} {
		if r := tn.Admin("DELETE", path, nil); r.Status != 404 || r.ErrorCode(t) != "not-found" {
			t.Fatalf("DELETE %s from another workspace = %d %s", path, r.Status, r.Body)
		}
	}
	for _, path := range []string{baseB + "/mobile-apps", baseB + "/credentials", baseB + "/sites"} {
		if r := tn.Admin("GET", path, nil); r.Status != 200 || strings.Contains(string(r.Body), a.WorkspaceID) {
			t.Fatalf("GET %s lists another workspace's records: %d %s", path, r.Status, r.Body)
		}
	}
	if r := tn.Admin("PATCH", baseA+"/sites/"+staging.SiteID, map[string]any{"environment": "production"}); r.Status != 400 || r.ErrorCode(t) != "invalid-field" {
		t.Fatalf("PATCH environment = %d %s", r.Status, r.Body)
	}
	if r := tn.Admin("PATCH", baseA+"/sites/"+staging.SiteID, map[string]any{"hostnames": []string{}}); r.Status != 400 || r.ErrorCode(t) != "invalid-field" {
		t.Fatalf("PATCH empty hostnames = %d %s", r.Status, r.Body)
	}
	r := tn.Admin("PATCH", baseA+"/sites/"+staging.SiteID, map[string]any{"name": "renamed"})
	if r.Status != 200 || strings.Contains(string(r.Body), `"secret"`) || !strings.Contains(string(r.Body), `"a.example"`) {
		t.Fatalf("PATCH name = %d %s (keeps the hostnames, shows no secret)", r.Status, r.Body)
	}
	if r := tn.Admin("GET", baseA+"/mobile-apps/"+app.MobileAppID, nil); r.Status != 404 && r.Status != 405 {
		t.Fatalf("GET one mobile app is not an operation, got %d", r.Status)
	}
}
