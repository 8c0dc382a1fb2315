package contract_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
)

// idemCreate posts an admin create with an Idempotency-Key.
func idemCreate(tn *nodetest.Node, path, key string, body any) nodetest.Response {
	tn.T.Helper()
	return tn.Do("POST", "/admin/v1"+path, tn.N.AdminToken(), body, "Idempotency-Key", key)
}

func TestAdminCreatesWithAnIdempotencyKeyCreateOnce(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	first := idemCreate(tn, "/workspaces", "ws-key-1", map[string]any{"name": "acme", "ingress_per_second": 7})
	if first.Status != 201 {
		t.Fatalf("create workspace: %d %s", first.Status, first.Body)
	}
	first.Decode(t, &ws)
	again := idemCreate(tn, "/workspaces", "ws-key-1", map[string]any{"name": "acme", "ingress_per_second": 7})
	if again.Status != 201 || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retried workspace create: %d %s (replayed %q), want the first answer %s", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
	}
	sites := "/workspaces/" + ws.WorkspaceID + "/sites"
	body := map[string]any{"name": "shop", "hostnames": []string{"shop.example"}}
	type site struct {
		SiteID string `json:"site_id"`
		Secret string `json:"secret"`
	}
	var s1, s2 site
	r := idemCreate(tn, sites, "site-key-1", body)
	if r.Status != 201 {
		t.Fatalf("create site: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &s1)
	r = idemCreate(tn, sites, "site-key-1", body)
	r.Decode(t, &s2)
	if r.Status != 201 || s2 != s1 || s1.Secret == "" {
		t.Fatalf("retried site create: %d %+v %s, want %+v (its secret too)", r.Status, s2, r.Body, s1)
	}
	// The same body with its members in another order is the same request.
	r = idemCreate(tn, sites, "site-key-1", `{ "hostnames": ["shop.example"], "name": "shop" }`)
	var s3 site
	r.Decode(t, &s3)
	if r.Status != 201 || s3 != s1 {
		t.Fatalf("the same body reordered: %d %s", r.Status, r.Body)
	}
	r = idemCreate(tn, sites, "site-key-1", `{"name":"shop","hostnames":["shop.example"]}`)
	r.Decode(t, &s3)
	if r.Status != 201 || s3 != s1 {
		t.Fatalf("the same body in the other order: %d %s", r.Status, r.Body)
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
			r := idemCreate(tn, sites, tc.key, tc.body)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	// The same key on another collection is another request.
	if r := idemCreate(tn, "/workspaces/"+ws.WorkspaceID+"/credentials", "site-key-1", map[string]any{"name": "srv", "scopes": []string{"site.verify"}}); r.Status != 409 {
		t.Fatalf("the key on another path: %d %s", r.Status, r.Body)
	}
	// Another credential's key is its own: the key hash binds the admin
	// token, so the same key from another token would create (not
	// testable with one admin token); without a key every create creates.
	for i := 0; i < 2; i++ {
		if r := tn.Admin("POST", sites, body); r.Status != 201 {
			t.Fatalf("create without a key: %d %s", r.Status, r.Body)
		}
	}
	var list struct {
		Sites []site `json:"sites"`
	}
	tn.Admin("GET", sites, nil).Decode(t, &list)
	if len(list.Sites) != 3 {
		t.Fatalf("%d sites, want 3 (one by the key, two without)", len(list.Sites))
	}
}

// TestAnAdminCreateCutOffAfterItWasSentIsCreatedOnceByItsRetry sends a
// create and closes the connection without reading the answer (the client
// saw a failure; the node may have committed it), then retries with the
// same key: the retry answers the one record, and no duplicate exists.
func TestAnAdminCreateCutOffAfterItWasSentIsCreatedOnceByItsRetry(t *testing.T) {
	tn := nodetest.Start(t)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "acme"}, &ws)
	path := "/admin/v1/workspaces/" + ws.WorkspaceID + "/console-users"
	body := `{"email":"ops@example.com","role":"editor"}`
	addr := strings.TrimPrefix(tn.N.APIURL(), "http://")
	for attempt := 0; attempt < 3; attempt++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: user-1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			path, addr, tn.N.AdminToken(), len(body), body)
		conn.Close() // cut off: the answer is never read
	}
	var first, retry struct {
		ID        string `json:"console_user_id"`
		SignInURL string `json:"sign_in_url"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := tn.Do("POST", path, tn.N.AdminToken(), body, "Idempotency-Key", "user-1")
		if r.Status == 201 {
			r.Decode(t, &first)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := tn.Do("POST", path, tn.N.AdminToken(), body, "Idempotency-Key", "user-1")
	r.Decode(t, &retry)
	if r.Status != 201 || retry != first || first.SignInURL == "" {
		t.Fatalf("second retry: %d %+v, want %+v with its one-time sign-in link", r.Status, retry, first)
	}
	var list struct {
		Users []struct {
			ID string `json:"console_user_id"`
		} `json:"console_users"`
	}
	tn.Admin("GET", "/workspaces/"+ws.WorkspaceID+"/console-users", nil).Decode(t, &list)
	if len(list.Users) != 1 || list.Users[0].ID != first.ID {
		t.Fatalf("console users %+v, want only %s", list.Users, first.ID)
	}
}
