package liveness

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"image"
	"io"
	"math"
	"math/big"
	"time"

	"github.com/trustd/trustd/identity/face"
)

// Reasons a check did not pass (Result.Reasons); stable codes.
const (
	ReasonExpired       = "challenge_expired"     // checked after the deadline
	ReasonNoChallenge   = "challenge_invalid"     // empty or malformed challenge
	ReasonTooFewFrames  = "too_few_frames"        // fewer than MinFrames
	ReasonTooManyFrames = "too_many_frames"       // more than MaxFrames
	ReasonBadTiming     = "frame_timing_invalid"  // offsets not starting at 0 and strictly increasing
	ReasonDuration      = "duration_out_of_range" // the burst is shorter or longer than allowed
	ReasonDuplicate     = "duplicate_frame"       // the same image bytes twice
	ReasonUnreadable    = "frame_unreadable"      // the engine could not decode a frame
	ReasonNoFace        = "no_face"               // a frame without a confident face
	ReasonMultipleFaces = "multiple_faces"        // a frame with more than one confident face
	ReasonNotContinuous = "face_not_continuous"   // consecutive descriptors too different
	ReasonFaceJumped    = "face_jumped"           // the face box moved or resized too much between frames
	ReasonActions       = "actions_not_observed"  // the challenged actions were not seen in order
	ReasonExtraTurns    = "unexpected_turns"      // turns that were not challenged
	ReasonNoFrontal     = "no_frontal_frame"      // no frame frontal enough for a reference
	ReasonFrameTooLarge = "frame_too_large"       // a frame over MaxFrameBytes
	ReasonNoDescriptor  = "no_descriptor"         // the engine gave no descriptor for a face
)

// Config tunes a Checker. Every threshold is UNCALIBRATED (see
// identity/face/DESIGN.md): they were set from the engine's documented
// behaviour and synthetic images, not measured on real people.
type Config struct {
	// Engine analyses frames (required; face.Unavailable fails closed).
	Engine face.Engine
	// MinActions and MaxActions bound the challenge length (default 2, 3).
	MinActions, MaxActions int
	// TTL is the time from Issue to the deadline (default 60s).
	TTL time.Duration
	// MinFrames and MaxFrames bound a burst (default 4, 24).
	MinFrames, MaxFrames int
	// MaxFrameBytes bounds one frame (default 2 MiB).
	MaxFrameBytes int
	// MinDuration and MaxDuration bound the burst's span by its client
	// offsets (default 1s, 30s). The offsets are client-claimed; the
	// deadline is what the server enforces on its own clock.
	MinDuration, MaxDuration time.Duration
	// MinFaceScore is the detector confidence for a face to count (0.6).
	MinFaceScore float64
	// YawDegrees is the yaw a turn must reach (default 15).
	YawDegrees float64
	// FrontalDegrees is the largest |yaw| of a frontal frame: the
	// reference, and the return between two turns (default 8).
	FrontalDegrees float64
	// MaxPitch is the largest |pitch| of the reference frame (default 20).
	MaxPitch float64
	// EyesClosed and EyesOpen are the eyes-open levels of a blink: open,
	// then below EyesClosed, then open again (default 0.3, 0.6).
	EyesClosed, EyesOpen float64
	// ContinuityThreshold is the cosine similarity consecutive frames'
	// descriptors must reach (default 0.7).
	ContinuityThreshold float64
	// MaxShift is the largest move of the box centre between consecutive
	// frames, as a fraction of the box width (default 0.5); MaxResize the
	// largest width ratio (default 1.5).
	MaxShift, MaxResize float64
	// Rand is the randomness of challenges (default crypto/rand).
	Rand io.Reader
	// FixedActions, when set, is the action order of every challenge (the
	// nonce stays random). For browser tests driven by a fake-camera video
	// whose script is fixed; never set it in production: a known order is
	// answered by a recording.
	FixedActions []Action
}

// Checker issues challenges and checks bursts of frames against them. It
// holds no state: the caller keeps the issued Challenge server-side and
// must make its nonce single-use (Check does not remember nonces).
type Checker struct{ cfg Config }

