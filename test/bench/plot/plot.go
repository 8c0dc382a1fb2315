// Package plot draws simple line charts to PNG with the standard library
// only: stacked panels, each with axes, tick labels, a title and a legend,
// written with a built-in bitmap font. It draws what it is given and knows
// nothing of latency or load; it never reads files or the network.
package plot

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// ErrEmpty is returned when there is nothing to draw.
var ErrEmpty = errors.New("plot: no panel with data")

// Series is one line: points (X[i], Y[i]).
type Series struct {
	Name  string
	Color color.RGBA
	X, Y  []float64
}

// Tick is a labelled position on an axis.
type Tick struct {
	V     float64
	Label string
}

// Panel is one chart.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
	// XTicks replaces the automatic x ticks (for a transformed axis); the
	// x range then spans the first to the last tick.
	XTicks []Tick
	// Markers are labelled vertical lines, such as the end of a warm-up.
	Markers []Tick
}

// Palette is a set of distinguishable line colours.
var Palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
}

const (
	scale      = 2 // font pixel size
	charW      = (glyphW + 1) * scale
	lineH      = (glyphH + 3) * scale
	marginL    = 110
	marginR    = 60
	marginT    = 50
	marginB    = 70
	panelH     = 360
	numYTicks  = 5
	minWidth   = 400
	tickLength = 6
)

var (
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
	black = color.RGBA{0x20, 0x20, 0x20, 0xff}
	grid  = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	gray  = color.RGBA{0x80, 0x80, 0x80, 0xff}
)

type canvas struct{ img *image.RGBA }

func (c canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.SetRGBA(x, y, col)
	}
}

func (c canvas) text(x, y int, s string, col color.RGBA) {
	for _, r := range s {
		g, ok := glyphs[unicode.ToUpper(r)]
		if ok {
			for gy, row := range g {
				for gx, px := range row {
					if px == '#' {
						for dy := range scale {
							for dx := range scale {
								c.set(x+gx*scale+dx, y+gy*scale+dy, col)
							}
						}
					}
				}
			}
		}
		x += charW
	}
}

// vtext draws s bottom-to-top, for a y-axis label.
func (c canvas) vtext(x, y int, s string, col color.RGBA) {
	for i, r := range s {
		g := glyphs[unicode.ToUpper(r)]
		for gy, row := range g {
			for gx, px := range row {
				if px == '#' {
					for dy := range scale {
						for dx := range scale {
							c.set(x+gy*scale+dx, y-i*charW-gx*scale-dy, col)
						}
					}
				}
			}
		}
	}
}

func textWidth(s string) int { return len([]rune(s)) * charW }

func (c canvas) line(x0, y0, x1, y1 int, col color.RGBA, thick bool) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	err := dx + dy
	for {
		c.set(x0, y0, col)
		if thick {
			c.set(x0+1, y0, col)
			c.set(x0, y0+1, col)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * err; e2 >= dy {
			err += dy
			x0 += sx
		} else {
			err += dx
			y0 += sy
		}
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// niceStep returns a 1/2/5×10^k step that cuts span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// FormatNumber prints v compactly for a tick label.
func FormatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

func autoTicks(lo, hi float64) []Tick {
	step := niceStep(hi-lo, numYTicks)
	var ts []Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, Tick{V: v, Label: FormatNumber(v)})
	}
	return ts
}

func (p Panel) hasData() bool {
	for _, s := range p.Series {
		if len(s.X) > 0 && len(s.X) == len(s.Y) {
			return true
		}
	}
	return false
}

