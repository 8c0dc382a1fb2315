package branding

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// WebP uploads decode through golang.org/x/image/webp: a lossy and a
// lossless file made by cwebp (Debian package webp), skipped without it.
func TestNormalizeLogoAcceptsWebP(t *testing.T) {
	if _, err := exec.LookPath("cwebp"); err != nil {
		t.Skip("webp (cwebp) not installed")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.png")
	if err := os.WriteFile(in, encodePNG(t, logoImage(300, 150)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-q", "70"}, {"-lossless"}} {
		out := filepath.Join(dir, "out.webp")
		if b, err := exec.Command("cwebp", append(args, "-quiet", in, "-o", out)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		src, _ := os.ReadFile(out)
		logos, _, err := NormalizeLogo(src)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		img, err := png.Decode(bytes.NewReader(logos[1].PNG))
		if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 128 {
			t.Fatalf("%v: %v %v", args, err, img.Bounds())
		}
	}
}
