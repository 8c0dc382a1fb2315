package contract_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// idemCreate posts an admin create with an Idempotency-Key.
func (tn *testNode) idemCreate(path, key string, body any) response {
	tn.t.Helper()
	return tn.do("POST", "/admin/v1"+path, tn.n.AdminToken(), body, "Idempotency-Key", key)
}

func TestAdminCreatesWithAnIdempotencyKeyCreateOnce(t *testing.T) {
	tn := mustStartNode(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	first := tn.idemCreate("/workspaces", "ws-key-1", map[string]any{"name": "acme", "ingress_per_second": 7})
	if first.status != 201 {
		t.Fatalf("create workspace: %d %s", first.status, first.body)
	}
	first.decode(t, &ws)
	again := tn.idemCreate("/workspaces", "ws-key-1", map[string]any{"name": "acme", "ingress_per_second": 7})
	if again.status != 201 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retried workspace create: %d %s (replayed %q), want the first answer %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
	}
	sites := "/workspaces/" + ws.WorkspaceID + "/sites"
	body := map[string]any{"name": "shop", "hostnames": []string{"shop.example"}}
	type site struct {
		SiteID string `json:"site_id"`
		Secret string `json:"secret"`
	}
	var s1, s2 site
	r := tn.idemCreate(sites, "site-key-1", body)
	if r.status != 201 {
		t.Fatalf("create site: %d %s", r.status, r.body)
	}
	r.decode(t, &s1)
	r = tn.idemCreate(sites, "site-key-1", body)
	r.decode(t, &s2)
	if r.status != 201 || s2 != s1 || s1.Secret == "" {
		t.Fatalf("retried site create: %d %+v %s, want %+v (its secret too)", r.status, s2, r.body, s1)
	}
	// The same body with its members in another order is the same request.
	r = tn.idemCreate(sites, "site-key-1", `{ "hostnames": ["shop.example"], "name": "shop" }`)
	var s3 site
	r.decode(t, &s3)
	if r.status != 201 || s3 != s1 {
		t.Fatalf("the same body reordered: %d %s", r.status, r.body)
	}
	r = tn.idemCreate(sites, "site-key-1", `{"name":"shop","hostnames":["shop.example"]}`)
	r.decode(t, &s3)
	if r.status != 201 || s3 != s1 {
		t.Fatalf("the same body in the other order: %d %s", r.status, r.body)
	}
	tests := []struct {
		name, key string
		body      any
		status    int
		code      string
	}{
		{"the same key with another body is refused", "site-key-1", map[string]any{"name": "other", "hostnames": []string{"shop.example"}}, 409, "idempotency-key-reused"},
		{"a key with a space is refused", "site key", body, 400, "invalid-idempotency-key"},
		{"a key over 128 characters is refused", strings.Repeat("k", 129), body, 400, "invalid-idempotency-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tn.idemCreate(sites, tc.key, tc.body)
			if r.status != tc.status || r.errorCode(t) != tc.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	// The same key on another collection is another request.
	if r := tn.idemCreate("/workspaces/"+ws.WorkspaceID+"/credentials", "site-key-1", map[string]any{"name": "srv", "scopes": []string{"site.verify"}}); r.status != 409 {
		t.Fatalf("the key on another path: %d %s", r.status, r.body)
	}
	// Another credential's key is its own: the key hash binds the admin
	// token, so the same key from another token would create (not
	// testable with one admin token); without a key every create creates.
	for i := 0; i < 2; i++ {
		if r := tn.admin("POST", sites, body); r.status != 201 {
			t.Fatalf("create without a key: %d %s", r.status, r.body)
		}
	}
	var list struct {
		Sites []site `json:"sites"`
	}
	tn.admin("GET", sites, nil).decode(t, &list)
	if len(list.Sites) != 3 {
		t.Fatalf("%d sites, want 3 (one by the key, two without)", len(list.Sites))
	}
}

// TestAnAdminCreateCutOffAfterItWasSentIsCreatedOnceByItsRetry sends a
// create and closes the connection without reading the answer (the client
// saw a failure; the node may have committed it), then retries with the
// same key: the retry answers the one record, and no duplicate exists.
func TestAnAdminCreateCutOffAfterItWasSentIsCreatedOnceByItsRetry(t *testing.T) {
	tn := mustStartNode(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.mustCreate("/workspaces", map[string]any{"name": "acme"}, &ws)
	path := "/admin/v1/workspaces/" + ws.WorkspaceID + "/console-users"
	body := `{"email":"ops@example.com","role":"editor"}`
	addr := strings.TrimPrefix(tn.n.APIURL(), "http://")
	for attempt := 0; attempt < 3; attempt++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: user-1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			path, addr, tn.n.AdminToken(), len(body), body)
		conn.Close() // cut off: the answer is never read
	}
	var first, retry struct {
		ID        string `json:"console_user_id"`
		SignInURL string `json:"sign_in_url"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := tn.do("POST", path, tn.n.AdminToken(), body, "Idempotency-Key", "user-1")
		if r.status == 201 {
			r.decode(t, &first)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry: %d %s", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := tn.do("POST", path, tn.n.AdminToken(), body, "Idempotency-Key", "user-1")
	r.decode(t, &retry)
	if r.status != 201 || retry != first || first.SignInURL == "" {
		t.Fatalf("second retry: %d %+v, want %+v with its one-time sign-in link", r.status, retry, first)
	}
	var list struct {
		Users []struct {
			ID string `json:"console_user_id"`
		} `json:"console_users"`
	}
	tn.admin("GET", "/workspaces/"+ws.WorkspaceID+"/console-users", nil).decode(t, &list)
	if len(list.Users) != 1 || list.Users[0].ID != first.ID {
		t.Fatalf("console users %+v, want only %s", list.Users, first.ID)
	}
}
