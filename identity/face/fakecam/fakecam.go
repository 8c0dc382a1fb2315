// Package fakecam writes fake-camera videos for browser tests: Chromium
// plays a .y4m file as the camera with
//
//	--use-fake-device-for-media-stream --use-fake-ui-for-media-stream
//	--use-file-for-fake-video-capture=/path/to/face.y4m
//
// The video is pigo's sample photograph (MIT) animated with the synthetic
// transforms of identity/face/synth: held frontal, turned with a 3-D head
// rotation (synth.Rotate, 50° by default), eyes covered with skin for a
// blink. Measured with the real engine (identity/face/DESIGN.md), a 50°
// rotation reads about ±24° of yaw, so a video of turns passes the
// liveness check with the shipped default thresholds; the covered eyes read
// 0.16–0.33 open and about 0.74 similar to the open face, at the edge of
// the defaults (EyesClosed 0.3, continuity 0.7), so a blink is not a
// reliable pass.
// It is a test fixture made from one photograph, not evidence that the
// check stops anything or that it behaves so on real people.
package fakecam

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/trustd/trustd/identity/face/synth"
	"github.com/trustd/trustd/identity/liveness"
)

// Sample is pigo's test photograph (320x400, one frontal face) from the Go
// module cache, and the rectangles of its two eyes.
func Sample() (image.Image, []image.Rectangle, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("fakecam: go env GOMODCACHE: %w", err)
	}
	p := filepath.Join(string(bytes.TrimSpace(out)), "github.com/esimov/pigo@v1.4.6/testdata/sample.jpg")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("fakecam: pigo's sample is not in the module cache (go mod download): %w", err)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	// The eye rectangles cover the lids and brows' lower edge: a cover of
	// the eye opening alone read 0.49 open (identity/face/DESIGN.md).
	return img, []image.Rectangle{image.Rect(89, 168, 143, 198), image.Rect(177, 166, 231, 196)}, nil
}

// SampleHead is the head model of Sample for synth.Rotate: the vertical
// axis through the face's middle, the nose tip below the eyes, the neck
// from row 345 kept still.
var SampleHead = synth.Head{CenterX: 160, Depth: 1, NoseX: 160, NoseY: 235, NoseHeight: 40, NoseSigmaX: 14, NoseSigmaY: 30, ChinY: 345}

// Script describes a performance.
type Script struct {
	Width, Height int     // canvas (default 640x480)
	FPS           int     // default 10
	Hold          int     // frames held frontal before, between and after actions (default 6)
	TurnDegrees   float64 // rotation of a turn (default 50: about 24° of yaw as the engine reads it)
	TurnFrames    int     // frames to turn out (and as many back), default 4
	Actions       []liveness.Action
	Head          synth.Head // the face's head model (default SampleHead)
}

// Frames renders the script from a face photograph and its eye rectangles.
func Frames(face image.Image, eyes []image.Rectangle, s Script) ([]image.Image, error) {
	if s.Width <= 0 || s.Height <= 0 {
		s.Width, s.Height = 640, 480
	}
	if s.Width%2 != 0 || s.Height%2 != 0 {
		return nil, errors.New("fakecam: width and height must be even")
	}
	if s.Hold <= 0 {
		s.Hold = 6
	}
	if s.TurnDegrees == 0 {
		s.TurnDegrees = 50
	}
	if s.TurnFrames <= 0 {
		s.TurnFrames = 4
	}
	fb := face.Bounds()
	scale := 0.9 * float64(s.Height) / float64(fb.Dy())
	dx := (float64(s.Width) - scale*float64(fb.Dx())) / 2
	dy := (float64(s.Height) - scale*float64(fb.Dy())) / 2
	if s.Head.CenterX == 0 {
		s.Head = SampleHead
	}
	bg := color.RGBA{188, 192, 198, 255}
	var out []image.Image
	n := 0
	put := func(img image.Image) {
		// A slow drift of a pixel per frame, like a hand-held camera, so
		// no two frames of one pass are identical (unique for 88 frames).
		ddx, ddy := float64(n%11)-5, float64((n/11)%8)-4
		out = append(out, synth.Place(img, s.Width, s.Height, scale, dx+ddx, dy+ddy, bg))
		n++
	}
	hold := func() {
		for range s.Hold {
			put(face)
		}
	}
	// Each angle is rendered once (a turn goes out and back through the
	// same angles; the rotation is the costly part under -race).
	rotated := map[float64]image.Image{}
	rotate := func(deg float64) image.Image {
		if r, ok := rotated[deg]; ok {
			return r
		}
		rotated[deg] = synth.Rotate(face, s.Head, deg)
		return rotated[deg]
	}
	hold()
	for _, a := range s.Actions {
		switch a {
		case liveness.TurnLeft, liveness.TurnRight:
			sign := 1.0
			if a == liveness.TurnRight {
				sign = -1
			}
			for i := 1; i <= s.TurnFrames; i++ {
				put(rotate(sign * s.TurnDegrees * float64(i) / float64(s.TurnFrames)))
			}
			for range 2 {
				put(rotate(sign * s.TurnDegrees))
			}
			for i := s.TurnFrames - 1; i >= 1; i-- {
				put(rotate(sign * s.TurnDegrees * float64(i) / float64(s.TurnFrames)))
			}
		case liveness.Blink:
			closed := synth.CloseEyesSkin(face, eyes...)
			put(closed)
			put(closed)
		default:
			return nil, fmt.Errorf("fakecam: unknown action %q", a)
		}
		hold()
	}
	return out, nil
}

