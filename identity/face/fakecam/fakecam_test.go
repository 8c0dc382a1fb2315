package fakecam

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/trustd/trustd/identity/liveness"
)

func TestY4MRoundTrip(t *testing.T) {
	a := image.NewRGBA(image.Rect(0, 0, 4, 2))
	b := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for i := range 4 {
		for j := range 2 {
			a.Set(i, j, color.RGBA{200, 30, 30, 255})
			b.Set(i, j, color.RGBA{byte(60 * i), byte(100 * j), 90, 255})
		}
	}
	var buf bytes.Buffer
	if err := WriteY4M(&buf, []image.Image{a, b}, 12); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("YUV4MPEG2 W4 H2 F12:1 Ip A1:1 C420jpeg\nFRAME\n")) {
		t.Fatalf("header %q", buf.Bytes()[:50])
	}
	if want := 39 + 2*(6+8+2+2); buf.Len() != want {
		t.Fatalf("%d bytes, want %d", buf.Len(), want)
	}
	frames, fps, err := ReadY4M(&buf)
	if err != nil || fps != 12 || len(frames) != 2 {
		t.Fatal(len(frames), fps, err)
	}
	r, g, bb, _ := frames[0].At(1, 1).RGBA()
	if math.Abs(float64(r>>8)-200) > 3 || math.Abs(float64(g>>8)-30) > 3 || math.Abs(float64(bb>>8)-30) > 3 {
		t.Fatalf("colour %d %d %d", r>>8, g>>8, bb>>8)
	}
	if err := WriteY4M(&buf, []image.Image{image.NewRGBA(image.Rect(0, 0, 3, 2))}, 10); err == nil {
		t.Fatal("odd width accepted")
	}
	if err := WriteY4M(&buf, nil, 10); err == nil {
		t.Fatal("no frames accepted")
	}
	if _, _, err := ReadY4M(bytes.NewReader([]byte("GIF89a"))); err == nil {
		t.Fatal("not a y4m accepted")
	}
}

func TestFramesScript(t *testing.T) {
	img, eyes, err := Sample()
	if err != nil {
		t.Skip(err)
	}
	s := Script{Actions: []liveness.Action{liveness.TurnLeft, liveness.Blink, liveness.TurnRight}}
	frames, err := Frames(img, eyes, s)
	if err != nil {
		t.Fatal(err)
	}
	// 4 holds of 6, two turns of 4+2+3, one blink of 2.
	if len(frames) != 4*6+2*9+2 {
		t.Fatalf("%d frames", len(frames))
	}
	for i, f := range frames {
		if f.Bounds() != image.Rect(0, 0, 640, 480) {
			t.Fatalf("frame %d: %v", i, f.Bounds())
		}
	}
	if _, err := Frames(img, eyes, Script{Actions: []liveness.Action{"smile"}}); err == nil {
		t.Fatal("unknown action accepted")
	}
}
