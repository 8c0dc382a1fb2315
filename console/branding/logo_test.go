package branding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/trustd/trustd/platform/catalog"
)

// logoImage is a w×h picture with a gradient and a transparent corner.
func logoImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			a := uint8(255)
			if x < w/8 && y < h/8 {
				a = 0
			}
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x * 255 / w), G: uint8(y * 255 / h), B: 128, A: a})
		}
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// chunk encodes one PNG chunk with its CRC.
func chunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	return b.Bytes()
}

// withChunks inserts ancillary chunks right after IHDR (8-byte signature
// + 25-byte IHDR chunk).
func withChunks(p []byte, chunks ...[]byte) []byte {
	out := append([]byte(nil), p[:33]...)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, p[33:]...)
}

// chunkTypes lists the chunk types of a PNG.
func chunkTypes(p []byte) []string {
	var out []string
	for i := 8; i+8 <= len(p); {
		n := int(binary.BigEndian.Uint32(p[i:]))
		out = append(out, string(p[i+4:i+8]))
		i += 12 + n
	}
	return out
}

// bombHeader is a valid PNG signature and IHDR claiming w×h pixels,
// followed by a tiny IDAT: decoding it would allocate w×h×4 bytes.
func bombHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(out, chunk("IEND", nil)...)
}