// Render draws the panels stacked top to bottom, width pixels wide.
func Render(w io.Writer, width int, panels ...Panel) error {
	var keep []Panel
	for _, p := range panels {
		if p.hasData() {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return ErrEmpty
	}
	width = max(width, minWidth)
	img := image.NewRGBA(image.Rect(0, 0, width, panelH*len(keep)))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	c := canvas{img}
	for i, p := range keep {
		c.panel(p, image.Rect(0, i*panelH, width, (i+1)*panelH))
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func (c canvas) panel(p Panel, r image.Rectangle) {
	area := image.Rect(r.Min.X+marginL, r.Min.Y+marginT, r.Max.X-marginR, r.Max.Y-marginB)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	yhi := 0.0
	for _, s := range p.Series {
		for i := range min(len(s.X), len(s.Y)) {
			xlo, xhi = min(xlo, s.X[i]), max(xhi, s.X[i])
			yhi = max(yhi, s.Y[i])
		}
	}
	xt := p.XTicks
	if len(xt) >= 2 {
		xlo, xhi = xt[0].V, xt[len(xt)-1].V
	} else {
		if xhi <= xlo {
			xhi = xlo + 1
		}
		xt = autoTicks(xlo, xhi)
	}
	if yhi <= 0 {
		yhi = 1
	}
	ystep := niceStep(yhi*1.05, numYTicks)
	yhi = math.Ceil(yhi*1.05/ystep) * ystep
	yt := autoTicks(0, yhi)

	px := func(x float64) int {
		return area.Min.X + int(math.Round((x-xlo)/(xhi-xlo)*float64(area.Dx())))
	}
	py := func(y float64) int {
		return area.Max.Y - int(math.Round(y/yhi*float64(area.Dy())))
	}

	for _, t := range yt {
		y := py(t.V)
		c.line(area.Min.X, y, area.Max.X, y, grid, false)
		c.line(area.Min.X-tickLength, y, area.Min.X, y, black, false)
		c.text(area.Min.X-tickLength-4-textWidth(t.Label), y-glyphH*scale/2, t.Label, black)
	}
	for _, t := range xt {
		x := px(t.V)
		c.line(x, area.Min.Y, x, area.Max.Y, grid, false)
		c.line(x, area.Max.Y, x, area.Max.Y+tickLength, black, false)
		c.text(x-textWidth(t.Label)/2, area.Max.Y+tickLength+4, t.Label, black)
	}
	for _, m := range p.Markers {
		if m.V < xlo || m.V > xhi {
			continue
		}
		x := px(m.V)
		for y := area.Min.Y; y < area.Max.Y; y += 8 {
			c.line(x, y, x, min(y+4, area.Max.Y), gray, false)
		}
		c.text(x+6, area.Min.Y+4, m.Label, gray)
	}
	c.line(area.Min.X, area.Min.Y, area.Min.X, area.Max.Y, black, true)
	c.line(area.Min.X, area.Max.Y, area.Max.X, area.Max.Y, black, true)

	c.text(area.Min.X, r.Min.Y+14, p.Title, black)
	c.text(area.Min.X+(area.Dx()-textWidth(p.XLabel))/2, area.Max.Y+tickLength+4+lineH+6, p.XLabel, black)
	c.vtext(r.Min.X+12, area.Min.Y+(area.Dy()+textWidth(p.YLabel))/2, p.YLabel, black)

	ly := area.Min.Y + 8
	for _, s := range p.Series {
		n := min(len(s.X), len(s.Y))
		for i := 1; i < n; i++ {
			c.line(px(s.X[i-1]), py(s.Y[i-1]), px(s.X[i]), py(s.Y[i]), s.Color, true)
		}
		if n == 1 {
			c.line(px(s.X[0])-2, py(s.Y[0]), px(s.X[0])+2, py(s.Y[0]), s.Color, true)
		}
		if s.Name != "" {
			lx := area.Max.X - textWidth(s.Name) - 40
			for y := ly - 2; y < ly+lineH; y++ {
				c.line(lx-4, y, area.Max.X-2, y, white, false)
			}
			for dy := range 4 {
				c.line(lx, ly+6+dy, lx+24, ly+6+dy, s.Color, false)
			}
			c.text(lx+32, ly, s.Name, black)
			ly += lineH + 4
		}
	}
}
