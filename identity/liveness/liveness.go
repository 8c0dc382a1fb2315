// Package liveness is the service's active presence check: the server
// issues a random sequence of actions (turn left, turn right, blink) with a
// nonce and a deadline; the client sends a short burst of frames; the server
// analyses every frame with the face engine and checks order, timing and
// continuity (one face tracked throughout, no repeated frame). It is not
// presentation-attack detection evaluated to ISO/IEC 30107-3 and cannot
// detect virtual-camera injection or deepfakes; results say so.
package liveness

import "time"

// Action is one step of a challenge.
type Action string

// The actions a challenge is built from.
const (
	TurnLeft  Action = "turn_left"
	TurnRight Action = "turn_right"
	Blink     Action = "blink"
)

// Challenge is issued by the server and kept server-side (the client sees
// Nonce, Actions and Deadline).
type Challenge struct {
	Nonce    string    `json:"nonce"`
	Actions  []Action  `json:"actions"`
	IssuedAt time.Time `json:"issued_at"`
	Deadline time.Time `json:"deadline"`
}

// Frame is one captured frame with the client's capture time offset from
// the first frame.
type Frame struct {
	Image    []byte
	OffsetMS int
}

// Result is the outcome of checking a burst of frames against a challenge.
type Result struct {
	Passed   bool     `json:"passed"`
	Reasons  []string `json:"reasons,omitempty"` // stable codes when not passed
	Frames   int      `json:"frames"`
	Observed []Action `json:"observed"` // the actions seen, in order
	// Reference is the descriptor of the tracked face (in memory only) for
	// comparing with a document portrait or an enrolled face.
	Reference []float32 `json:"-"`
}
