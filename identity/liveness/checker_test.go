package liveness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/face"
)

// fakeEngine answers from a table keyed by the frame's bytes.
type fakeEngine struct {
	answers map[string]face.Analysis
	errs    map[string]error
	calls   int
}

func (e *fakeEngine) Analyze(_ context.Context, img []byte) (face.Analysis, error) {
	e.calls++
	if err, ok := e.errs[string(img)]; ok {
		return face.Analysis{}, err
	}
	a, ok := e.answers[string(img)]
	if !ok {
		return face.Analysis{}, fmt.Errorf("fake engine: unknown frame %q", img)
	}
	return a, nil
}

func descriptor(seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	d := make([]float32, 16)
	for i := range d {
		d[i] = float32(r.Float64() - 0.5)
	}
	return d
}

var (
	alice = descriptor(1)
	bob   = descriptor(2)
)

// pose is one synthetic frame: yaw, eyes and optional overrides.
type pose struct {
	yaw, eyes float64
	desc      []float32
	box       image.Rectangle
	faces     int // 0: one face; 2: a second confident face; -1: none
}

func frontal() pose                          { return pose{yaw: 0, eyes: 1} }
func left() pose                             { return pose{yaw: 25, eyes: 1} }
func right() pose                            { return pose{yaw: -25, eyes: 1} }
func closed() pose                           { return pose{yaw: 0, eyes: 0.1} }
func halfLeft() pose                         { return pose{yaw: 11, eyes: 1} }
func withBox(p pose, r image.Rectangle) pose { p.box = r; return p }

// burst turns poses into frames (300 ms apart) and a fake engine.
func burst(poses ...pose) ([]Frame, *fakeEngine) {
	e := &fakeEngine{answers: map[string]face.Analysis{}, errs: map[string]error{}}
	var frames []Frame
	for i, p := range poses {
		key := fmt.Sprintf("frame-%d", i)
		box := p.box
		if box.Empty() {
			box = image.Rect(100, 100, 300, 300)
		}
		d := p.desc
		if d == nil {
			d = alice
		}
		f := face.Face{Box: box, Score: 0.99, Yaw: p.yaw, EyesOpen: p.eyes, Descriptor: d}
		a := face.Analysis{Width: 640, Height: 480}
		switch p.faces {
		case 0:
			a.Faces = []face.Face{f}
		case 2:
			g := f
			g.Box = image.Rect(400, 100, 600, 300)
			g.Descriptor = bob
			a.Faces = []face.Face{f, g}
		}
		e.answers[key] = a
		frames = append(frames, Frame{Image: []byte(key), OffsetMS: i * 300})
	}
	return frames, e
}

var t0 = time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)

func challenge(acts ...Action) Challenge {
	return Challenge{Nonce: "n", Actions: acts, IssuedAt: t0, Deadline: t0.Add(time.Minute)}
}

