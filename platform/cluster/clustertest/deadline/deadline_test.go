package deadline

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is the part of testing.TB that Arm uses, recording failures.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestHanging" }
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, format)
	if len(args) > 0 {
		r.errs[len(r.errs)-1] = args[0].(string)
	}
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func TestAHangingTestIsFailedWithEveryGoroutineAndUnblocked(t *testing.T) {
	r := &recorder{TB: t}
	stuck := make(chan struct{})
	go func() { <-stuck }() // the "hang"
	unblocked := make(chan struct{})
	arm(r, 100*time.Millisecond, func() { close(stuck); close(unblocked) }, io.Discard)
	select {
	case <-unblocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline did not fire")
	}
	for _, f := range r.cleanups {
		f()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "TestAHangingTestIsFailedWithEveryGoroutineAndUnblocked") ||
		!strings.Contains(r.errs[0], "goroutine ") {
		t.Fatalf("the failure does not carry the goroutine dump: %.300q", r.errs)
	}
}

func TestATestThatEndsInTimeIsNotFailed(t *testing.T) {
	r := &recorder{TB: t}
	arm(r, 200*time.Millisecond, func() { t.Error("unblock called for a test that ended in time") }, io.Discard)
	for _, f := range r.cleanups {
		f()
	}
	time.Sleep(400 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) != 0 {
		t.Fatalf("failed: %q", r.errs)
	}
}
