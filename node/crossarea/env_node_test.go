// The helpers of this package's tests beyond the areas' own
// (risk/api/trusttest, journeys/api/journeynode): each area's own tests
// live in its api package.
package crossarea_test

import (
	"bytes"
	"context"
	"time"

	"github.com/trustd/trustd/identity/liveness"
)

// fakePresence passes when every frame is "face:<x>", tracking face x.
type fakePresence struct{}

func (fakePresence) Issue(now time.Time) liveness.Challenge {
	return liveness.Challenge{Nonce: "n" + now.Format("150405.000000000"), Actions: []liveness.Action{liveness.TurnLeft, liveness.Blink},
		IssuedAt: now, Deadline: now.Add(time.Minute)}
}
func (fakePresence) Check(_ context.Context, c liveness.Challenge, frames []liveness.Frame, _ time.Time) (liveness.Result, error) {
	for _, f := range frames {
		if !bytes.HasPrefix(f.Image, []byte("face:")) {
			return liveness.Result{Frames: len(frames), Reasons: []string{"no_face_tracked"}}, nil
		}
	}
	return liveness.Result{Passed: true, Frames: len(frames), Observed: c.Actions, Reference: []float32{float32(frames[0].Image[5])}}, nil
}
