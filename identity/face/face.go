// Package face is the service's face engine as the identity and journey
// modules see it: detect faces in an image and measure them (pose, eyes,
// a descriptor for comparison). Pure Go has no face-embedding model, so the
// engine runs as a sidecar process (identity/face/sidecar, @vladmandic/human) reached
// over loopback HTTP with a shared secret; this package holds the types,
// the client and the comparison rule. Descriptors live in memory only:
// nothing here persists them.
package face

import (
	"context"
	"image"

	"github.com/trustd/trustd/platform/errcode"
)

// Face is what the engine measured of one face in one image.
type Face struct {
	Box        image.Rectangle // in pixels of the analysed image
	Score      float64         // detector confidence, 0..1
	Yaw, Pitch float64         // head pose in degrees; positive yaw = the person turned to their left
	EyesOpen   float64         // 0 closed .. 1 open, mean of both eyes
	Descriptor []float32       // comparison descriptor; in memory only, never stored or logged
}

// Analysis is the engine's answer for one image.
type Analysis struct {
	Width, Height int
	Faces         []Face // best first
}

// Engine analyses images. Implementations must be safe for concurrent use.
type Engine interface {
	Analyze(ctx context.Context, img []byte) (Analysis, error)
}

// ErrUnavailable is returned when no face engine is configured or the
// sidecar does not answer: callers fail closed (never "verified").
var ErrUnavailable = errcode.New("face-engine-unavailable", errcode.Unavailable,
	"the face engine is not configured or not answering; facial checks cannot run now")
