package systemtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node"
)

// TestBrandingInBrowser: a dev site names a branding profile (colours and
// a logo); in headless Chromium the widget on a customer page with a strict
// CSP, the hosted identity page and a journey's person page show the
// profile's colours (computed styles) and its logo (loaded, alt text =
// the profile name), with no CSP violation. Screenshots go to artifacts.
func TestBrandingInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	})
	waitFor(t, 20*time.Second, "the dev workspace is seeded", func() bool { return n.Dev() != nil })
	dev := n.Dev()
	admin := n.APIURL() + "/admin/v1/workspaces/" + dev.WorkspaceID
	call := func(method, url string, body any, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		code, resp, err := do(method, url, dev.AdminToken, b)
		if err != nil || code/100 != 2 {
			t.Fatalf("%s %s: %d %s %v", method, url, code, resp, err)
		}
		if out != nil {
			if err := json.Unmarshal(resp, out, json.RejectUnknownMembers(false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var prof struct {
		ID string `json:"profile_id"`
	}
	call("POST", admin+"/branding-profiles", map[string]any{"name": "Acme Bank",
		"colors": map[string]string{"primary": "#c0ffee", "background": "#102030", "text": "#fafafa"}}, &prof)
	// a two-colour 160×48 logo
	img := image.NewNRGBA(image.Rect(0, 0, 160, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 160; x++ {
			c := color.NRGBA{R: 0xc0, G: 0xff, B: 0xee, A: 255}
			if x > 48 {
				c = color.NRGBA{R: 0xfa, G: 0xfa, B: 0xfa, A: 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var logo bytes.Buffer
	if err := png.Encode(&logo, img); err != nil {
		t.Fatal(err)
	}
	call("PUT", admin+"/branding-profiles/"+prof.ID+"/logo", map[string]string{"image": base64.StdEncoding.EncodeToString(logo.Bytes())}, nil)
	var sites struct {
		Sites []struct {
			ID      string `json:"site_id"`
			SiteKey string `json:"site_key"`
		} `json:"sites"`
	}
	call("GET", admin+"/sites", nil, &sites)
	for _, s := range sites.Sites {
		if s.SiteKey == dev.SiteKey {
			call("PATCH", admin+"/sites/"+s.ID, map[string]any{"branding_profile_id": prof.ID}, nil)
		}
	}
	call("PUT", admin+"/journeys/signin", map[string]any{"name": "Sign in", "method": "human_verification"}, nil)
	runNodeTest(t, nodeBin, "branding.test.mjs", "TRUSTD_API="+n.APIURL()+"/v1", "TRUSTD_SITEKEY="+dev.SiteKey,
		"TRUSTD_SECRET="+dev.Secret, "TRUSTD_CREDENTIAL="+dev.Credential, "TRUSTD_PROFILE_NAME=Acme Bank")
}
