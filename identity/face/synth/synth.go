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
	at := func(x, y int) color.RGBA {
		x = max(b.Min.X, min(b.Max.X-1, x))
		y = max(b.Min.Y, min(b.Max.Y-1, y))
		i := src.PixOffset(x, y)
		return color.RGBA{src.Pix[i], src.Pix[i+1], src.Pix[i+2], 255}
	}
	top := lerp(at(x0, y0), at(x0+1, y0), tx)
	bot := lerp(at(x0, y0+1), at(x0+1, y0+1), tx)
	return lerp(top, bot, ty)
}
