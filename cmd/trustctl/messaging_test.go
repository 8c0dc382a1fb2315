package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrustctlMessagingAndBranding(t *testing.T) {
	n, ctl, must := startCtlNode(t)
	must("workspaces", "create", "--name", "acme")
	var ws string
	for _, w := range n.Store().Catalog().Workspaces {
		ws = w.ID
	}
	if _, err := ctl("messaging", "policy", "--workspace", ws, "--block-seconds", "5"); err == nil || !strings.Contains(err.Error(), "messaging-policy-invalid") {
		t.Fatalf("a bad policy: %v", err)
	}
	out := must("--json", "messaging", "policy", "--workspace", ws, "--prefix-limit", "7", "--allowed-countries", "FR,GB")
	if !strings.Contains(out, `"prefix_limit": 7`) || !strings.Contains(out, `"GB"`) {
		t.Fatalf("policy printed %s", out)
	}
	if out = must("--json", "messaging", "rotate-secret", "--workspace", ws); !strings.Contains(out, `"secret": "msk_`) {
		t.Fatalf("rotate printed %s", out)
	}
	if s := n.Store().Catalog().Messaging[ws]; s == nil || len(s.Keys) != 1 || s.Policy.PrefixLimit != 7 {
		t.Fatalf("stored settings: %+v", s)
	}
	must("messaging", "delete", "--workspace", ws)

	must("branding-profiles", "create", "--workspace", ws, "--name", "Acme", "--colors", `{"primary":"#1A73E8"}`)
	var id string
	for _, p := range n.Store().Catalog().BrandingProfiles {
		id = p.ID
	}
	if id == "" || n.Store().Catalog().BrandingProfiles[id].Colors.Primary != "#1a73e8" {
		t.Fatal("profile not stored")
	}
	logo := filepath.Join(t.TempDir(), "logo.png")
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewNRGBA(image.Rect(0, 0, 120, 40))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logo, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out = must("--json", "branding-profiles", "logo", id, "--workspace", ws, "--in", logo); !strings.Contains(out, `"version"`) {
		t.Fatalf("logo printed %s", out)
	}
	if p := n.Store().Catalog().BrandingProfiles[id]; len(p.Logos) != 2 {
		t.Fatalf("renditions: %d", len(p.Logos))
	}
	must("branding-profiles", "remove-logo", id, "--workspace", ws)
	if out = must("branding-profiles", "list", "--workspace", ws); !strings.Contains(out, "Acme") {
		t.Fatalf("list:\n%s", out)
	}
	// a site shows the profile (the README's command)
	must("sites", "create", "--workspace", ws, "--name", "shop", "--hostnames", "shop.example", "--branding-profile-id", id)
	var site string
	for _, s := range n.Store().Catalog().Sites {
		if s.WorkspaceID == ws {
			site = s.ID
		}
	}
	if n.Store().Catalog().Sites[site].BrandingProfileID != id {
		t.Fatal("the site does not name the profile")
	}
	if _, err := ctl("branding-profiles", "delete", id, "--workspace", ws); err == nil {
		t.Fatal("a profile in use was deleted")
	}
	must("sites", "update", site, "--workspace", ws, "--branding-profile-id", "")
	if n.Store().Catalog().Sites[site].BrandingProfileID != "" {
		t.Fatal("the site still names the profile")
	}
	must("branding-profiles", "delete", id, "--workspace", ws)
}
