package proc

import (
	"bufio"
	"os/exec"
	"testing"
	"time"
)

// mustStart starts name args and closes the returned channel once the
// process has been waited for.
func mustStart(t *testing.T, name string, args ...string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	return mustStartCmd(t, exec.Command(name, args...))
}

func mustStartCmd(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, chan struct{}) {
	t.Helper()
	name := cmd.Path
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd, done
}

func TestStop(t *testing.T) {
	t.Run("a child that honours SIGTERM ends before its grace", func(t *testing.T) {
		cmd, done := mustStart(t, "sleep", "60")
		start := time.Now()
		Stop(cmd.Process, done, 30*time.Second)
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("Stop took %v; SIGTERM should have ended sleep at once", took)
		}
		if ws := cmd.ProcessState; ws == nil || ws.Success() {
			t.Fatalf("the child should have died of a signal, state %v", ws)
		}
	})
	t.Run("a child that ignores SIGTERM is killed after its grace", func(t *testing.T) {
		// An ignored signal stays ignored across exec: the sleep the shell
		// becomes ignores TERM, so only SIGKILL ends it.
		cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; exec sleep 60`)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd, done := mustStartCmd(t, cmd)
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("the shell did not get ready: %q, %v", line, err)
		}
		start := time.Now()
		Stop(cmd.Process, done, 300*time.Millisecond)
		took := time.Since(start)
		if took < 300*time.Millisecond || took > 10*time.Second {
			t.Fatalf("Stop took %v; want the 300ms grace then the kill", took)
		}
	})
	t.Run("a child that has exited already is left alone", func(t *testing.T) {
		cmd, done := mustStart(t, "true")
		<-done
		Stop(cmd.Process, done, time.Second) // must not block nor signal a reused pid
	})
}