func TestCheckSequences(t *testing.T) {
	far := withBox(frontal(), image.Rect(400, 300, 600, 500))
	big := withBox(frontal(), image.Rect(0, 0, 400, 400))
	other := frontal()
	other.desc = bob
	two := frontal()
	two.faces = 2
	none := frontal()
	none.faces = -1
	nodesc := frontal()
	nodesc.desc = []float32{}
	tests := []struct {
		name    string
		ch      Challenge
		poses   []pose
		pass    bool
		reasons []string
		obs     []Action
	}{
		{"left then right", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), left(), frontal(), right(), frontal()}, true, nil, []Action{TurnLeft, TurnRight}},
		{"left blink right", challenge(TurnLeft, Blink, TurnRight),
			[]pose{frontal(), left(), frontal(), closed(), frontal(), right(), frontal()}, true, nil, []Action{TurnLeft, Blink, TurnRight}},
		{"blink then left, natural extra blink allowed", challenge(Blink, TurnLeft),
			[]pose{frontal(), closed(), frontal(), closed(), frontal(), left(), frontal()}, true, nil, []Action{Blink, Blink, TurnLeft}},
		{"wrong order", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), right(), frontal(), left(), frontal()}, false, []string{ReasonActions}, []Action{TurnRight, TurnLeft}},
		{"replayed video with every turn", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), frontal(), right(), frontal(), left(), frontal()}, false, []string{ReasonExtraTurns}, []Action{TurnLeft, TurnRight, TurnLeft}},
		{"turn held counts once", challenge(TurnLeft, TurnLeft),
			[]pose{frontal(), left(), left(), left(), frontal()}, false, []string{ReasonActions}, []Action{TurnLeft}},
		{"two lefts need a return to the front", challenge(TurnLeft, Blink, TurnLeft),
			[]pose{frontal(), left(), frontal(), closed(), frontal(), left(), frontal()}, true, nil, []Action{TurnLeft, Blink, TurnLeft}},
		{"half turn is not a turn", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), halfLeft(), frontal(), right(), frontal()}, false, []string{ReasonActions}, []Action{TurnRight}},
		{"turn without a frontal start", challenge(TurnLeft, TurnRight),
			[]pose{left(), left(), frontal(), right(), frontal()}, false, []string{ReasonActions}, []Action{TurnRight}},
		{"blink never reopened", challenge(TurnLeft, Blink),
			[]pose{frontal(), left(), frontal(), closed(), closed()}, false, []string{ReasonActions}, []Action{TurnLeft}},
		{"eyes closed from the start is no blink", challenge(Blink, TurnLeft),
			[]pose{closed(), frontal(), left(), frontal(), frontal()}, false, []string{ReasonActions}, []Action{TurnLeft}},
		{"another person swapped in", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), other, right(), frontal()}, false, []string{ReasonNotContinuous}, []Action{TurnLeft, TurnRight}},
		{"face jumped across the frame", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), far, right(), frontal()}, false, []string{ReasonFaceJumped}, []Action{TurnLeft, TurnRight}},
		{"face doubled in size", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), frontal(), big, right(), frontal()}, false, []string{ReasonFaceJumped}, []Action{TurnLeft, TurnRight}},
		{"second face", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), two, right(), frontal()}, false, []string{ReasonMultipleFaces}, []Action{}},
		{"no face", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), none, right(), frontal()}, false, []string{ReasonNoFace}, []Action{}},
		{"no descriptor", challenge(TurnLeft, TurnRight),
			[]pose{frontal(), left(), nodesc, right(), frontal()}, false, []string{ReasonNoDescriptor}, []Action{}},
		{"no frontal frame with open eyes", challenge(TurnLeft, TurnRight),
			[]pose{{yaw: 7, eyes: 0.5}, left(), {yaw: -7, eyes: 0.5}, right(), {yaw: 7, eyes: 0.5}}, false, []string{ReasonNoFrontal}, []Action{TurnLeft, TurnRight}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frames, eng := burst(tc.poses...)
			c := New(Config{Engine: eng, MinFrames: 4})
			res, err := c.Check(context.Background(), tc.ch, frames, t0.Add(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed != tc.pass || !slices.Equal(res.Reasons, tc.reasons) {
				t.Fatalf("passed=%v reasons=%v observed=%v; want passed=%v reasons=%v", res.Passed, res.Reasons, res.Observed, tc.pass, tc.reasons)
			}
			if tc.obs != nil && !slices.Equal(res.Observed, tc.obs) {
				t.Fatalf("observed %v, want %v", res.Observed, tc.obs)
			}
			if res.Passed != (res.Reference != nil) {
				t.Fatalf("reference %v with passed=%v", res.Reference, res.Passed)
			}
			if res.Passed && !slices.Equal(res.Reference, alice) {
				t.Fatal("reference is not the tracked face's descriptor")
			}
			if res.Frames != len(frames) {
				t.Fatalf("frames %d", res.Frames)
			}
		})
	}
}

// The reference is the most frontal frame with open eyes.
func TestReferenceIsMostFrontal(t *testing.T) {
	p := []pose{{yaw: 6, eyes: 1}, left(), {yaw: 1, eyes: 1}, right(), {yaw: 4, eyes: 1}}
	best := descriptor(1)
	best[0] += 0.01 // still continuous, but recognisable
	p[2].desc = best
	frames, eng := burst(p...)
	res, err := New(Config{Engine: eng}).Check(context.Background(), challenge(TurnLeft, TurnRight), frames, t0)
	if err != nil || !res.Passed {
		t.Fatal(res, err)
	}
	if !slices.Equal(res.Reference, best) {
		t.Fatal("reference is not the frontal frame's descriptor")
	}
}

