package node

import (
	"context"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

func mustStart(t *testing.T, cfg Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := nethttp.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDevSeedsAWorkspaceAndWritesCredentialsPrivately(t *testing.T) {
	dir := t.TempDir()
	n := mustStart(t, Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", FastRaft: true, Dev: true})
	path := filepath.Join(dir, "dev-credentials.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("dev-credentials.json mode = %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Join(dir, "admin-token")); st == nil || st.Mode().Perm() != 0o600 {
		t.Fatal("admin-token must exist with mode 0600")
	}
	b, _ := os.ReadFile(path)
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"admin_token", "api_base", "workspace_id", "site_key", "secret", "sandbox_site_key", "sandbox_secret", "credential", "mobile_secret", "mobile_platform", "mobile_app_id"} {
		if m[k] == "" {
			t.Errorf("dev-credentials.json lacks %s", k)
		}
	}
	cat := n.Store().Catalog()
	ws := cat.Workspaces[m["workspace_id"]]
	if ws == nil {
		t.Fatal("dev workspace not in the catalog")
	}
	site := cat.SiteByKey(m["site_key"])
	if site == nil || site.Environment != "production" || !site.AllowsHost("localhost") {
		t.Fatalf("dev site = %+v", site)
	}
	if sb := cat.SiteByKey(m["sandbox_site_key"]); sb == nil || !sb.Sandbox() {
		t.Fatalf("sandbox site = %+v", sb)
	}
	cred := cat.CredentialByToken(m["credential"])
	if cred == nil || !cred.HasScope("site.verify") || !cred.HasScope("identity.document.verify") || !cred.HasScope("identity.verify") {
		t.Fatalf("dev credential = %+v", cred)
	}
	if app := cat.AppBySecret(m["mobile_secret"]); app == nil || app.Platform != m["mobile_platform"] || app.AppID != m["mobile_app_id"] {
		t.Fatalf("dev mobile app = %+v", app)
	}
}

func TestOpsListener(t *testing.T) {
	n := mustStart(t, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", FastRaft: true})
	ops := "http://" + n.OpsAddr()
	if code, body := get(t, ops+"/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz = %d %s", code, body)
	}
	if code, body := get(t, ops+"/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	get(t, n.APIURL()+"/v1/")
	code, body := get(t, ops+"/metrics")
	for _, want := range []string{`trustd_http_requests_total{operation="getServiceInfo",status="200"} 1`, `trustd_raft_state{state="Leader"} 1`, "trustd_http_request_duration_seconds_bucket", "go_goroutines",
		"trustd_peer_frames_total 0", "trustd_peer_frame_asks_total 0", "trustd_raft_last_contact_seconds 0"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _ := get(t, ops+"/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ = %d", code)
	}
}
