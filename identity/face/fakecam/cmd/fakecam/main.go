// Command fakecam writes a fake-camera .y4m video of pigo's sample face
// performing liveness actions, for Chromium's
// --use-file-for-fake-video-capture:
//
//	go run ./identity/face/fakecam/cmd/fakecam -out /tmp/face.y4m -actions turn_left,blink,turn_right
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/trustd/trustd/identity/face/fakecam"
	"github.com/trustd/trustd/identity/liveness"
)

func main() {
	out := flag.String("out", "face.y4m", "output file")
	actions := flag.String("actions", "turn_left,blink,turn_right", "comma-separated actions: turn_left, turn_right, blink")
	w := flag.Int("width", 640, "frame width (even)")
	h := flag.Int("height", 480, "frame height (even)")
	fps := flag.Int("fps", 10, "frames per second")
	flag.Parse()
	s := fakecam.Script{Width: *w, Height: *h, FPS: *fps}
	for _, a := range strings.Split(*actions, ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.Actions = append(s.Actions, liveness.Action(a))
		}
	}
	if err := fakecam.WriteFile(*out, s); err != nil {
		fmt.Fprintln(os.Stderr, "fakecam:", err)
		os.Exit(1)
	}
}
