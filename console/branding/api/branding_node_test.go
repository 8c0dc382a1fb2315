package api_test

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

	"github.com/trustd/trustd/node/nodetest"
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
	tn := nodetest.Start(t)
	var ws, ws2 struct {
		ID string `json:"workspace_id"`
	}
	tn.MustCreate("/workspaces", map[string]any{"name": "brand"}, &ws)
	tn.MustCreate("/workspaces", map[string]any{"name": "brand-2"}, &ws2)
	base := "/workspaces/" + ws.ID + "/branding-profiles"
	var prof struct {
		ID           string `json:"profile_id"`
		CSSVariables string `json:"css_variables"`
		Logo         *struct {
			Version string            `json:"version"`
			URLs    map[string]string `json:"urls"`
		} `json:"logo"`
	}
	if r := tn.Admin("POST", base, map[string]any{"name": "Acme", "colors": map[string]string{"primary": "#12345G"}}); r.Status != 400 || r.ErrorCode(t) != "invalid-field" {
		t.Fatalf("bad colour: %d %s", r.Status, r.Body)
	}
	tn.MustCreate(base, map[string]any{"name": "Acme", "colors": map[string]string{"primary": "#A1B2C3", "text": "#ffffff"}}, &prof)
	if prof.CSSVariables != "--trustd-brand-primary:#a1b2c3;--trustd-brand-text:#ffffff;" || prof.Logo != nil {
		t.Fatalf("created: %+v", prof)
	}
	one := base + "/" + prof.ID

	t.Run("uploads are normalised and refused when not raster", func(t *testing.T) {
		for _, c := range []struct {
			name, image string
			Status      int
			code        string
		}{
			{"an SVG", base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)), 415, "branding-logo-format"},
			{"a GIF", base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")), 415, "branding-logo-format"},
			{"not base64", "!!!", 400, "invalid-field"},
		} {
			if r := tn.Admin("PUT", one+"/logo", map[string]string{"image": c.image}); r.Status != c.Status || r.ErrorCode(t) != c.code {
				t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
			}
		}
		src := brandingPNG(t, 400, 200, [2]string{"tEXt", "Author\x00Jane Doe, 12 Secret St"})
		r := tn.Admin("PUT", one+"/logo", map[string]string{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(src)})
		if r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		r.Decode(t, &prof)
		if prof.Logo == nil || prof.Logo.URLs["64"] == "" || prof.Logo.URLs["256"] == "" {
			t.Fatalf("upload answer: %s", r.Body)
		}
	})

	t.Run("the logo is public, cacheable and conditional", func(t *testing.T) {
		r := tn.Do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil)
		if r.Status != 200 || r.Header.Get("Content-Type") != "image/png" || r.Header.Get("X-Content-Type-Options") != "nosniff" ||
			r.Header.Get("Cache-Control") != "public, max-age=86400" || r.Header.Get("ETag") == "" {
			t.Fatalf("logo: %d %v", r.Status, r.Header)
		}
		if bytes.Contains(r.Body, []byte("Secret St")) || bytes.Contains(r.Body, []byte("tEXt")) {
			t.Fatal("the served logo keeps the upload's metadata")
		}
		img, err := png.Decode(bytes.NewReader(r.Body))
		if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 128 {
			t.Fatalf("default rendition: %v %v", err, img)
		}
		etag := r.Header.Get("ETag")
		if r := tn.Do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil, "If-None-Match", etag); r.Status != 304 || len(r.Body) != 0 {
			t.Fatalf("If-None-Match: %d %q", r.Status, r.Body)
		}
		r = tn.Do("GET", prof.Logo.URLs["64"], "", nil)
		if r.Status != 200 || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("ETag") == etag {
			t.Fatalf("versioned 64 px: %d %v", r.Status, r.Header)
		}
		if img, err := png.Decode(bytes.NewReader(r.Body)); err != nil || img.Bounds().Dx() != 64 {
			t.Fatalf("64 px rendition: %v", err)
		}
		if r := tn.Do("GET", "/v1/branding/"+prof.ID+"/logo?size=100", "", nil); r.Status != 400 || r.ErrorCode(t) != "branding-logo-size-invalid" {
			t.Fatalf("unknown size: %d %s", r.Status, r.Body)
		}
		if r := tn.Do("GET", "/v1/branding/not-a-uuid/logo", "", nil); r.Status != 404 {
			t.Fatalf("bad id: %d", r.Status)
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
			if r := tn.Admin(c.method, c.path, c.body); r.Status != 404 {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
			}
		}
		if r := tn.Admin("GET", one, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"Acme"`) {
			t.Fatalf("profile changed: %d %s", r.Status, r.Body)
		}
	})

	t.Run("profiles per workspace are capped", func(t *testing.T) {
		n := 1
		for ; n < 40; n++ {
			r := tn.Admin("POST", "/workspaces/"+ws2.ID+"/branding-profiles", map[string]any{"name": "p" + strings.Repeat("x", n)})
			if r.Status == 409 {
				break
			}
			if r.Status != 201 {
				t.Fatalf("create %d: %d %s", n, r.Status, r.Body)
			}
		}
		if n != 17 {
			t.Fatalf("the %dth profile was refused, want the 17th", n)
		}
		if r := tn.Admin("PATCH", one, map[string]any{"name": "Acme 2"}); r.Status != 200 {
			t.Fatalf("rename in the first workspace: %d %s", r.Status, r.Body)
		}
	})

	t.Run("removing the logo", func(t *testing.T) {
		if r := tn.Admin("DELETE", one+"/logo", nil); r.Status != 200 {
			t.Fatalf("delete logo: %d %s", r.Status, r.Body)
		}
		if r := tn.Do("GET", "/v1/branding/"+prof.ID+"/logo", "", nil); r.Status != 404 || r.ErrorCode(t) != "branding-logo-not-found" {
			t.Fatalf("after delete: %d %s", r.Status, r.Body)
		}
		if r := tn.Admin("DELETE", one, nil); r.Status != 204 {
			t.Fatalf("delete profile: %d", r.Status)
		}
	})
}
