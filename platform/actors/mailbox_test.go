package actors

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// recordingInvoker records the messages a mailbox hands it and fails the
// test if two goroutines are ever inside it at once.
type recordingInvoker struct {
	t       *testing.T
	inside  atomic.Int32
	mu      sync.Mutex
	got     []any
	onUser  func(any)
	escalts atomic.Int32
}

func (r *recordingInvoker) enter(msg any) {
	if r.inside.Add(1) != 1 {
		r.t.Errorf("two goroutines ran the actor at once (message %v)", msg)
	}
	r.mu.Lock()
	r.got = append(r.got, msg)
	r.mu.Unlock()
}

func (r *recordingInvoker) InvokeSystemMessage(msg any) { r.enter(msg); r.inside.Add(-1) }

func (r *recordingInvoker) InvokeUserMessage(msg any) {
	r.enter(msg)
	if r.onUser != nil {
		r.onUser(msg)
	}
	r.inside.Add(-1)
}

func (r *recordingInvoker) EscalateFailure(any, any) { r.inside.Add(-1); r.escalts.Add(1) }

func (r *recordingInvoker) messages() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.got...)
}

// queuedDispatcher holds scheduled runs until the test releases them, so a
// test decides when the "pinned goroutine" gets to run.
type queuedDispatcher struct{ runs chan func() }

func (d *queuedDispatcher) Schedule(fn func()) { d.runs <- fn }
func (d *queuedDispatcher) Throughput() int    { return 300 }

func newTestMailbox(t *testing.T) (*callerRunsMailbox, *recordingInvoker, *queuedDispatcher) {
	m := newCallerRunsMailbox().(*callerRunsMailbox)
	inv := &recordingInvoker{t: t}
	d := &queuedDispatcher{runs: make(chan func(), 16)}
	m.RegisterHandlers(inv, d)
	return m, inv, d
}

func TestAPostToAnIdleMailboxRunsOnThePoster(t *testing.T) {
	m, inv, d := newTestMailbox(t)
	m.PostUserMessage("a")
	if got := inv.messages(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("after posting to an idle mailbox the actor ran %v, want [a] before Post returned", got)
	}
	if len(d.runs) != 0 {
		t.Fatalf("an idle mailbox with one message scheduled %d runs on the pinned goroutine", len(d.runs))
	}
	if m.status.Load() != mailboxIdle {
		t.Fatal("the mailbox stayed running after its only message")
	}
}

func TestThePosterRunsOneMessageAndHandsTheRestOn(t *testing.T) {
	m, inv, d := newTestMailbox(t)
	// While the poster runs "first", two more messages arrive (posted from
	// inside Receive, as other callers would from other goroutines): they
	// must not run on the poster's goroutine.
	inv.onUser = func(msg any) {
		if msg == "first" {
			m.PostUserMessage("second")
			m.PostUserMessage("third")
		}
	}
	m.PostUserMessage("first")
	if got := inv.messages(); len(got) != 1 {
		t.Fatalf("the poster ran %v, want only its own message", got)
	}
	if len(d.runs) != 1 {
		t.Fatalf("%d runs scheduled for the rest, want 1", len(d.runs))
	}
	// A poster that finds the mailbox running only queues.
	m.PostUserMessage("fourth")
	if got := inv.messages(); len(got) != 1 {
		t.Fatalf("a poster ran %v while the mailbox was running elsewhere", got)
	}
	(<-d.runs)()
	got := inv.messages()
	want := []any{"first", "second", "third", "fourth"}
	if len(got) != len(want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ran %v, want %v (in order)", got, want)
		}
	}
	if m.status.Load() != mailboxIdle || len(d.runs) != 0 {
		t.Fatal("the mailbox did not go idle after the pinned run emptied it")
	}
}

