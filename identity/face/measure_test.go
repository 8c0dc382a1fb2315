package face_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trustd/trustd/identity/face"
)

// TestMeasureWithHumanAssets reproduces the rough similarity figures of
// DESIGN.md from the screenshot @vladmandic/human ships in its npm package
// (assets/screenshot-facematch.jpg: a grid of 108 face crops whose first
// row is mostly one man). Opt-in (FACE_MEASURE=1): it takes minutes and the
// identities in the grid are not verified, so it measures nothing a
// threshold can be certified on; it only logs.
func TestMeasureWithHumanAssets(t *testing.T) {
	if os.Getenv("FACE_MEASURE") == "" {
		t.Skip("set FACE_MEASURE=1 to log the rough similarity figures of DESIGN.md")
	}
	c := engine(t)
	dir, _ := face.FindSidecarDir()
	f, err := os.Open(filepath.Join(dir, "node_modules/@vladmandic/human/assets/screenshot-facematch.jpg"))
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	src, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := sampleFace(t)
	sample := one(t, c, raw).Descriptor
	const cols, rows = 18, 6
	cw, ch := 1920.0/cols, 111.0
	descs := make([][]float32, cols*rows)
	for r := range rows {
		for k := range cols {
			x0, y0 := int(float64(k)*cw), 282+int(float64(r)*ch)
			cell := image.NewRGBA(image.Rect(0, 0, int(cw)-2, int(ch)-2))
			draw.Draw(cell, cell.Bounds(), src, image.Pt(x0+1, y0+1), draw.Src)
			pad := image.NewRGBA(image.Rect(0, 0, 3*cell.Bounds().Dx(), 3*cell.Bounds().Dy()))
			draw.Draw(pad, cell.Bounds().Add(image.Pt(cell.Bounds().Dx(), cell.Bounds().Dy())), cell, image.Point{}, draw.Src)
			a, err := c.Analyze(context.Background(), encPNG(t, pad))
			if err == nil && len(a.Faces) > 0 {
				descs[r*cols+k] = a.Faces[0].Descriptor
			}
		}
	}
	var b bytes.Buffer
	var toSample []float64
	for _, ref := range []struct {
		name string
		d    []float32
	}{{"grid cell 0", descs[0]}, {"pigo sample", sample}} {
		fmt.Fprintf(&b, "cosine similarity to %s:\n", ref.name)
		for r := range rows {
			var cells []string
			for k := range cols {
				d := descs[r*cols+k]
				if d == nil || ref.d == nil {
					cells = append(cells, "  -- ")
					continue
				}
				s, _ := face.Compare(ref.d, d, 0)
				if ref.name == "pigo sample" {
					toSample = append(toSample, s)
				}
				cells = append(cells, fmt.Sprintf("%5.2f", s))
			}
			fmt.Fprintln(&b, strings.Join(cells, " "))
		}
	}
	sort.Float64s(toSample)
	if len(toSample) > 0 {
		fmt.Fprintf(&b, "pigo sample against %d crops: max %.2f\n", len(toSample), toSample[len(toSample)-1])
	}
	t.Log("\n" + b.String())
}
