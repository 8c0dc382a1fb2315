package documents

import (
	_ "embed"
	"image"
	"sync"

	pigo "github.com/esimov/pigo/core"
)

// facefinder is pigo v1.4.6's cascade/facefinder, shipped with its MIT
// licence in cascade/.
//
//go:embed cascade/facefinder
var facefinder []byte

var (
	pigoOnce sync.Once
	pigoC    *pigo.Pigo
	pigoErr  error
)

func classifier() (*pigo.Pigo, error) {
	pigoOnce.Do(func() { pigoC, pigoErr = pigo.NewPigo().Unpack(facefinder) })
	return pigoC, pigoErr
}

// Face is a detected face: centre, size (pixels of the searched image) and
// the cascade's score.
type Face struct {
	X, Y, Size int
	Score      float32
}

// MinFaceScore is the cascade score a detection must reach.
const MinFaceScore = 5.0

// DetectFaces runs pigo on region r of g and returns detections above
// MinFaceScore, best first.
func DetectFaces(g *image.Gray, r image.Rectangle) []Face {
	c, err := classifier()
	if err != nil {
		return nil
	}
	r = r.Intersect(g.Rect)
	if r.Dx() < 40 || r.Dy() < 40 {
		return nil
	}
	pix := make([]uint8, r.Dx()*r.Dy())
	for y := 0; y < r.Dy(); y++ {
		copy(pix[y*r.Dx():(y+1)*r.Dx()], g.Pix[g.PixOffset(r.Min.X, r.Min.Y+y):])
	}
	cp := pigo.CascadeParams{MinSize: max(r.Dx()/5, 20), MaxSize: min(r.Dx(), r.Dy()), ShiftFactor: 0.1, ScaleFactor: 1.1,
		ImageParams: pigo.ImageParams{Pixels: pix, Rows: r.Dy(), Cols: r.Dx(), Dim: r.Dx()}}
	dets := c.ClusterDetections(c.RunCascade(cp, 0), 0.2)
	var out []Face
	for _, d := range dets {
		if d.Q >= MinFaceScore {
			out = append(out, Face{X: d.Col + r.Min.X, Y: d.Row + r.Min.Y, Size: d.Scale, Score: d.Q})
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
