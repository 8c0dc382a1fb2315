package documents

import (
	"image"
	"math"

	xdraw "golang.org/x/image/draw"
)

// WorkingWidth is the width every image is normalised to before the quality
// metrics, so they do not depend on the capture resolution.
const WorkingWidth = 1200

// Thresholds of the capture-quality checks, derived from the generated
// fixtures (identity/documents/fixture, TestFixtureDecisions; numbers in
// test/bench/RESULTS.md). Sharpness on the MRZ band at 1200 px: clean pages
// 416–430, noise σ8 + JPEG 60 428–442; blur r=1 261–281 (Tesseract read
// none of them exactly), blur r=1 + noise + JPEG 268–291, upscaled 533-px
// pages 275–294, blur r=2 23–24. MinSharpness sits between the sharpest
// unreadable capture (291) and the softest readable one (416). Glare over
// the MRZ measured 0.28 of the band, none on clean pages.
var Thresholds = struct {
	MinSourceWidth   int     // pixels across the document in the original image
	MinSharpness     float64 // denoised Laplacian variance on the text band
	MaxGlareFraction float64 // largest saturated blob / region area, MRZ or portrait
	MinMeanLuma      float64
	MaxMeanLuma      float64
}{MinSourceWidth: 900, MinSharpness: 350, MaxGlareFraction: 0.02, MinMeanLuma: 50, MaxMeanLuma: 225}

// Quality holds the measured capture metrics with their thresholds.
type Quality struct {
	SourceWidth   int      `json:"source_width"`
	Sharpness     float64  `json:"sharpness"`
	GlareMRZ      float64  `json:"glare_mrz"`
	GlarePortrait float64  `json:"glare_portrait"`
	MeanLuma      float64  `json:"mean_luma"`
	BandFound     bool     `json:"text_band_found"`
	Reasons       []string `json:"reasons"`
}

// Regions are the parts of a normalised page the checks look at.
type Regions struct {
	Band     image.Rectangle // the MRZ (or lowest text) band
	Portrait image.Rectangle
}

// normalise scales g to WorkingWidth.
func normalise(g *image.Gray) *image.Gray {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	if w == WorkingWidth {
		return g
	}
	nh := int(math.Round(float64(h) * WorkingWidth / float64(w)))
	out := image.NewGray(image.Rect(0, 0, WorkingWidth, max(nh, 1)))
	xdraw.ApproxBiLinear.Scale(out, out.Rect, g, g.Rect, xdraw.Src, nil)
	return out
}

// boxBlur3 is a 3×3 mean filter (the light denoise before the Laplacian).
func boxBlur3(g *image.Gray, r image.Rectangle) *image.Gray {
	out := image.NewGray(r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			s, n := 0, 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					p := image.Pt(x+dx, y+dy)
					if p.In(g.Rect) {
						s += int(g.Pix[g.PixOffset(p.X, p.Y)])
						n++
					}
				}
			}
			out.Pix[out.PixOffset(x, y)] = uint8(s / n)
		}
	}
	return out
}

// sharpness is the variance of the 4-neighbour Laplacian of the denoised
// region r.
func sharpness(g *image.Gray, r image.Rectangle) float64 {
	r = r.Intersect(g.Rect)
	if r.Dx() < 3 || r.Dy() < 3 {
		return 0
	}
	d := boxBlur3(g, r)
	var sum, sq float64
	n := 0
	for y := r.Min.Y + 1; y < r.Max.Y-1; y++ {
		for x := r.Min.X + 1; x < r.Max.X-1; x++ {
			c := 4*int(d.Pix[d.PixOffset(x, y)]) - int(d.Pix[d.PixOffset(x-1, y)]) - int(d.Pix[d.PixOffset(x+1, y)]) -
				int(d.Pix[d.PixOffset(x, y-1)]) - int(d.Pix[d.PixOffset(x, y+1)])
			v := float64(c)
			sum += v
			sq += v * v
			n++
		}
	}
	m := sum / float64(n)
	return sq/float64(n) - m*m
}

