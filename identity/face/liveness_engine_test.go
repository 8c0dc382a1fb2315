package face_test

import (
	"context"
	"image"
	"image/color"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/face/fakecam"
	"github.com/trustd/trustd/identity/face/synth"
	"github.com/trustd/trustd/identity/liveness"
)

// synthFrames builds a burst from the sample face: each pose is a
// synthetic 3-D head rotation in degrees (synth.Rotate; 0 = the
// photograph), placed on a 640x480 canvas with a small drift so no two
// frames are byte-identical.
func synthFrames(t *testing.T, img image.Image, turns ...float64) []liveness.Frame {
	var out []liveness.Frame
	for i, deg := range turns {
		src := img
		if deg != 0 {
			src = synth.Rotate(img, fakecam.SampleHead, deg)
		}
		canvas := synth.Place(src, 640, 480, 1, 160+float64(i), 40+float64(i%2), color.RGBA{190, 195, 200, 255})
		out = append(out, liveness.Frame{Image: encJPEG(t, canvas, 85), OffsetMS: i * 400})
	}
	return out
}

// The liveness check end to end with the real engine and the shipped
// default thresholds: the synthetic 3-D rotation of 50° reads about ±24°
// of yaw (TestEngineSyntheticTurn), beyond the default 15°. It proves the
// pipeline (engine → tracking → sequence → reference) on real analyses of
// one synthetic face, not that the thresholds suit real people.
func TestLivenessWithRealEngine(t *testing.T) {
	c := engine(t)
	raw, img := sampleFace(t)
	ref := one(t, c, raw).Descriptor
	now := time.Now()
	// The same frames are checked several times: analyses are memoised
	// (the engine is deterministic) to keep the test short.
	m := &memo{e: c, seen: map[string]face.Analysis{}}
	lowered := liveness.New(liveness.Config{Engine: m})
	ch := lowered.Issue(now)
	ch.Actions = []liveness.Action{liveness.TurnLeft, liveness.TurnRight}
	frames := synthFrames(t, img, 0, 25, 50, 25, 0, -25, -50, -25, 0)

	res, err := lowered.Check(context.Background(), ch, frames, now.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || !slices.Equal(res.Observed, ch.Actions) {
		t.Fatalf("synthetic turns with the default thresholds: %+v", res)
	}
	if sim, ok := c.Compare(ref, res.Reference); !ok {
		t.Fatalf("reference does not match the sample: %.3f", sim)
	}

	// The same frames answer the reversed challenge with a failure.
	rev := ch
	rev.Actions = []liveness.Action{liveness.TurnRight, liveness.TurnLeft}
	res, err = lowered.Check(context.Background(), rev, frames, now.Add(5*time.Second))
	if err != nil || res.Passed || !slices.Contains(res.Reasons, liveness.ReasonActions) {
		t.Fatalf("reversed challenge: %+v %v", res, err)
	}

	// Half turns (25°, about 10° of yaw) are not turns.
	half := synthFrames(t, img, 0, 12, 25, 12, 0, -12, -25, -12, 0)
	res, err = lowered.Check(context.Background(), ch, half, now.Add(5*time.Second))
	if err != nil || res.Passed || !slices.Contains(res.Reasons, liveness.ReasonActions) {
		t.Fatalf("half turns: %+v %v", res, err)
	}

	// A frame without a face, and a frame with two.
	noFace := slices.Clone(frames)
	flat := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for i := range flat.Pix {
		flat.Pix[i] = byte(180 + i%7)
	}
	noFace[3] = liveness.Frame{Image: encJPEG(t, flat, 85), OffsetMS: frames[3].OffsetMS}
	res, err = lowered.Check(context.Background(), ch, noFace, now.Add(5*time.Second))
	if err != nil || res.Passed || !slices.Equal(res.Reasons, []string{liveness.ReasonNoFace}) {
		t.Fatalf("frame without a face: %+v %v", res, err)
	}
	twoFaces := slices.Clone(frames)
	pair := synth.Place(img, 640, 480, 1, 0, 40, color.RGBA{190, 195, 200, 255})
	second := synth.Place(img, 640, 480, 1, 320, 40, color.RGBA{190, 195, 200, 255})
	for y := 0; y < 480; y++ {
		for x := 320; x < 640; x++ {
			pair.Set(x, y, second.At(x, y))
		}
	}
	twoFaces[3] = liveness.Frame{Image: encJPEG(t, pair, 85), OffsetMS: frames[3].OffsetMS}
	res, err = lowered.Check(context.Background(), ch, twoFaces, now.Add(5*time.Second))
	if err != nil || res.Passed || !slices.Equal(res.Reasons, []string{liveness.ReasonMultipleFaces}) {
		t.Fatalf("frame with two faces: %+v %v", res, err)
	}

	// An unreadable frame, and the engine going away: fail closed.
	bad := slices.Clone(frames)
	bad[2] = liveness.Frame{Image: []byte("not an image"), OffsetMS: frames[2].OffsetMS}
	res, err = lowered.Check(context.Background(), ch, bad, now.Add(5*time.Second))
	if err != nil || res.Passed || !slices.Equal(res.Reasons, []string{liveness.ReasonUnreadable}) {
		t.Fatalf("unreadable frame: %+v %v", res, err)
	}
	cfg := sidecar.Config()
	cfg.Secret = "not-the-secret-0123456789"
	wrong, _ := face.NewClient(cfg)
	_, err = liveness.New(liveness.Config{Engine: wrong}).Check(context.Background(), ch, frames, now.Add(5*time.Second))
	if err == nil {
		t.Fatal("a refused engine gave a result")
	}
}

type memo struct {
	e    face.Engine
	mu   sync.Mutex
	seen map[string]face.Analysis
}

func (m *memo) Analyze(ctx context.Context, img []byte) (face.Analysis, error) {
	m.mu.Lock()
	a, ok := m.seen[string(img)]
	m.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := m.e.Analyze(ctx, img)
	if err == nil {
		m.mu.Lock()
		m.seen[string(img)] = a
		m.mu.Unlock()
	}
	return a, err
}
