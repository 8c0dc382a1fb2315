// Package proc ends child processes one way everywhere: SIGTERM first, so
// the child can leave cleanly, then SIGKILL once its grace has run out. It
// never starts a process and never waits for one itself: the caller's own
// waiter (the goroutine that calls cmd.Wait) says when the child is gone.
package proc

import (
	"os"
	"syscall"
	"time"
)

// Stop ends p, whose waiter closes done once it has exited: SIGTERM, then
// SIGKILL after grace. It returns when done is closed, at once for a
// process that has exited already.
func Stop(p *os.Process, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
}
