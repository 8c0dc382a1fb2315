// Package synth makes test images and fake-camera videos from one face
// photograph: a cylindrical head-turn warp (mimics yaw), an eyelid cover
// (mimics a blink), shifts and rescales. The images are synthetic: they
// exercise the engine and the liveness logic, they say nothing about how
// the engine behaves on real people. Pixels are addressed directly (no
// per-pixel interface calls) so tests under the race detector stay fast.
package synth

import (
	"image"
	"image/color"
	"image/draw"
	"math"
)

// Turn warps the face as if the head, modelled as a vertical cylinder of
// the given radius centred at cx, turned by deg degrees; positive deg turns
// the person to their left (the nose moves to the image's right).
func Turn(img image.Image, cx, radius, deg float64) *image.RGBA {
	src := toRGBA(img)
	b := src.Rect
	out := image.NewRGBA(b)
	phi := deg * math.Pi / 180
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			u := float64(x) + 0.5 - cx
			if math.Abs(u) >= radius {
				out.SetRGBA(x, y, src.RGBAAt(x, y))
				continue
			}
			// The output point shows the cylinder at angle a; before the
			// turn it was at a - phi (clamped to the visible half).
			a := math.Asin(u/radius) - phi
			a = math.Max(-math.Pi/2, math.Min(math.Pi/2, a))
			sx := cx + radius*math.Sin(a)
			out.SetRGBA(x, y, bilinear(src, sx-0.5, float64(y)))
		}
	}
	return out
}

// CloseEyesSkin covers each eye rectangle with the skin just above it
// (the rectangle's own height higher, mirrored vertically so the seam
// matches) and draws a curved dark lash line along its lower part.
func CloseEyesSkin(img image.Image, eyes ...image.Rectangle) *image.RGBA {
	out := clone(img)
	for _, r := range eyes {
		r = r.Intersect(out.Bounds())
		h := r.Dy()
		if r.Empty() || r.Min.Y-h < out.Bounds().Min.Y {
			continue
		}
		for y := r.Min.Y; y < r.Max.Y; y++ {
			sy := r.Min.Y - 1 - (y - r.Min.Y)
			for x := r.Min.X; x < r.Max.X; x++ {
				out.SetRGBA(x, y, out.RGBAAt(x, sy))
			}
		}
		cx := float64(r.Min.X+r.Max.X) / 2
		half := float64(r.Dx()) / 2
		for x := r.Min.X; x < r.Max.X; x++ {
			u := (float64(x) + 0.5 - cx) / half
			y := int(math.Round(float64(r.Min.Y) + float64(h)*0.55 + float64(h)*0.15*(u*u)))
			for dy := 0; dy < 2; dy++ {
				if p := image.Pt(x, y+dy); p.In(r) {
					out.SetRGBA(p.X, p.Y, lerp(out.RGBAAt(p.X, p.Y), color.RGBA{35, 25, 25, 255}, 0.75))
				}
			}
		}
	}
	return out
}

// Place draws img scaled by scale with its top-left corner at (dx, dy) on
// a w×h canvas filled with bg.
func Place(img image.Image, w, h int, scale, dx, dy float64, bg color.RGBA) *image.RGBA {
	src := toRGBA(img)
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	sb := src.Rect
	for y := 0; y < h; y++ {
		sy := (float64(y)+0.5-dy)/scale - 0.5 + float64(sb.Min.Y)
		for x := 0; x < w; x++ {
			sx := (float64(x)+0.5-dx)/scale - 0.5 + float64(sb.Min.X)
			if sx < float64(sb.Min.X) || sy < float64(sb.Min.Y) || sx > float64(sb.Max.X-1) || sy > float64(sb.Max.Y-1) {
				out.SetRGBA(x, y, bg)
				continue
			}
			out.SetRGBA(x, y, bilinear(src, sx, sy))
		}
	}
	return out
}

// Mirror flips img horizontally.
func Mirror(img image.Image) *image.RGBA {
	src := toRGBA(img)
	b := src.Rect
	out := image.NewRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.SetRGBA(b.Max.X-1-(x-b.Min.X), y, src.RGBAAt(x, y))
		}
	}
	return out
}

// toRGBA returns img itself when it is an *image.RGBA, else a copy.
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok {
		return r
	}
	return clone(img)
}

func clone(img image.Image) *image.RGBA {
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Rect, img, img.Bounds().Min, draw.Src)
	return out
}

func lerp(a, b color.RGBA, t float64) color.RGBA {
	f := func(p, q uint8) uint8 { return uint8(math.Round(float64(p)*(1-t) + float64(q)*t)) }
	return color.RGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), 255}
}

func bilinear(src *image.RGBA, fx, fy float64) color.RGBA {
	b := src.Rect
	x0, y0 := int(math.Floor(fx)), int(math.Floor(fy))
	tx, ty := fx-float64(x0), fy-float64(y0)
	cl := func(v, lo, hi int) int { return max(lo, min(hi-1, v)) }
	xa, xb := cl(x0, b.Min.X, b.Max.X)-b.Min.X, cl(x0+1, b.Min.X, b.Max.X)-b.Min.X
	ya, yb := cl(y0, b.Min.Y, b.Max.Y)-b.Min.Y, cl(y0+1, b.Min.Y, b.Max.Y)-b.Min.Y
	p := src.Pix
	i00, i01 := ya*src.Stride+xa*4, ya*src.Stride+xb*4
	i10, i11 := yb*src.Stride+xa*4, yb*src.Stride+xb*4
	w00, w01, w10, w11 := (1-tx)*(1-ty), tx*(1-ty), (1-tx)*ty, tx*ty
	ch := func(k int) uint8 {
		v := float64(p[i00+k])*w00 + float64(p[i01+k])*w01 + float64(p[i10+k])*w10 + float64(p[i11+k])*w11
		return uint8(min(255, v+0.5))
	}
	return color.RGBA{ch(0), ch(1), ch(2), 255}
}

