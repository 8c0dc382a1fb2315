package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// A shard's mailbox runs its first message on the goroutine that posted it.
//
// protoactor lets an actor choose its Mailbox (actor.WithMailbox); this one
// keeps every guarantee of the default mailbox — one message at a time, in
// order, system messages first, a suspended mailbox holds user messages, a
// panic escalates to the supervisor — and changes only which goroutine runs
// the actor's Receive:
//
//   - A poster that finds the mailbox idle claims it (the same
//     compare-and-swap the default mailbox uses, so at most one goroutine
//     runs the actor at any time) and runs one user message itself, then
//     returns. An ask to an idle shard therefore costs no goroutine hand-off
//     at all: the caller queues its op, runs the drain, and finds its answer
//     already there.
//   - Whatever is left after that one message (asks queued meanwhile by
//     other callers, a sweep tick) is handed to the shard's pinned goroutine,
//     which runs until the mailbox is empty. A caller never keeps serving
//     other callers' asks for long: one drain (at most maxBatchRounds
//     batches) and it goes back to its own request.
//   - A poster that finds the mailbox running only queues: the goroutine
//     running it will get there.
//   - System messages (start, stop, restart, suspend) always run on the
//     pinned goroutine.
//
// Measured in test/bench/RESULTS.md ("Speed, session 3"): at 5,000 checks/s the
// pinned goroutine's two hand-offs per ask (caller → shard → caller) were
// the largest cost a check paid over the bare server.
type callerRunsMailbox struct {
	mu      sync.Mutex
	user    fifo
	system  fifo
	status  atomic.Int32 // mailboxIdle or mailboxRunning
	waiting atomic.Int32 // messages queued, both kinds
	// suspended is set and cleared by SuspendMailbox / ResumeMailbox, which
	// only the goroutine running the mailbox handles.
	suspended  atomic.Bool
	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
}

const (
	mailboxIdle int32 = iota
	mailboxRunning
)

func newCallerRunsMailbox() actor.Mailbox { return &callerRunsMailbox{} }

// PostUserMessage implements actor.Mailbox.
func (m *callerRunsMailbox) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user.push(msg)
	m.mu.Unlock()
	m.waiting.Add(1)
	if !m.status.CompareAndSwap(mailboxIdle, mailboxRunning) {
		return
	}
	if m.suspended.Load() || !m.runOne() {
		m.dispatcher.Schedule(m.processMessages)
		return
	}
	m.release()
}

// PostSystemMessage implements actor.Mailbox.
func (m *callerRunsMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.system.push(msg)
	m.mu.Unlock()
	m.waiting.Add(1)
	if m.status.CompareAndSwap(mailboxIdle, mailboxRunning) {
		m.dispatcher.Schedule(m.processMessages)
	}
}

// RegisterHandlers implements actor.Mailbox.
func (m *callerRunsMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

// Start implements actor.Mailbox.
func (m *callerRunsMailbox) Start() {}

// UserMessageCount implements actor.Mailbox.
func (m *callerRunsMailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.user.len()
}

// pop takes the next message: system messages first, user messages only
// when the mailbox is not suspended.
func (m *callerRunsMailbox) pop() (msg any, system bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg = m.system.pop(); msg != nil {
		return msg, true
	}
	if m.suspended.Load() {
		return nil, false
	}
	return m.user.pop(), false
}

// fifo is a queue that keeps its array: a shard's mailbox rarely holds more
// than a drain and a sweep tick, so it never grows past a few slots.
type fifo struct {
	items []any
	head  int
}

func (q *fifo) push(v any) { q.items = append(q.items, v) }

func (q *fifo) len() int { return len(q.items) - q.head }

func (q *fifo) pop() any {
	if q.head == len(q.items) {
		return nil
	}
	v := q.items[q.head]
	q.items[q.head] = nil
	if q.head++; q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return v
}

// invoke runs one message; a panic escalates to the supervisor, as the
// default mailbox does (the shard itself recovers its ops' panics).
func (m *callerRunsMailbox) invoke(msg any, system bool) {
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	m.waiting.Add(-1)
	if !system {
		m.invoker.InvokeUserMessage(msg)
		return
	}
	switch msg.(type) {
	case *actor.SuspendMailbox:
		m.suspended.Store(true)
	case *actor.ResumeMailbox:
		m.suspended.Store(false)
	default:
		m.invoker.InvokeSystemMessage(msg)
	}
}

// runOne runs on the poster's goroutine: pending system messages, which
// must come first, send the whole run to the pinned goroutine (false);
// otherwise it runs one user message and reports whether the mailbox is now
// empty.
func (m *callerRunsMailbox) runOne() (empty bool) {
	m.mu.Lock()
	sys := m.system.len() > 0
	m.mu.Unlock()
	if sys {
		return false
	}
	if msg, system := m.pop(); msg != nil {
		m.invoke(msg, system)
	}
	return m.waiting.Load() == 0
}

// processMessages runs on the pinned goroutine until the mailbox is empty
// (or suspended with only user messages left).
func (m *callerRunsMailbox) processMessages() {
	for {
		msg, system := m.pop()
		if msg == nil {
			break
		}
		m.invoke(msg, system)
	}
	m.release()
}

// release sets the mailbox idle, then takes it back if a message arrived
// between the last pop and the store (its poster saw the mailbox running
// and only queued it).
func (m *callerRunsMailbox) release() {
	m.status.Store(mailboxIdle)
	if m.waiting.Load() == 0 {
		return
	}
	m.mu.Lock()
	runnable := m.system.len() > 0 || (m.user.len() > 0 && !m.suspended.Load())
	m.mu.Unlock()
	if runnable && m.status.CompareAndSwap(mailboxIdle, mailboxRunning) {
		m.dispatcher.Schedule(m.processMessages)
	}
}