// glare is the area of the largest 4-connected blob of saturated pixels
// (≥ 250) inside r, as a fraction of r's area.
func glare(g *image.Gray, r image.Rectangle) float64 {
	r = r.Intersect(g.Rect)
	if r.Empty() {
		return 0
	}
	w, h := r.Dx(), r.Dy()
	seen := make([]bool, w*h)
	sat := func(x, y int) bool { return g.Pix[g.PixOffset(r.Min.X+x, r.Min.Y+y)] >= 250 }
	best := 0
	stack := make([]int, 0, 256)
	for i := range seen {
		if seen[i] || !sat(i%w, i/w) {
			continue
		}
		seen[i] = true
		stack = append(stack[:0], i)
		n := 0
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n++
			x, y := p%w, p/w
			for _, q := range [4][2]int{{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}} {
				if q[0] < 0 || q[1] < 0 || q[0] >= w || q[1] >= h {
					continue
				}
				j := q[1]*w + q[0]
				if !seen[j] && sat(q[0], q[1]) {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		best = max(best, n)
	}
	return float64(best) / float64(w*h)
}

// findBand locates the MRZ band: the lowest run of rows in the bottom 40%
// of the page whose horizontal gradient energy marks text. It falls back to
// the bottom 22% when no text rows stand out (found is then false).
func findBand(g *image.Gray) (band image.Rectangle, found bool) {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	top := h * 6 / 10
	energy := make([]float64, h)
	var mean float64
	for y := top; y < h; y++ {
		s := 0
		row := g.Pix[y*g.Stride : y*g.Stride+w]
		for x := 1; x < w; x++ {
			d := int(row[x]) - int(row[x-1])
			if d > 40 || d < -40 {
				s++
			}
		}
		energy[y] = float64(s)
		mean += float64(s)
	}
	mean /= float64(h - top)
	thr := math.Max(mean*0.8, float64(w)/60)
	lo, hi := -1, -1
	for y := h - 1; y >= top; y-- {
		if energy[y] >= thr {
			if hi < 0 {
				hi = y
			}
			lo = y
		} else if hi >= 0 && y < lo-h/25 {
			break
		}
	}
	if hi < 0 || hi-lo < h/40 {
		return image.Rect(0, h*78/100, w, h), false
	}
	pad := max((hi-lo)/6, 4)
	return image.Rect(0, max(lo-pad, 0), w, min(hi+pad+1, h)), true
}

// portraitRegion is where ICAO data pages and ID cards place the portrait:
// the left third, above the MRZ.
func portraitRegion(g *image.Gray, band image.Rectangle) image.Rectangle {
	w := g.Rect.Dx()
	return image.Rect(w*2/100, g.Rect.Dy()*12/100, w*34/100, band.Min.Y)
}

func meanLuma(g *image.Gray) float64 {
	var s uint64
	for _, p := range g.Pix {
		s += uint64(p)
	}
	return float64(s) / float64(len(g.Pix))
}

// Assess measures capture quality on the normalised page n of a source
// image srcWidth pixels wide.
func Assess(n *image.Gray, srcWidth int, requirePortrait bool) (Quality, Regions) {
	band, found := findBand(n)
	reg := Regions{Band: band, Portrait: portraitRegion(n, band)}
	q := Quality{SourceWidth: srcWidth, BandFound: found, MeanLuma: round2(meanLuma(n)),
		Sharpness: round2(sharpness(n, band)), GlareMRZ: round4(glare(n, band)), GlarePortrait: round4(glare(n, reg.Portrait))}
	t := Thresholds
	if srcWidth < t.MinSourceWidth {
		q.Reasons = append(q.Reasons, "low_resolution")
	}
	if q.MeanLuma < t.MinMeanLuma {
		q.Reasons = append(q.Reasons, "underexposed")
	}
	if q.MeanLuma > t.MaxMeanLuma {
		q.Reasons = append(q.Reasons, "overexposed")
	}
	if q.Sharpness < t.MinSharpness {
		q.Reasons = append(q.Reasons, "blur")
	}
	if q.GlareMRZ > t.MaxGlareFraction {
		q.Reasons = append(q.Reasons, "glare_mrz")
	}
	if requirePortrait && q.GlarePortrait > t.MaxGlareFraction {
		q.Reasons = append(q.Reasons, "glare_portrait")
	}
	if !found {
		q.Reasons = append(q.Reasons, "text_band_not_found")
	}
	return q, reg
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
func round4(v float64) float64 { return math.Round(v*10000) / 10000 }
