package documents

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Synthetic fixtures, generated in the tests: TD3 data pages rendered with
// OCR-B Sharp (Debian fonts-ocr-b; OCRB.otf loses '8' and '<' in x/image's
// CFF parser) from ICAO-style holders, plus the capture defects the quality
// checks must catch.

const ocrbPath = "/usr/share/fonts/opentype/ocr-b/OCRBS.otf"

func loadOCRB(t testing.TB) *opentype.Font {
	t.Helper()
	b, err := os.ReadFile(ocrbPath)
	if err != nil {
		t.Skipf("OCR-B font not installed (apt-get install fonts-ocr-b): %v", err)
	}
	f, err := opentype.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type holder struct {
	surname, given, number, nat, dob, sex, expiry, optional string
}

func cd(s string) string { d, _ := CheckDigit(s); return string(d) }

func pad(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s + strings.Repeat("<", n-len(s))
}

// td3 builds the two lines of a TD3 MRZ with correct check digits.
func (h holder) td3(issuer string) []string {
	l1 := pad("P<"+issuer+strings.ReplaceAll(h.surname, " ", "<")+"<<"+strings.ReplaceAll(h.given, " ", "<"), 44)
	num := pad(h.number, 9)
	opt := pad(h.optional, 14)
	optCD := cd(opt)
	if strings.Trim(opt, "<") == "" {
		optCD = "<"
	}
	l2 := num + cd(num) + h.nat + h.dob + cd(h.dob) + h.sex + h.expiry + cd(h.expiry) + opt + optCD
	l2 += cd(l2[0:10] + l2[13:20] + l2[21:43])
	return []string{l1, l2}
}

var surnames = []string{"ERIKSSON", "MUSTERMANN", "GARCIA", "NAKAMURA", "OKAFOR", "DUBOIS", "KOWALSKI", "SILVA", "OBRIEN", "HASSAN"}
var givens = []string{"ANNA MARIA", "JONAS", "LUCIA", "KENJI", "CHIDI", "MARIE", "PIOTR", "JOAO", "AOIFE", "LAYLA"}

func randomHolder(r *rand.Rand) holder {
	const al = "ABCDEFGHJKLMNPRTUVWXY0123456789"
	num := make([]byte, 9)
	for i := range num {
		num[i] = al[r.Intn(len(al))]
	}
	return holder{surname: surnames[r.Intn(len(surnames))], given: givens[r.Intn(len(givens))], number: string(num),
		nat: "UTO", dob: fmt.Sprintf("%02d%02d%02d", 50+r.Intn(49), 1+r.Intn(12), 1+r.Intn(28)),
		sex: []string{"F", "M", "<"}[r.Intn(3)], expiry: fmt.Sprintf("%02d%02d%02d", 30+r.Intn(9), 1+r.Intn(12), 1+r.Intn(28)),
		optional: fmt.Sprintf("ZE%07d", r.Intn(10000000))}
}

// renderTD3 draws a 1600×1126 data page: guilloche background, portrait
// box, visual-zone text, the MRZ in OCR-B at the bottom.
func renderTD3(t testing.TB, f *opentype.Font, lines []string, r *rand.Rand) *image.Gray {
	const W, H = 1600, 1126
	g := image.NewGray(image.Rect(0, 0, W, H))
	ph := r.Float64() * 6
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			v := 218 + 10*math.Sin(float64(x)/23+ph+3*math.Sin(float64(y)/71))
			g.Pix[y*W+x] = uint8(v)
		}
	}
	// portrait: a grey box with a darker oval
	for y := 190; y < 740; y++ {
		for x := 60; x < 500; x++ {
			v := uint8(170)
			dx, dy := float64(x-280)/150, float64(y-430)/200
			if dx*dx+dy*dy < 1 {
				v = 120
			}
			g.Pix[y*W+x] = v
		}
	}
	face := func(size float64) font.Face {
		fc, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
		if err != nil {
			t.Fatal(err)
		}
		return fc
	}
	draw := func(fc font.Face, s string, x, y int) {
		d := &font.Drawer{Dst: g, Src: image.NewUniform(colorGray(25)), Face: fc, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}
	small := face(34)
	for i, s := range []string{"PASSPORT   UTOPIA", "SURNAME  " + strings.Split(lines[0][5:], "<<")[0], "GIVEN NAMES  DEMO", "NATIONALITY  UTOPIAN", "DATE OF EXPIRY  " + lines[1][21:27]} {
		draw(small, s, 560, 230+i*90)
	}
	// MRZ: fit the 44 characters to 90% of the width.
	size := 40.0
	for ; size < 90; size += 1 {
		if font.MeasureString(face(size), lines[0]).Ceil() > W*90/100 {
			break
		}
	}
	mf := face(size - 1)
	draw(mf, lines[0], W*5/100, H-150)
	draw(mf, lines[1], W*5/100, H-70)
	return g
}