// New returns a Checker with defaults filled in.
func New(cfg Config) *Checker {
	if cfg.Engine == nil {
		cfg.Engine = face.Unavailable{}
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt(&cfg.MinActions, 2)
	defInt(&cfg.MaxActions, 3)
	cfg.MaxActions = max(cfg.MaxActions, cfg.MinActions)
	if cfg.TTL <= 0 {
		cfg.TTL = 60 * time.Second
	}
	defInt(&cfg.MinFrames, 4)
	defInt(&cfg.MaxFrames, 24)
	cfg.MaxFrames = max(cfg.MaxFrames, cfg.MinFrames)
	defInt(&cfg.MaxFrameBytes, 2<<20)
	if cfg.MinDuration <= 0 {
		cfg.MinDuration = time.Second
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = 30 * time.Second
	}
	def(&cfg.MinFaceScore, 0.6)
	def(&cfg.YawDegrees, 15)
	def(&cfg.FrontalDegrees, 8)
	def(&cfg.MaxPitch, 20)
	def(&cfg.EyesClosed, 0.3)
	def(&cfg.EyesOpen, 0.6)
	def(&cfg.ContinuityThreshold, 0.7)
	def(&cfg.MaxShift, 0.5)
	def(&cfg.MaxResize, 1.5)
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	return &Checker{cfg: cfg}
}

// Config is the effective configuration.
func (c *Checker) Config() Config { return c.cfg }

var allActions = []Action{TurnLeft, TurnRight, Blink}

// Issue returns a new challenge: a 128-bit random nonce and MinActions to
// MaxActions actions in random order, never the same action twice in a
// row and at least one turn.
func (c *Checker) Issue(now time.Time) Challenge {
	nonce := make([]byte, 16)
	if _, err := io.ReadFull(c.cfg.Rand, nonce); err != nil {
		// crypto/rand does not fail on supported platforms; a failing test
		// reader must not produce a predictable nonce silently.
		panic("liveness: randomness failed: " + err.Error())
	}
	if len(c.cfg.FixedActions) > 0 {
		return Challenge{Nonce: base64.RawURLEncoding.EncodeToString(nonce), Actions: append([]Action(nil), c.cfg.FixedActions...),
			IssuedAt: now, Deadline: now.Add(c.cfg.TTL)}
	}
	n := c.cfg.MinActions + c.randN(c.cfg.MaxActions-c.cfg.MinActions+1)
	for {
		acts := make([]Action, 0, n)
		turns := 0
		for len(acts) < n {
			a := allActions[c.randN(len(allActions))]
			if len(acts) > 0 && acts[len(acts)-1] == a {
				continue
			}
			if a != Blink {
				turns++
			}
			acts = append(acts, a)
		}
		if turns > 0 {
			return Challenge{Nonce: base64.RawURLEncoding.EncodeToString(nonce), Actions: acts,
				IssuedAt: now, Deadline: now.Add(c.cfg.TTL)}
		}
	}
}

func (c *Checker) randN(n int) int {
	if n <= 1 {
		return 0
	}
	v, err := rand.Int(c.cfg.Rand, big.NewInt(int64(n)))
	if err != nil {
		panic("liveness: randomness failed: " + err.Error())
	}
	return int(v.Int64())
}

// Check analyses every frame with the engine and decides whether the burst
// shows one face, tracked throughout, performing the challenged actions in
// order before the deadline. A failed check is a Result with Passed false
// and reasons; an error means the check could not run (the engine is
// unavailable, face.ErrUnavailable, or ctx ended): callers fail closed.
// Cheap checks (deadline, counts, timing, duplicates) run before the
// engine is asked anything.
func (c *Checker) Check(ctx context.Context, ch Challenge, frames []Frame, now time.Time) (Result, error) {
	res := Result{Frames: len(frames), Observed: []Action{}}
	fail := func(reasons ...string) (Result, error) {
		res.Passed = false
		res.Reasons = append(res.Reasons, reasons...)
		res.Reference = nil
		return res, nil
	}
	if ch.Nonce == "" || len(ch.Actions) == 0 || ch.Deadline.IsZero() {
		return fail(ReasonNoChallenge)
	}
	for _, a := range ch.Actions {
		if a != TurnLeft && a != TurnRight && a != Blink {
			return fail(ReasonNoChallenge)
		}
	}
	if now.After(ch.Deadline) || now.Before(ch.IssuedAt) {
		return fail(ReasonExpired)
	}
	if len(frames) < c.cfg.MinFrames {
		return fail(ReasonTooFewFrames)
	}
	if len(frames) > c.cfg.MaxFrames {
		return fail(ReasonTooManyFrames)
	}
	seen := make(map[[32]byte]bool, len(frames))
	for i, f := range frames {
		if len(f.Image) > c.cfg.MaxFrameBytes {
			return fail(ReasonFrameTooLarge)
		}
		if (i == 0 && f.OffsetMS != 0) || (i > 0 && f.OffsetMS <= frames[i-1].OffsetMS) {
			return fail(ReasonBadTiming)
		}
		h := sha256.Sum256(f.Image)
		if seen[h] {
			return fail(ReasonDuplicate)
		}
		seen[h] = true
	}
	span := time.Duration(frames[len(frames)-1].OffsetMS) * time.Millisecond
	if span < c.cfg.MinDuration || span > c.cfg.MaxDuration || span > ch.Deadline.Sub(ch.IssuedAt) {
		return fail(ReasonDuration)
	}

	tracked := make([]face.Face, len(frames))
	for i, f := range frames {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		a, err := c.cfg.Engine.Analyze(ctx, f.Image)
		if err != nil {
			if errors.Is(err, face.ErrImage) {
				return fail(ReasonUnreadable)
			}
			return Result{}, err
		}
		var confident []face.Face
		for _, fc := range a.Faces {
			if fc.Score >= c.cfg.MinFaceScore {
				confident = append(confident, fc)
			}
		}
		switch {
		case len(confident) == 0:
			return fail(ReasonNoFace)
		case len(confident) > 1:
			return fail(ReasonMultipleFaces)
		}
		if len(confident[0].Descriptor) == 0 {
			return fail(ReasonNoDescriptor)
		}
		tracked[i] = confident[0]
	}
	return c.judge(ch, tracked, res)
}

// judge is the sequence logic over the tracked faces, separate from the
// engine so it is tested on synthetic analyses.
func (c *Checker) judge(ch Challenge, faces []face.Face, res Result) (Result, error) {
	var reasons []string
	add := func(r string) {
		for _, x := range reasons {
			if x == r {
				return
			}
		}
		reasons = append(reasons, r)
	}
	for i := 1; i < len(faces); i++ {
		prev, cur := faces[i-1], faces[i]
		if sim, ok := face.Compare(prev.Descriptor, cur.Descriptor, c.cfg.ContinuityThreshold); !ok || math.IsNaN(sim) {
			add(ReasonNotContinuous)
		}
		if jumped(prev.Box, cur.Box, c.cfg.MaxShift, c.cfg.MaxResize) {
			add(ReasonFaceJumped)
		}
	}
	res.Observed = c.observe(faces)
	if !subsequence(ch.Actions, res.Observed) {
		add(ReasonActions)
	} else if turns(res.Observed) != turns(ch.Actions) {
		// Every challenged turn was seen, and more: a recording that
		// performs all the turns must not answer every challenge.
		add(ReasonExtraTurns)
	}
	best := -1
	bestPose := math.Inf(1)
	for i, f := range faces {
		if math.Abs(f.Yaw) > c.cfg.FrontalDegrees || math.Abs(f.Pitch) > c.cfg.MaxPitch || f.EyesOpen < c.cfg.EyesOpen {
			continue
		}
		if p := math.Abs(f.Yaw) + math.Abs(f.Pitch); p < bestPose {
			best, bestPose = i, p
		}
	}
	if best < 0 {
		add(ReasonNoFrontal)
	}
	if len(reasons) > 0 {
		res.Passed = false
		res.Reasons = reasons
		return res, nil
	}
	res.Passed = true
	res.Reference = append([]float32(nil), faces[best].Descriptor...)
	return res, nil
}

// observe turns per-frame poses into events. A turn is a run of frames
// beyond ±YawDegrees that starts after a frontal frame (|yaw| ≤
// FrontalDegrees), so holding a turned head counts once and a new turn
// needs a return to the front. A blink is a frame with eyes below
// EyesClosed between an earlier and a later frame with eyes at or above
// EyesOpen.
func (c *Checker) observe(faces []face.Face) []Action {
	out := []Action{}
	armed := false // a frontal frame was seen since the last turn
	state := Action("")
	lastOpen := -1
	closedAt := -1
	for i, f := range faces {
		switch {
		case f.Yaw >= c.cfg.YawDegrees:
			if armed && state != TurnLeft {
				out = append(out, TurnLeft)
				armed = false
			}
			state = TurnLeft
		case f.Yaw <= -c.cfg.YawDegrees:
			if armed && state != TurnRight {
				out = append(out, TurnRight)
				armed = false
			}
			state = TurnRight
		case math.Abs(f.Yaw) <= c.cfg.FrontalDegrees:
			armed = true
			state = ""
		}
		switch {
		case f.EyesOpen >= c.cfg.EyesOpen:
			if closedAt >= 0 && lastOpen >= 0 && lastOpen < closedAt {
				out = append(out, Blink)
				closedAt = -1
			}
			lastOpen = i
		case f.EyesOpen < c.cfg.EyesClosed:
			if lastOpen >= 0 && closedAt < 0 {
				closedAt = i
			}
		}
	}
	return out
}

func subsequence(want, got []Action) bool {
	j := 0
	for _, a := range got {
		if j < len(want) && a == want[j] {
			j++
		}
	}
	return j == len(want)
}

func turns(as []Action) int {
	n := 0
	for _, a := range as {
		if a == TurnLeft || a == TurnRight {
			n++
		}
	}
	return n
}

func jumped(a, b image.Rectangle, maxShift, maxResize float64) bool {
	wa, wb := float64(a.Dx()), float64(b.Dx())
	if wa <= 0 || wb <= 0 {
		return true
	}
	if r := wb / wa; r > maxResize || r < 1/maxResize {
		return true
	}
	ca := [2]float64{float64(a.Min.X+a.Max.X) / 2, float64(a.Min.Y+a.Max.Y) / 2}
	cb := [2]float64{float64(b.Min.X+b.Max.X) / 2, float64(b.Min.Y+b.Max.Y) / 2}
	return math.Hypot(ca[0]-cb[0], ca[1]-cb[1]) > maxShift*math.Max(wa, wb)
}
