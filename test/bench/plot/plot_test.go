package plot

import (
	"bytes"
	"errors"
	"image/png"
	"testing"
)

func TestRenderDrawsStackedPanels(t *testing.T) {
	p := Panel{
		Title: "latency by percentile", XLabel: "percentile", YLabel: "latency (ms)",
		Series: []Series{{Name: "ratelimit", Color: Palette[0], X: []float64{0, 1, 2, 3}, Y: []float64{0.1, 0.2, 0.9, 4.2}}},
		XTicks: []Tick{{0, "0%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}},
	}
	q := Panel{Title: "throughput", XLabel: "time (s)", YLabel: "requests/s",
		Series: []Series{{Name: "rps", Color: Palette[1], X: []float64{0, 1, 2}, Y: []float64{100, 120, 90}}}}
	var buf bytes.Buffer
	if err := Render(&buf, 900, p, q, Panel{Title: "empty"}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 2*panelH {
		t.Fatalf("size %v, want 900×%d (the empty panel dropped)", b, 2*panelH)
	}
	coloured := 0
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == Palette[0].R && uint8(g>>8) == Palette[0].G && uint8(b>>8) == Palette[0].B {
				coloured++
			}
		}
	}
	if coloured < 200 {
		t.Fatalf("only %d pixels of the first series' colour: the line was not drawn", coloured)
	}
}

func TestRenderRefusesNothing(t *testing.T) {
	if err := Render(&bytes.Buffer{}, 800, Panel{}); !errors.Is(err, ErrEmpty) {
		t.Fatalf("want ErrEmpty, got %v", err)
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		span float64
		want float64
	}{{10, 2}, {1, 0.2}, {4.2, 1}, {730, 200}}
	for _, tt := range tests {
		if got := niceStep(tt.span, numYTicks); got != tt.want {
			t.Errorf("niceStep(%v) = %v want %v", tt.span, got, tt.want)
		}
	}
	if FormatNumber(0.25) != "0.25" || FormatNumber(3) != "3" {
		t.Fatalf("FormatNumber: %s %s", FormatNumber(0.25), FormatNumber(3))
	}
}

func TestEveryGlyphIsFiveByseven(t *testing.T) {
	for r, g := range glyphs {
		for _, row := range g {
			if len(row) != glyphW {
				t.Fatalf("glyph %q has a row of %d", r, len(row))
			}
		}
	}
}