type grayColor uint8

func colorGray(v uint8) grayColorT { return grayColorT{v} }

type grayColorT struct{ Y uint8 }

func (c grayColorT) RGBA() (r, g, b, a uint32) {
	y := uint32(c.Y) | uint32(c.Y)<<8
	return y, y, y, 0xffff
}

// ---- defects ----

func boxBlur(g *image.Gray, r int) *image.Gray {
	out := image.NewGray(g.Rect)
	copy(out.Pix, g.Pix)
	w, h := g.Rect.Dx(), g.Rect.Dy()
	tmp := make([]uint8, len(g.Pix))
	for pass := 0; pass < 3; pass++ {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				s, n := 0, 0
				for dx := -r; dx <= r; dx++ {
					if xx := x + dx; xx >= 0 && xx < w {
						s += int(out.Pix[y*w+xx])
						n++
					}
				}
				tmp[y*w+x] = uint8(s / n)
			}
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				s, n := 0, 0
				for dy := -r; dy <= r; dy++ {
					if yy := y + dy; yy >= 0 && yy < h {
						s += int(tmp[yy*w+x])
						n++
					}
				}
				out.Pix[y*w+x] = uint8(s / n)
			}
		}
	}
	return out
}

// addGlare adds an elliptical highlight centred at (cx, cy), clipped at 255.
func addGlare(g *image.Gray, cx, cy, rx, ry int) *image.Gray {
	out := image.NewGray(g.Rect)
	copy(out.Pix, g.Pix)
	w := g.Rect.Dx()
	for y := max(cy-ry, 0); y < min(cy+ry, g.Rect.Dy()); y++ {
		for x := max(cx-rx, 0); x < min(cx+rx, w); x++ {
			dx, dy := float64(x-cx)/float64(rx), float64(y-cy)/float64(ry)
			d := dx*dx + dy*dy
			if d < 1 {
				v := int(out.Pix[y*w+x]) + int(400*(1-d))
				out.Pix[y*w+x] = uint8(min(v, 255))
			}
		}
	}
	return out
}

func scale(g *image.Gray, w int) *image.Gray {
	h := g.Rect.Dy() * w / g.Rect.Dx()
	out := image.NewGray(image.Rect(0, 0, w, h))
	xdraw.CatmullRom.Scale(out, out.Rect, g, g.Rect, xdraw.Src, nil)
	return out
}

func noise(g *image.Gray, sigma float64, r *rand.Rand) *image.Gray {
	out := image.NewGray(g.Rect)
	for i, p := range g.Pix {
		v := float64(p) + r.NormFloat64()*sigma
		out.Pix[i] = uint8(math.Max(0, math.Min(255, v)))
	}
	return out
}

func rotate(g *image.Gray, deg float64) *image.Gray {
	out := image.NewGray(g.Rect)
	w, h := g.Rect.Dx(), g.Rect.Dy()
	s, c := math.Sincos(deg * math.Pi / 180)
	cx, cy := float64(w)/2, float64(h)/2
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)-cx, float64(y)-cy
			sx, sy := int(c*fx+s*fy+cx), int(-s*fx+c*fy+cy)
			v := uint8(200)
			if sx >= 0 && sy >= 0 && sx < w && sy < h {
				v = g.Pix[sy*w+sx]
			}
			out.Pix[y*w+x] = v
		}
	}
	return out
}

func encJPEG(t testing.TB, g image.Image, q int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, g, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encPNG(t testing.TB, g image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// variant is one defect applied to a clean page, encoded for upload.
type variant struct {
	name   string
	defect bool // a capture defect: verify would be wrong unless the read is exact
	make   func(t testing.TB, g *image.Gray, r *rand.Rand) []byte
}

var variants = []variant{
	{"clean", false, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, g) }},
	{"blur_r1", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, boxBlur(g, 1)) }},
	{"blur_r2", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, boxBlur(g, 2)) }},
	{"blur_r4", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, boxBlur(g, 4)) }},
	{"glare_mrz", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte {
		return encPNG(t, addGlare(g, 800, 1030, 260, 90))
	}},
	{"glare_portrait", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte {
		return encPNG(t, addGlare(g, 280, 430, 170, 170))
	}},
	{"downscale_533", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, scale(g, 533)) }},
	{"noise8_jpeg60", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encJPEG(t, noise(g, 8, r), 60) }},
	{"blur_r1_noise_jpeg70", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte {
		return encJPEG(t, noise(boxBlur(g, 1), 8, r), 70)
	}},
	{"rotate_7deg", true, func(t testing.TB, g *image.Gray, r *rand.Rand) []byte { return encPNG(t, rotate(g, 7)) }},
}
