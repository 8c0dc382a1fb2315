package node

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// Issue 23: a step of the stop that cannot finish is forced: logged, left
// behind, and reported as ErrStopForced within its bound.
func TestAStopStepThatCannotFinishIsForcedWithinItsBound(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler)}
	stuck := make(chan struct{})
	defer close(stuck)
	start := time.Now()
	err := n.stopStep("stuck", 100*time.Millisecond, func() error { <-stuck; return nil })
	if !errors.Is(err, ErrStopForced) || time.Since(start) > 2*time.Second {
		t.Fatalf("stuck step: %v after %v, want ErrStopForced after 100ms", err, time.Since(start))
	}
	want := errors.New("closed with an error")
	if err := n.stopStep("quick", time.Second, func() error { return want }); err != want {
		t.Fatalf("a step that finished: %v, want its own error", err)
	}
}
