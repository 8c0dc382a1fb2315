package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
)

// DevCredentials is what --dev prints and writes to
// <data-dir>/dev-credentials.json (mode 0600).
type DevCredentials struct {
	AdminToken     string `json:"admin_token"`
	APIBase        string `json:"api_base"`
	WorkspaceID    string `json:"workspace_id"`
	SiteKey        string `json:"site_key"`
	Secret         string `json:"secret"`
	SandboxSiteKey string `json:"sandbox_site_key"`
	SandboxSecret  string `json:"sandbox_secret"`
	Credential     string `json:"credential"`
	MobileSecret   string `json:"mobile_secret"`
	MobilePlatform string `json:"mobile_platform"`
	MobileAppID    string `json:"mobile_app_id"`
}

// seedDev creates, on first start only, a workspace with a production
// site for localhost, a sandbox site, a scoped credential and a mobile
// app. It goes through the node's own admin API, so the dev workspace is
// made exactly as an operator would make it. Later starts reuse the file.
func (n *Node) seedDev(ctx context.Context) (*DevCredentials, error) {
	path := filepath.Join(n.cfg.DataDir, "dev-credentials.json")
	if b, err := os.ReadFile(path); err == nil {
		var d DevCredentials
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if _, ok := n.store.Catalog().Workspaces[d.WorkspaceID]; ok {
			d.APIBase = n.publicBase() + "/v1"
			return &d, nil
		}
	}
	d := &DevCredentials{AdminToken: n.adminTok, APIBase: n.publicBase() + "/v1", MobilePlatform: "android", MobileAppID: "com.example.trustd.dev"}
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := n.adminCall(ctx, "/admin/v1/workspaces", map[string]any{"name": "dev"}, &ws); err != nil {
		return nil, err
	}
	d.WorkspaceID = ws.WorkspaceID
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site, sandbox struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	if err := n.adminCall(ctx, base+"/sites", map[string]any{"name": "localhost", "hostnames": []string{"localhost", "127.0.0.1"},
		"environment": "production", "challenge_mode": "checkbox"}, &site); err != nil {
		return nil, err
	}
	if err := n.adminCall(ctx, base+"/sites", map[string]any{"name": "sandbox", "hostnames": []string{"localhost", "127.0.0.1"},
		"environment": "sandbox"}, &sandbox); err != nil {
		return nil, err
	}
	d.SiteKey, d.Secret, d.SandboxSiteKey, d.SandboxSecret = site.SiteKey, site.Secret, sandbox.SiteKey, sandbox.Secret
	var cred struct {
		Credential string `json:"credential"`
	}
	if err := n.adminCall(ctx, base+"/credentials", map[string]any{"name": "dev server",
		"scopes": []string{"site.verify", "identity.document.verify", "identity.verify"}}, &cred); err != nil {
		return nil, err
	}
	d.Credential = cred.Credential
	var app struct {
		MobileSecret string `json:"mobile_secret"`
	}
	if err := n.adminCall(ctx, base+"/mobile-apps", map[string]any{"name": "dev app", "platform": d.MobilePlatform,
		"app_id": d.MobileAppID}, &app); err != nil {
		return nil, err
	}
	d.MobileSecret = app.MobileSecret
	b, _ := json.Marshal(d, json.Deterministic(true))
	if err := writeSecretFile(path, string(b)+"\n"); err != nil {
		return nil, err
	}
	return d, nil
}

// publicBase is the URL the node announces to clients (links, the
// person pages of journeys, the WebAuthn origin, the dev banner):
// --base-url, or else http://<the API listener>. A --dev node on a
// loopback address announces it as localhost: browsers treat localhost as
// a secure context and WebAuthn accepts it as a relying party id, which an
// IP address never is, so the quick start's own journeys (passkeys) work.
// The dev sites list both localhost and 127.0.0.1.
func (n *Node) publicBase() string {
	if n.cfg.BaseURL != "" {
		return strings.TrimRight(n.cfg.BaseURL, "/")
	}
	return defaultBaseURL(n.cfg.Dev, n.apiLn.Addr())
}

// defaultBaseURL is the announced URL of a node without --base-url.
func defaultBaseURL(dev bool, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if dev && ok && tcp.IP.IsLoopback() {
		return "http://" + net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return "http://" + addr.String()
}

// demoSite gives the demo page the dev site's key and secret once seeded.
func (n *Node) demoSite() (siteKey, secret string) {
	if d := n.dev.Load(); d != nil {
		return d.SiteKey, d.Secret
	}
	return "", ""
}

func (n *Node) adminCall(ctx context.Context, path string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := nethttp.NewRequestWithContext(ctx, "POST", n.APIURL()+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+n.adminTok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, rb)
	}
	return json.Unmarshal(rb, out, json.RejectUnknownMembers(false))
}
