package documents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func pngOf(g image.Image) []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, g)
	return b.Bytes()
}

func TestDecodeImageRefusals(t *testing.T) {
	var bomb bytes.Buffer
	_ = png.Encode(&bomb, image.NewGray(image.Rect(0, 0, 6000, 6000))) // 36 Mpx of zeros, ~40 KB
	full := pngOf(image.NewGray(image.Rect(0, 0, 800, 600)))
	apng := append([]byte(nil), full[:33]...) // signature + IHDR
	actl := []byte{0, 0, 0, 8, 'a', 'c', 'T', 'L', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}
	apng = append(append(apng, actl...), full[33:]...)
	webpAnim := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x02\x00\x00\x00")
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrImageMissing},
		{"text", []byte("definitely not an image"), ErrImageFormat},
		{"gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00"), ErrImageFormat},
		{"bomb", bomb.Bytes(), ErrImageTooLarge},
		{"truncated", full[:len(full)/2], ErrImageMalformed},
		{"header only", full[:40], ErrImageMalformed},
		{"apng", apng, ErrImageAnimated},
		{"animated webp", webpAnim, ErrImageAnimated},
		{"tiny", pngOf(image.NewGray(image.Rect(0, 0, 50, 900))), ErrImageTooSmall},
		{"oversize bytes", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, MaxImageBytes)...), ErrImageTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeImage(tc.in)
			if err == nil || !errorsIs(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// jpegWithOrientation adds an APP1 Exif segment with Orientation o.
func jpegWithOrientation(g image.Image, o uint16) []byte {
	var b bytes.Buffer
	_ = jpeg.Encode(&b, g, &jpeg.Options{Quality: 95})
	tiff := []byte("MM\x00\x2a\x00\x00\x00\x08")
	ifd := make([]byte, 2+12+4)
	binary.BigEndian.PutUint16(ifd[0:], 1)
	binary.BigEndian.PutUint16(ifd[2:], 0x0112)
	binary.BigEndian.PutUint16(ifd[4:], 3)
	binary.BigEndian.PutUint32(ifd[6:], 1)
	binary.BigEndian.PutUint16(ifd[10:], o)
	seg := append([]byte("Exif\x00\x00"), append(tiff, ifd...)...)
	app1 := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(app1[2:], uint16(len(seg)+2))
	out := append([]byte{0xFF, 0xD8}, app1...)
	out = append(out, seg...)
	return append(out, b.Bytes()[2:]...)
}

func TestEXIFOrientation(t *testing.T) {
	// 600×400, dark left edge: orientation 6 (rotate 90° clockwise to view)
	// must give a 400×600 image whose dark edge is on top.
	g := image.NewGray(image.Rect(0, 0, 600, 400))
	for i := range g.Pix {
		g.Pix[i] = 230
	}
	for y := 0; y < 400; y++ {
		for x := 0; x < 60; x++ {
			g.Pix[y*600+x] = 10
		}
	}
	out, err := DecodeImage(jpegWithOrientation(g, 6))
	if err != nil {
		t.Fatal(err)
	}
	if out.Rect.Dx() != 400 || out.Rect.Dy() != 600 || out.Pix[10*400+200] > 60 || out.Pix[500*400+200] < 180 {
		t.Fatalf("%v top=%d bottom=%d", out.Rect, out.Pix[10*400+200], out.Pix[500*400+200])
	}
	if o := exifOrientation(jpegWithOrientation(g, 3)); o != 3 {
		t.Fatal(o)
	}
}

func FuzzDecodeImage(f *testing.F) {
	f.Add(pngOf(image.NewGray(image.Rect(0, 0, 330, 330))))
	f.Add(jpegWithOrientation(image.NewGray(image.Rect(0, 0, 330, 330)), 8))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeImage(b)
	})
}

func TestAAMVAFromZXingWriter(t *testing.T) {
	if _, err := exec.LookPath("ZXingWriter"); err != nil {
		t.Skip("zxing-cpp-tools not installed")
	}
	payload := "@\n\x1e\rANSI 636014040002DL00410278ZC03190024DLDAQY1234567\nDCSDOE\nDACJANE\nDBB01151990\nDBA01152030\nDBD01152022\nDAJCA\nDCGUSA\r"
	out := filepath.Join(t.TempDir(), "b.png")
	if err := exec.Command("ZXingWriter", "-size", "1200x400", "PDF417", payload, out).Run(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	text, ok := ReadPDF417(img)
	if !ok {
		t.Fatal("zxinggo did not read the ZXingWriter PDF417")
	}
	a, ok := ParseAAMVA(text)
	if !ok || a.Number != "Y1234567" || a.FamilyName != "DOE" || a.FirstName != "JANE" || a.Country != "USA" || a.Jurisdiction != "CA" ||
		!a.BirthDate.Equal(time.Date(1990, 1, 15, 0, 0, 0, 0, time.UTC)) || !a.ExpiryDate.Equal(time.Date(2030, 1, 15, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v", a)
	}
	if _, ok := ParseAAMVA("hello"); ok {
		t.Fatal("non-AAMVA accepted")
	}
}

func TestPortraitDetection(t *testing.T) {
	// pigo's own sample (MIT) from the module cache: a real face.
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(filepath.Join(string(bytes.TrimSpace(out)), "github.com/esimov/pigo@v1.4.6/testdata/sample.jpg"))
	if err != nil {
		t.Skip("pigo module not in the cache")
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	g := toGray(img)
	if f := DetectFaces(g, g.Rect); len(f) == 0 {
		t.Fatal("no face found in pigo's sample")
	}
	blank := image.NewGray(image.Rect(0, 0, 400, 400))
	if f := DetectFaces(blank, blank.Rect); len(f) != 0 {
		t.Fatalf("faces on a blank page: %v", f)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// WebP decodes through golang.org/x/image/webp: a lossy and a lossless file
// made by Debian's cwebp (package webp).
func TestDecodeWebP(t *testing.T) {
	if _, err := exec.LookPath("cwebp"); err != nil {
		t.Skip("webp (cwebp) not installed")
	}
	g := image.NewGray(image.Rect(0, 0, 640, 400))
	for i := range g.Pix {
		g.Pix[i] = uint8(i % 251)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.png")
	if err := os.WriteFile(in, pngOf(g), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-q", "70"}, {"-lossless"}} {
		out := filepath.Join(dir, "out.webp")
		if b, err := exec.Command("cwebp", append(args, in, "-o", out)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		b, _ := os.ReadFile(out)
		img, err := DecodeImage(b)
		if err != nil || img.Rect.Dx() != 640 || img.Rect.Dy() != 400 {
			t.Fatalf("%v: %v %v", args, err, img)
		}
	}
}