// WriteY4M writes frames as a YUV4MPEG2 stream (4:2:0, full-range BT.601
// as in JPEG), the format Chromium's fake capture device reads.
func WriteY4M(w io.Writer, frames []image.Image, fps int) error {
	if len(frames) == 0 {
		return errors.New("fakecam: no frames")
	}
	if fps <= 0 {
		fps = 10
	}
	b := frames[0].Bounds()
	W, H := b.Dx(), b.Dy()
	if W%2 != 0 || H%2 != 0 {
		return errors.New("fakecam: width and height must be even")
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "YUV4MPEG2 W%d H%d F%d:1 Ip A1:1 C420jpeg\n", W, H, fps)
	y := make([]byte, W*H)
	u := make([]byte, W*H/4)
	v := make([]byte, W*H/4)
	rgba := image.NewRGBA(image.Rect(0, 0, W, H))
	for _, f := range frames {
		if f.Bounds().Dx() != W || f.Bounds().Dy() != H {
			return errors.New("fakecam: frames of different sizes")
		}
		draw.Draw(rgba, rgba.Rect, f, f.Bounds().Min, draw.Src)
		for j := 0; j < H; j += 2 {
			for i := 0; i < W; i += 2 {
				var cbSum, crSum int
				for dj := range 2 {
					for di := range 2 {
						p := rgba.Pix[rgba.PixOffset(i+di, j+dj):]
						yy, cb, cr := color.RGBToYCbCr(p[0], p[1], p[2])
						y[(j+dj)*W+i+di] = yy
						cbSum += int(cb)
						crSum += int(cr)
					}
				}
				u[(j/2)*(W/2)+i/2] = byte((cbSum + 2) / 4)
				v[(j/2)*(W/2)+i/2] = byte((crSum + 2) / 4)
			}
		}
		bw.WriteString("FRAME\n")
		bw.Write(y)
		bw.Write(u)
		bw.Write(v)
	}
	return bw.Flush()
}

// WriteFile renders the script from pigo's sample into path.
func WriteFile(path string, s Script) error {
	img, eyes, err := Sample()
	if err != nil {
		return err
	}
	frames, err := Frames(img, eyes, s)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteY4M(f, frames, s.FPS); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadY4M reads a stream written by WriteY4M (4:2:0 only) back into
// frames, for tests that check what a browser would be shown.
func ReadY4M(r io.Reader) (frames []*image.YCbCr, fps int, err error) {
	br := bufio.NewReader(r)
	hdr, err := br.ReadString('\n')
	if err != nil {
		return nil, 0, err
	}
	var W, H, den int
	var rest string
	if n, _ := fmt.Sscanf(hdr, "YUV4MPEG2 W%d H%d F%d:%d%s", &W, &H, &fps, &den, &rest); n < 4 || W <= 0 || H <= 0 || W%2 != 0 || H%2 != 0 || W*H > 1<<24 {
		return nil, 0, fmt.Errorf("fakecam: bad header %q", hdr)
	}
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return frames, fps, nil
		}
		if err != nil || line != "FRAME\n" {
			return nil, 0, fmt.Errorf("fakecam: bad frame header %q", line)
		}
		img := image.NewYCbCr(image.Rect(0, 0, W, H), image.YCbCrSubsampleRatio420)
		for _, p := range [][]byte{img.Y, img.Cb, img.Cr} {
			if _, err := io.ReadFull(br, p); err != nil {
				return nil, 0, err
			}
		}
		frames = append(frames, img)
	}
}

// Burst renders the shortest frame sequence that performs actions from
// the sample face, as a client answering a liveness challenge would send
// it: a frontal frame, then for each turn half way, all the way
// (TurnDegrees, default 50), half way and back to the front, and for a
// blink the eyes covered then open again. Frames are placed on a w×h
// canvas (default 640x480) with a one-pixel drift each, so none is
// byte-identical; at most 1 + 4 per action.
func Burst(actions []liveness.Action, turnDegrees float64, w, h int) ([]image.Image, error) {
	img, eyes, err := Sample()
	if err != nil {
		return nil, err
	}
	if w <= 0 || h <= 0 {
		w, h = 640, 480
	}
	if turnDegrees == 0 {
		turnDegrees = 50
	}
	fb := img.Bounds()
	scale := 0.9 * float64(h) / float64(fb.Dy())
	dx := (float64(w) - scale*float64(fb.Dx())) / 2
	dy := (float64(h) - scale*float64(fb.Dy())) / 2
	bg := color.RGBA{188, 192, 198, 255}
	var out []image.Image
	put := func(src image.Image) {
		n := float64(len(out))
		out = append(out, synth.Place(src, w, h, scale, dx+n, dy+float64(len(out)%2), bg))
	}
	rotated := map[float64]image.Image{}
	rotate := func(deg float64) image.Image {
		if r, ok := rotated[deg]; ok {
			return r
		}
		rotated[deg] = synth.Rotate(img, SampleHead, deg)
		return rotated[deg]
	}
	put(img)
	for _, a := range actions {
		switch a {
		case liveness.TurnLeft, liveness.TurnRight:
			d := turnDegrees
			if a == liveness.TurnRight {
				d = -d
			}
			put(rotate(d / 2))
			put(rotate(d))
			put(rotate(d / 2))
			put(img)
		case liveness.Blink:
			put(synth.CloseEyesSkin(img, eyes...))
			put(img)
		default:
			return nil, fmt.Errorf("fakecam: unknown action %q", a)
		}
	}
	return out, nil
}