func TestSystemMessagesRunFirstAndSuspendHoldsUserMessages(t *testing.T) {
	m, inv, d := newTestMailbox(t)
	m.PostSystemMessage(&actor.SuspendMailbox{})
	if len(inv.messages()) != 0 || len(d.runs) != 1 {
		t.Fatal("a system message must run on the pinned goroutine, not the poster")
	}
	m.PostUserMessage("held") // mailbox running (scheduled): only queued
	(<-d.runs)()              // suspends; "held" stays
	if got := inv.messages(); len(got) != 0 {
		t.Fatalf("a suspended mailbox ran %v", got)
	}
	m.PostUserMessage("also held")
	for len(d.runs) > 0 {
		(<-d.runs)()
	}
	if got := inv.messages(); len(got) != 0 {
		t.Fatalf("a suspended mailbox ran %v", got)
	}
	m.PostSystemMessage("sys")
	m.PostSystemMessage(&actor.ResumeMailbox{})
	for len(d.runs) > 0 {
		(<-d.runs)()
	}
	got := inv.messages()
	want := []any{"sys", "held", "also held"}
	if len(got) != len(want) {
		t.Fatalf("after resume ran %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after resume ran %v, want %v", got, want)
		}
	}
}

func TestAPanicInReceiveEscalatesAndTheMailboxGoesOn(t *testing.T) {
	m, inv, _ := newTestMailbox(t)
	inv.onUser = func(msg any) {
		if msg == "boom" {
			panic("boom")
		}
	}
	m.PostUserMessage("boom")
	if inv.escalts.Load() != 1 {
		t.Fatalf("escalations = %d, want 1", inv.escalts.Load())
	}
	m.PostUserMessage("after")
	if got := inv.messages(); len(got) != 2 || got[1] != "after" {
		t.Fatalf("ran %v, want the mailbox to go on after the escalation", got)
	}
}

// Many posters at once: every message runs exactly once, never two at a
// time (the invoker checks; -race checks the rest), and the mailbox ends
// idle and empty.
func TestConcurrentPostersRunEveryMessageOnce(t *testing.T) {
	m := newCallerRunsMailbox().(*callerRunsMailbox)
	inv := &recordingInvoker{t: t}
	w := newPinnedDispatcher()
	defer w.stop()
	m.RegisterHandlers(inv, w)
	const posters, each = 16, 2000
	var wg sync.WaitGroup
	for p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m.PostUserMessage(p*each + i)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(inv.messages()) < posters*each && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got := inv.messages()
	if len(got) != posters*each {
		t.Fatalf("ran %d messages, want %d", len(got), posters*each)
	}
	seen := make([]bool, posters*each)
	last := make([]int, posters)
	for i := range last {
		last[i] = -1
	}
	for _, v := range got {
		n := v.(int)
		if seen[n] {
			t.Fatalf("message %d ran twice", n)
		}
		seen[n] = true
		p, i := n/each, n%each
		if i <= last[p] {
			t.Fatalf("poster %d's message %d ran after its message %d", p, i, last[p])
		}
		last[p] = i
	}
	for time.Now().Before(deadline) && m.status.Load() != mailboxIdle {
		time.Sleep(time.Millisecond)
	}
	if m.status.Load() != mailboxIdle || m.UserMessageCount() != 0 {
		t.Fatalf("mailbox ended status %d with %d messages", m.status.Load(), m.UserMessageCount())
	}
}

// Stopping the system while callers run drains on their own goroutines:
// Stop returns, every caller's ask ends with an answer, ErrStopped or
// ErrTimeout (never a hang or a panic), and the asks that were answered
// ran exactly once.
func TestStopWhileCallersRunDrains(t *testing.T) {
	s := NewSystem(Config{Shards: 2}, nil)
	const callers = 16
	var wg sync.WaitGroup
	var answered, other atomic.Int64
	stop := make(chan struct{})
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				op := &Consume{ID: fmt.Sprintf("c%d-%d", c, i), Expires: time.Now().Add(time.Minute).UnixNano()}
				switch err := s.Ask(i, op, 2*time.Second); {
				case err == nil:
					if !op.First {
						t.Errorf("a fresh marker %s was not first", op.ID)
					}
					answered.Add(1)
				case errors.Is(err, ErrStopped), errors.Is(err, ErrTimeout):
					other.Add(1)
					if errors.Is(err, ErrStopped) {
						return
					}
				default:
					t.Errorf("ask during stop: %v", err)
					return
				}
			}
		}()
	}
	for answered.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while callers were asking")
	}
	close(stop)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("callers still waiting 10 s after Stop")
	}
	t.Logf("%d asks answered, %d refused or timed out around the stop", answered.Load(), other.Load())
}
