// Package deadline gives a multi-node test a deadline that dumps every
// goroutine's stack instead of hanging the suite (issue 23: a graceful
// leave once hung a test run for 30 minutes with nothing to show why).
// It never touches what the test runs; it only reports, then unblocks
// what it was told to, then ends the process if the test still hangs.
package deadline

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// Default is a multi-node test's deadline unless TRUSTD_TEST_DEADLINE
// (a Go duration) says otherwise, or go test's -timeout ends sooner.
const Default = 5 * time.Minute

// grace is how long a test that missed its deadline gets, after the dump
// and the unblock function, to end before the process is ended.
const grace = 30 * time.Second

// Arm starts t's deadline, within from now (0: Default, or
// TRUSTD_TEST_DEADLINE). When it passes before the test ends, Arm writes
// every goroutine's stack to the test log and to stderr, fails t, calls
// unblock (nil: nothing; for example closing the test's nodes so that the
// waits on them return), and if t has still not ended grace later, ends
// the process with the dump on stderr rather than hang the suite. The
// deadline is disarmed when t ends; Arm registers that with t.Cleanup, so
// call it before registering the cleanups that could hang (they run
// first).
func Arm(t testing.TB, within time.Duration, unblock func()) {
	t.Helper()
	arm(t, within, unblock, os.Stderr)
}

func arm(t testing.TB, within time.Duration, unblock func(), stderr io.Writer) {
	if within <= 0 {
		within = Default
		if v := os.Getenv("TRUSTD_TEST_DEADLINE"); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				within = d
			}
		}
	}
	// Leave room for the dump before go test's own -timeout panics.
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := dt.Deadline(); ok {
			if left := time.Until(end) - grace - 5*time.Second; left > 0 && left < within {
				within = left
			}
		}
	}
	done := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(done) }) })
	start := time.Now()
	go func() {
		timer := time.NewTimer(within)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
		}
		dump := Goroutines()
		msg := fmt.Sprintf("%s: still running %v after it started (deadline %v); every goroutine:\n%s",
			t.Name(), time.Since(start).Round(time.Millisecond), within, dump)
		fmt.Fprintln(stderr, msg)
		t.Errorf("%s", msg)
		if unblock != nil {
			unblock()
		}
		select {
		case <-done:
		case <-time.After(grace):
			fmt.Fprintf(stderr, "%s: still hanging %v after its deadline; ending the test process. Every goroutine:\n%s\n",
				t.Name(), grace, Goroutines())
			os.Exit(2)
		}
	}()
}

// Goroutines is every goroutine's stack, as a panic prints them.
func Goroutines() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}
