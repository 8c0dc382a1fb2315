package node

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
)

// faceEngine is the node's face engine: the client of a configured or
// supervised sidecar, or nothing yet (every analysis then fails closed
// with face.ErrUnavailable).
type faceEngine struct{ c atomic.Pointer[face.Client] }

func (e *faceEngine) Analyze(ctx context.Context, img []byte) (face.Analysis, error) {
	c := e.c.Load()
	if c == nil {
		return face.Analysis{}, face.ErrUnavailable
	}
	return c.Analyze(ctx, img)
}

// checkFaceConfig refuses a face engine configuration that cannot work,
// before anything is started.
func checkFaceConfig(cfg Config) error {
	if cfg.FaceSidecarDir != "" && cfg.Face.URL != "" {
		return errors.New("node: set either a face engine URL or a sidecar to start, not both")
	}
	if cfg.FaceSidecarDir != "" {
		if err := face.SidecarInstalled(cfg.FaceSidecarDir); err != nil {
			return err
		}
	}
	if cfg.Face.URL != "" {
		if _, err := face.NewClient(cfg.Face); err != nil {
			return err
		}
	}
	return nil
}

// startFace connects the configured face engine, or starts and supervises
// the sidecar (restarting it after a crash, with backoff): analyses fail
// closed while it is starting or down.
func (n *Node) startFace() {
	cfg := n.cfg
	n.prepareFace()
	switch {
	case cfg.Face.URL != "":
		c, err := face.NewClient(cfg.Face)
		if err != nil { // checked at start; kept for safety
			n.log.Error("face engine", "err", err)
			return
		}
		n.faceEng.c.Store(c)
		n.log.Info("face engine configured", "url", cfg.Face.URL, "match_threshold", c.MatchThreshold())
	case cfg.FaceSidecarDir != "":
		ctx, cancel := context.WithCancel(context.Background())
		n.stopFace, n.faceDone = cancel, make(chan struct{})
		go func() {
			defer close(n.faceDone)
			n.superviseSidecar(ctx)
		}()
	}
}

// prepareFace builds the engine wrapper and the presence checker before
// the API is built, so identity sessions and journeys hold them from the
// start; the wrapper fails closed until startFace connects an engine.
func (n *Node) prepareFace() {
	if n.faceEng != nil {
		return
	}
	n.faceEng = &faceEngine{}
	lc := n.cfg.Liveness
	lc.Engine = n.faceEng
	n.liveness = liveness.New(lc)
}

// faceConfigured reports whether this node has a face engine to use.
func (n *Node) faceConfigured() bool { return n.cfg.Face.URL != "" || n.cfg.FaceSidecarDir != "" }

// faceMatch is face.Compare at the node's threshold.
func (n *Node) faceMatch(a, b []float32) (float64, bool) {
	return face.Compare(a, b, n.FaceMatchThreshold())
}

func (n *Node) superviseSidecar(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		s, err := face.StartSidecar(ctx, face.SidecarConfig{Dir: n.cfg.FaceSidecarDir, Logger: n.log})
		if err == nil {
			fc := s.Config()
			fc.Timeout, fc.MatchThreshold, fc.MaxImageBytes = n.cfg.Face.Timeout, n.cfg.Face.MatchThreshold, n.cfg.Face.MaxImageBytes
			var c *face.Client
			if c, err = face.NewClient(fc); err == nil {
				n.faceEng.c.Store(c)
				backoff = time.Second
				select {
				case <-s.Exited():
					n.faceEng.c.Store(nil)
					n.log.Warn("face sidecar exited; facial checks fail closed until it is back")
				case <-ctx.Done():
					n.faceEng.c.Store(nil)
					s.Stop()
					return
				}
			} else {
				s.Stop()
			}
		}
		if err != nil && ctx.Err() == nil {
			n.log.Warn("face sidecar did not start", "err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

func (n *Node) closeFace() {
	if n.stopFace != nil {
		n.stopFace()
		<-n.faceDone
	}
}

// FaceEngine is the node's face engine, for identity sessions and
// journeys. It is never nil: without a configured or running sidecar
// every analysis returns face.ErrUnavailable (callers fail closed).
func (n *Node) FaceEngine() face.Engine {
	if n.faceEng == nil {
		return face.Unavailable{}
	}
	return n.faceEng
}

// FaceMatchThreshold is the configured cosine threshold for face.Compare
// (uncalibrated, identity/face/DESIGN.md).
func (n *Node) FaceMatchThreshold() float64 {
	if n.cfg.Face.MatchThreshold != 0 {
		return n.cfg.Face.MatchThreshold
	}
	return face.DefaultMatchThreshold
}

// Liveness is the node's presence checker over its face engine.
func (n *Node) Liveness() *liveness.Checker {
	if n.liveness == nil {
		return liveness.New(liveness.Config{Engine: n.FaceEngine()})
	}
	return n.liveness
}