func TestNormalizeLogoRefusals(t *testing.T) {
	var g bytes.Buffer
	pal := image.NewPaletted(image.Rect(0, 0, 32, 32), color.Palette{color.Black, color.White})
	if err := gif.Encode(&g, pal, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"an empty upload", nil, ErrLogoMissing},
		{"an SVG", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), ErrLogoFormat},
		{"a GIF", g.Bytes(), ErrLogoFormat},
		{"HTML", []byte("<!doctype html><p>hi"), ErrLogoFormat},
		{"a decompression bomb header", bombHeader(100000, 100000), ErrLogoTooLarge},
		{"a header just over the pixel limit", bombHeader(4096, 4096), ErrLogoTooLarge},
		{"a side over the limit", bombHeader(5000, 100), ErrLogoTooLarge},
		{"an upload over 2 MiB", append(encodePNG(t, logoImage(32, 32)), make([]byte, MaxUploadBytes)...), ErrLogoTooLarge},
		{"a tiny image", encodePNG(t, logoImage(8, 64)), ErrLogoTooSmall},
		{"a truncated PNG", encodePNG(t, logoImage(64, 64))[:60], ErrLogoMalformed},
		{"an animated PNG", withChunks(encodePNG(t, logoImage(32, 32)), chunk("acTL", make([]byte, 8))), ErrLogoAnimated},
		{"an animated WebP", []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02\x00\x00\x00"), ErrLogoAnimated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := NormalizeLogo(tt.data); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNormalizeLogoStripsMetadataAndResizes(t *testing.T) {
	src := withChunks(encodePNG(t, logoImage(600, 300)),
		chunk("tEXt", []byte("Comment\x00secret author data")),
		chunk("eXIf", []byte("MM\x00*\x00\x00\x00\x08\x00\x00")),
		chunk("iTXt", []byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00<x:xmpmeta/>")))
	if !bytes.Contains(src, []byte("secret author data")) {
		t.Fatal("fixture lacks its metadata")
	}
	logos, version, err := NormalizeLogo(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(logos) != len(Sizes) || len(version) != 32 {
		t.Fatalf("%d renditions, version %q", len(logos), version)
	}
	for i, l := range logos {
		if l.Size != Sizes[i] {
			t.Fatalf("rendition %d is size %d", i, l.Size)
		}
		for _, typ := range chunkTypes(l.PNG) {
			if typ != "IHDR" && typ != "IDAT" && typ != "IEND" {
				t.Errorf("size %d keeps chunk %s", l.Size, typ)
			}
		}
		if bytes.Contains(l.PNG, []byte("secret author data")) || bytes.Contains(l.PNG, []byte("xmpmeta")) {
			t.Errorf("size %d keeps the metadata", l.Size)
		}
		img, err := png.Decode(bytes.NewReader(l.PNG))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != l.Size || b.Dy() != l.Size/2 {
			t.Errorf("size %d is %v, want %d×%d (aspect kept)", l.Size, b, l.Size, l.Size/2)
		}
		// The transparent corner survives.
		if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
			t.Errorf("size %d lost transparency", l.Size)
		}
	}
	// The same pixels give the same version; other pixels another.
	if _, v2, _ := NormalizeLogo(encodePNG(t, logoImage(600, 300))); v2 != version {
		t.Errorf("same pixels, version %s then %s", version, v2)
	}
	if _, v3, _ := NormalizeLogo(encodePNG(t, logoImage(300, 600))); v3 == version {
		t.Error("other pixels kept the version")
	}
}

func TestNormalizeLogoAcceptsJPEG(t *testing.T) {
	var j bytes.Buffer
	// A JPEG with an APP1 (EXIF-like) segment after SOI.
	if err := jpeg.Encode(&j, logoImage(100, 200), nil); err != nil {
		t.Fatal(err)
	}
	app1 := append([]byte{0xFF, 0xE1, 0x00, 0x14}, []byte("Exif\x00\x00GPS 51.5N 0.1W")...)
	src := append(append([]byte{0xFF, 0xD8}, app1...), j.Bytes()[2:]...)
	logos, _, err := NormalizeLogo(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logos {
		if bytes.Contains(l.PNG, []byte("GPS")) {
			t.Error("EXIF survived")
		}
		img, _ := png.Decode(bytes.NewReader(l.PNG))
		if b := img.Bounds(); b.Dy() != l.Size || b.Dx() != l.Size/2 {
			t.Errorf("size %d is %v", l.Size, b)
		}
	}
}

func TestNoiseOverTheStoredLimitIsRefused(t *testing.T) {
	// Random pixels do not compress: the 256 px rendition alone is about
	// 256 KiB, over catalog.MaxBrandingLogoBytes.
	img := image.NewNRGBA(image.Rect(0, 0, 512, 512))
	x := uint32(1)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = uint8(x)
	}
	if _, _, err := NormalizeLogo(encodePNG(t, img)); !errors.Is(err, ErrLogoTooLarge) || !strings.Contains(err.Error(), "normalised") {
		t.Fatalf("got %v", err)
	}
	_ = catalog.MaxBrandingLogoBytes
}

func TestColorsAndLookup(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"#A1b2C3", "#a1b2c3", true}, {"", "", true}, {"a1b2c3", "", false}, {"#a1b2c", "", false},
		{"#a1b2cz", "", false}, {"#fff", "", false}, {"#a1b2c3;}", "", false}, {"red", "", false},
	}
	for _, tt := range tests {
		got, err := NormalizeColor("colors.primary", tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: %q %v", tt.in, got, err)
		}
	}
	cat := catalog.Empty()
	cat.BrandingProfiles = map[string]*catalog.BrandingProfile{"p1": {ID: "p1", WorkspaceID: "w1", Name: "Acme",
		Colors: catalog.BrandingColors{Primary: "#112233", Text: "#ffffff"}, LogoVersion: "abc"}}
	if _, ok := Lookup(cat, "w2", "p1"); ok {
		t.Fatal("another workspace found the profile")
	}
	p, ok := Lookup(cat, "w1", "p1")
	if !ok || p.CSSVariables() != "--trustd-brand-primary:#112233;--trustd-brand-text:#ffffff;" {
		t.Fatalf("%v %q", ok, p.CSSVariables())
	}
	if p.LogoPath(64) != "/v1/branding/p1/logo?v=abc&size=64" {
		t.Fatalf("logo path %q", p.LogoPath(64))
	}
	for _, n := range []string{"", strings.Repeat("x", 65), "a\nb"} {
		if ValidName(n) == nil {
			t.Errorf("name %q accepted", n)
		}
	}
}