// The cheap checks refuse before the engine is asked anything.
func TestCheckRefusesBeforeAnalysis(t *testing.T) {
	good := []pose{frontal(), left(), frontal(), right(), frontal()}
	ch := challenge(TurnLeft, TurnRight)
	tests := []struct {
		name   string
		ch     Challenge
		now    time.Time
		mutate func([]Frame) []Frame
		reason string
	}{
		{"after the deadline", ch, t0.Add(time.Minute + time.Millisecond), nil, ReasonExpired},
		{"before issue", ch, t0.Add(-time.Second), nil, ReasonExpired},
		{"empty challenge", Challenge{Deadline: t0.Add(time.Minute)}, t0, nil, ReasonNoChallenge},
		{"unknown action", challenge("smile"), t0, nil, ReasonNoChallenge},
		{"too few frames", ch, t0, func(f []Frame) []Frame { return f[:3] }, ReasonTooFewFrames},
		{"too many frames", ch, t0, func(f []Frame) []Frame {
			for i := len(f); i < 30; i++ {
				f = append(f, Frame{Image: []byte(fmt.Sprint(i)), OffsetMS: i * 300})
			}
			return f
		}, ReasonTooManyFrames},
		{"duplicate frame", ch, t0, func(f []Frame) []Frame { f[3].Image = f[1].Image; return f }, ReasonDuplicate},
		{"first offset not zero", ch, t0, func(f []Frame) []Frame { f[0].OffsetMS = 5; return f }, ReasonBadTiming},
		{"offsets not increasing", ch, t0, func(f []Frame) []Frame { f[2].OffsetMS = f[1].OffsetMS; return f }, ReasonBadTiming},
		{"burst too short", ch, t0, func(f []Frame) []Frame {
			for i := range f {
				f[i].OffsetMS = i * 10
			}
			return f
		}, ReasonDuration},
		{"burst longer than the challenge lived", ch, t0, func(f []Frame) []Frame { f[4].OffsetMS = 61000; return f }, ReasonDuration},
		{"frame too large", ch, t0, func(f []Frame) []Frame { f[2].Image = bytes.Repeat([]byte{1}, 3<<20); return f }, ReasonFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frames, eng := burst(good...)
			if tc.mutate != nil {
				frames = tc.mutate(frames)
			}
			res, err := New(Config{Engine: eng}).Check(context.Background(), tc.ch, frames, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed || !slices.Equal(res.Reasons, []string{tc.reason}) {
				t.Fatalf("passed=%v reasons=%v, want %s", res.Passed, res.Reasons, tc.reason)
			}
			if eng.calls != 0 {
				t.Fatalf("engine asked %d times", eng.calls)
			}
		})
	}
}

// Engine failures: unavailability is an error (fail closed), an unreadable
// frame is a failed check.
func TestCheckEngineFailures(t *testing.T) {
	good := []pose{frontal(), left(), frontal(), right(), frontal()}
	ch := challenge(TurnLeft, TurnRight)

	frames, eng := burst(good...)
	eng.errs["frame-2"] = face.ErrUnavailable.With("down")
	if _, err := New(Config{Engine: eng}).Check(context.Background(), ch, frames, t0); !errors.Is(err, face.ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	if _, err := New(Config{}).Check(context.Background(), ch, frames, t0); !errors.Is(err, face.ErrUnavailable) {
		t.Fatalf("no engine: err %v, want ErrUnavailable", err)
	}

	frames, eng = burst(good...)
	eng.errs["frame-1"] = face.ErrImage
	res, err := New(Config{Engine: eng}).Check(context.Background(), ch, frames, t0)
	if err != nil || res.Passed || !slices.Equal(res.Reasons, []string{ReasonUnreadable}) {
		t.Fatal(res, err)
	}

	frames, eng = burst(good...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Config{Engine: eng}).Check(ctx, ch, frames, t0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestIssue(t *testing.T) {
	c := New(Config{})
	nonces := map[string]bool{}
	lengths := map[int]int{}
	orders := map[string]bool{}
	for range 500 {
		ch := c.Issue(t0)
		if len(ch.Nonce) != 22 || nonces[ch.Nonce] {
			t.Fatalf("nonce %q", ch.Nonce)
		}
		nonces[ch.Nonce] = true
		if !ch.IssuedAt.Equal(t0) || !ch.Deadline.Equal(t0.Add(time.Minute)) {
			t.Fatal(ch)
		}
		lengths[len(ch.Actions)]++
		if turns(ch.Actions) == 0 {
			t.Fatalf("no turn in %v", ch.Actions)
		}
		for i := 1; i < len(ch.Actions); i++ {
			if ch.Actions[i] == ch.Actions[i-1] {
				t.Fatalf("repeated action in %v", ch.Actions)
			}
		}
		orders[fmt.Sprint(ch.Actions)] = true
	}
	if lengths[2] == 0 || lengths[3] == 0 || lengths[2]+lengths[3] != 500 {
		t.Fatalf("lengths %v", lengths)
	}
	// 2 actions: 6 orders, minus blink-blink (never drawn); 3 actions: 12
	// orders without repeats, minus none (blink,x,blink has a turn).
	if len(orders) != 6+12 {
		t.Fatalf("%d distinct orders: %v", len(orders), orders)
	}
}

func TestIssueFixedActions(t *testing.T) {
	fixed := []Action{TurnLeft, Blink, TurnRight}
	c := New(Config{FixedActions: fixed, TTL: 30 * time.Second})
	a, b := c.Issue(t0), c.Issue(t0)
	if !slices.Equal(a.Actions, fixed) || !slices.Equal(b.Actions, fixed) || a.Nonce == b.Nonce || !a.Deadline.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("%+v %+v", a, b)
	}
	a.Actions[0] = Blink
	if c.Issue(t0).Actions[0] != TurnLeft {
		t.Fatal("the fixed order is shared with issued challenges")
	}
}