// Head describes the rough 3-D shape used by Rotate: the head is, row by
// row, the front half of an ellipse whose width is the head's silhouette in
// that row (found against the row's background, read at the image's left
// and right edges) and whose depth is Depth times its half width, turning
// about a vertical axis through CenterX; a Gaussian bump (the nose) stands
// out of it. Rows from ChinY down (neck, clothes) do not turn.
type Head struct {
	CenterX                float64
	Depth                  float64 // depth of the head per unit of half width (default 1)
	NoseX, NoseY           float64 // nose tip in image pixels
	NoseHeight             float64 // how far the nose stands out, in pixels
	NoseSigmaX, NoseSigmaY float64 // extent of the bump
	ChinY                  int     // first row that does not turn
	BackgroundTolerance    int     // a pixel within this distance (per channel) of the row's background is background (default 24)
}

// Rotate renders the head turned by deg degrees about a vertical axis:
// every head pixel is given a depth from the Head model, rotated in 3-D
// and projected orthographically, the front-most point winning (so the
// far cheek goes behind the nose and the near side comes into view); the
// silhouette moves with the turn and the uncovered area is filled with the
// row's background. Positive deg turns the person to their left (the nose
// moves to the image's right). Measured with the real engine, a turn of
// 45° here reads about 20° of yaw (identity/face/DESIGN.md).
func Rotate(img image.Image, h Head, deg float64) *image.RGBA {
	src := toRGBA(img)
	b := src.Rect
	out := clone(src)
	if h.Depth <= 0 {
		h.Depth = 1
	}
	tol := h.BackgroundTolerance
	if tol <= 0 {
		tol = 24
	}
	near := func(c, bg color.RGBA) bool {
		return absDiff(c.R, bg.R) <= tol && absDiff(c.G, bg.G) <= tol && absDiff(c.B, bg.B) <= tol
	}
	edge := func(x0, y int) color.RGBA {
		var r, g, bl int
		for x := x0; x < x0+4; x++ {
			c := src.RGBAAt(x, y)
			r, g, bl = r+int(c.R), g+int(c.G), bl+int(c.B)
		}
		return color.RGBA{uint8(r / 4), uint8(g / 4), uint8(bl / 4), 255}
	}
	phi := deg * math.Pi / 180
	sin, cos := math.Sin(phi), math.Cos(phi)
	w := b.Dx()
	if w < 16 {
		return out
	}
	zbuf := make([]float64, w)
	for y := b.Min.Y; y < min(b.Max.Y, b.Min.Y+h.ChinY); y++ {
		lc, rc := edge(b.Min.X, y), edge(b.Max.X-4, y)
		isBG := func(c color.RGBA) bool { return near(c, lc) || near(c, rc) }
		// The row's silhouette: the first and last non-background pixels.
		left, right := -1, -1
		for x := b.Min.X; x < b.Max.X; x++ {
			if !isBG(src.RGBAAt(x, y)) {
				if left < 0 {
					left = x
				}
				right = x
			}
		}
		if left < 0 {
			continue
		}
		for x := b.Min.X; x < b.Max.X; x++ {
			out.SetRGBA(x, y, lerp(lc, rc, float64(x-b.Min.X)/float64(w-1)))
			zbuf[x-b.Min.X] = math.Inf(-1)
		}
		a := math.Max(h.CenterX-float64(left), float64(right+1)-h.CenterX)
		if a < 1 {
			continue
		}
		// A little wider than the silhouette, so its edge is not seen
		// exactly side-on (which would stretch one pixel across many).
		a *= 1.08
		c := h.Depth * a
		dy := (float64(y) + 0.5 - h.NoseY) / math.Max(h.NoseSigmaY, 1)
		const step = 0.5
		prevX, prevZ := math.NaN(), 0.0
		for sx := float64(left); sx < float64(right+1); sx += step {
			u := sx - h.CenterX
			z := c * math.Sqrt(math.Max(0, 1-(u/a)*(u/a)))
			if h.NoseHeight > 0 {
				dx := (sx - h.NoseX) / math.Max(h.NoseSigmaX, 1)
				z += h.NoseHeight * math.Exp(-(dx*dx+dy*dy)/2)
			}
			xr := h.CenterX + u*cos + z*sin
			zr := -u*sin + z*cos
			p := bilinear(src, sx-0.5+step/2, float64(y))
			if isBG(p) {
				prevX = math.NaN()
				continue
			}
			// Fill from the previous sample's position to this one, so a
			// stretched surface has no gaps; a jump backwards (the surface
			// going behind itself) fills nothing.
			x0, x1 := xr, xr
			if !math.IsNaN(prevX) && xr > prevX && xr-prevX < 0.25*a {
				x0 = prevX
			}
			for ox := int(math.Floor(x0)); ox <= int(math.Floor(x1)); ox++ {
				if ox < b.Min.X || ox >= b.Max.X {
					continue
				}
				zz := zr
				if x1 > x0 {
					zz = prevZ + (zr-prevZ)*(float64(ox)-x0)/(x1-x0)
				}
				if zz <= zbuf[ox-b.Min.X] {
					continue
				}
				zbuf[ox-b.Min.X] = zz
				out.SetRGBA(ox, y, p)
			}
			prevX, prevZ = xr, zr
		}
	}
	return out
}

func absDiff(p, q uint8) int {
	if p > q {
		return int(p - q)
	}
	return int(q - p)
}
