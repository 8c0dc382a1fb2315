package http_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

func brandingPNG(t *testing.T, w, h int, extra ...[2]string) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	out := append([]byte(nil), p[:33]...)
	for _, c := range extra {
		var ch bytes.Buffer
		binary.Write(&ch, binary.BigEndian, uint32(len(c[1])))
		ch.WriteString(c[0] + c[1])
		binary.Write(&ch, binary.BigEndian, crc32.ChecksumIEEE([]byte(c[0]+c[1])))
		out = append(out, ch.Bytes()...)
	}
	return append(out, p[33:]...)
}

func TestBrandingThroughHTTP(t *testing.T) {
	tn := mustStartNode(t)
	var ws, ws2 struct {
		ID string `json:"workspace_id"`
	}
	tn.mustCreate("/workspaces", map[string]any{"name": "brand"}, &ws)
	tn.mustCreate("/workspaces", map[string]any{"name": "brand-2"}, &ws2)
	base := "/workspaces/" + ws.ID + "/branding-profiles"
	var prof struct {
		ID           string `json:"profile_id"`
		CSSVariables string `json:"css_variables"`
		Logo         *struct {
			Version string            `json:"version"`
			URLs    map[string]string `json:"urls"`
		} `json:"logo"`
	}
	if r := tn.admin("POST", base, map[string]any{"name": "Acme", "colors": map[string]string{"primary": "#12345G"}}); r.status != 400 || r.errorCode(t) != "invalid-field" {
		t.Fatalf("bad colour: %d %s", r.status, r.body)
	}
	tn.mustCreate(base, map[string]any{"name": "Acme", "colors": map[string]string{"primary": "#A1B2C3", "text": "#ffffff"}}, &prof)
	if prof.CSSVariables != "--trustd-brand-primary:#a1b2c3;--trustd-brand-text:#ffffff;" || prof.Logo != nil {
		t.Fatalf("created: %+v", prof)
	}
	one := base + "/" + prof.ID

	t.Run("uploads are normalised and refused when not raster", func(t *testing.T) {
		for _, c := range []struct {
			name, image string
			status      int
			code        string
		}{
			{"an SVG", base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)), 415, "branding-logo-format"},
			{"a GIF", base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")), 415, "branding-logo-format"},
			{"not base64", "!!!", 400, "invalid-field"},
		} {
			if r := tn.admin("PUT", one+"/logo", map[string]string{"image": c.image}); r.status != c.status || r.errorCode(t) != c.code {
				t.Errorf("%s: %d %s", c.name, r.status, r.body)
			}
		}
		src := brandingPNG(t, 400, 200, [2]string{"tEXt", "Author\x00Jane Doe, 12 Secret St"})
		r := tn.admin("PUT", one+"/logo", map[string]string{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(src)})
		if r.status != 200 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		r.decode(t, &prof)
		if prof.Logo == nil || prof.Logo.URLs["64"] == "" || prof.Logo.URLs["256"] == "" {
			t.Fatalf("upload answer: %s", r.body)
		}
	})

	t.Run("the logo is public, cacheable and conditional", func(t *testing.T) {
		r := tn.do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil)
		if r.status != 200 || r.header.Get("Content-Type") != "image/png" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
			r.header.Get("Cache-Control") != "public, max-age=86400" || r.header.Get("ETag") == "" {
			t.Fatalf("logo: %d %v", r.status, r.header)
		}
		if bytes.Contains(r.body, []byte("Secret St")) || bytes.Contains(r.body, []byte("tEXt")) {
			t.Fatal("the served logo keeps the upload's metadata")
		}
		img, err := png.Decode(bytes.NewReader(r.body))
		if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 128 {
			t.Fatalf("default rendition: %v %v", err, img)
		}
		etag := r.header.Get("ETag")
		if r := tn.do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil, "If-None-Match", etag); r.status != 304 || len(r.body) != 0 {
			t.Fatalf("If-None-Match: %d %q", r.status, r.body)
		}
		r = tn.do("GET", prof.Logo.URLs["64"], "", nil)
		if r.status != 200 || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.header.Get("ETag") == etag {
			t.Fatalf("versioned 64 px: %d %v", r.status, r.header)
		}
		if img, err := png.Decode(bytes.NewReader(r.body)); err != nil || img.Bounds().Dx() != 64 {
			t.Fatalf("64 px rendition: %v", err)
		}
		if r := tn.do("GET", "/v1/branding/"+prof.ID+"/logo?size=100", "", nil); r.status != 400 || r.errorCode(t) != "branding-logo-size-invalid" {
			t.Fatalf("unknown size: %d %s", r.status, r.body)
		}
		if r := tn.do("GET", "/v1/branding/not-a-uuid/logo", "", nil); r.status != 404 {
			t.Fatalf("bad id: %d", r.status)
		}
	})

	t.Run("another workspace cannot read or change the profile", func(t *testing.T) {
		other := "/workspaces/" + ws2.ID + "/branding-profiles/" + prof.ID
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", other, nil}, {"PATCH", other, map[string]any{"name": "Mine"}}, {"DELETE", other, nil},
			{"PUT", other + "/logo", map[string]string{"image": base64.StdEncoding.EncodeToString(brandingPNG(t, 32, 32))}},
			{"DELETE", other + "/logo", nil},
		} {
			if r := tn.admin(c.method, c.path, c.body); r.status != 404 {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
		if r := tn.admin("GET", one, nil); r.status != 200 || !strings.Contains(string(r.body), `"Acme"`) {
			t.Fatalf("profile changed: %d %s", r.status, r.body)
		}
	})

	t.Run("profiles per workspace are capped", func(t *testing.T) {
		n := 1
		for ; n < 40; n++ {
			r := tn.admin("POST", "/workspaces/"+ws2.ID+"/branding-profiles", map[string]any{"name": "p" + strings.Repeat("x", n)})
			if r.status == 409 {
				break
			}
			if r.status != 201 {
				t.Fatalf("create %d: %d %s", n, r.status, r.body)
			}
		}
		if n != 17 {
			t.Fatalf("the %dth profile was refused, want the 17th", n)
		}
		if r := tn.admin("PATCH", one, map[string]any{"name": "Acme 2"}); r.status != 200 {
			t.Fatalf("rename in the first workspace: %d %s", r.status, r.body)
		}
	})

	t.Run("removing the logo", func(t *testing.T) {
		if r := tn.admin("DELETE", one+"/logo", nil); r.status != 200 {
			t.Fatalf("delete logo: %d %s", r.status, r.body)
		}
		if r := tn.do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil); r.status != 404 || r.errorCode(t) != "branding-logo-not-found" {
			t.Fatalf("after delete: %d %s", r.status, r.body)
		}
		if r := tn.admin("DELETE", one, nil); r.status != 204 {
			t.Fatalf("delete profile: %d", r.status)
		}
	})
}
