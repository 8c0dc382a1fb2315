// Package faults is a Jepsen-style fault suite for trustd: it runs the real
// binary as a three-node cluster (each node in its own network namespace
// when the runner is root), injects faults from a seeded schedule, records
// every client operation as invocation and completion, and checks the
// history against what the service promises (issue 23). The history and the
// checker are plain Go with no I/O, so they are table-tested on synthetic
// histories; the harness and the schedules live in the _test files.
package faults

import (
	"sort"
	"sync"
	"time"
)

// Kind is the kind of a client operation.
type Kind string

// Operation kinds.
const (
	KindVerify Kind = "siteverify" // redeem a single-use token
	KindLease  Kind = "lease"      // acquire a concurrency lease
	KindRate   Kind = "ratecheck"  // one rate-limit check
	KindWrite  Kind = "write"      // an admin create
	KindRead   Kind = "read"       // an admin read after heal
)

// Outcome is how an operation completed, as the client saw it.
type Outcome string

// Outcomes: ok is a definite answer the service stands by (success or a
// definite refusal, read Op's fields); refused is a definite "no" that
// changed nothing (400/401/409/429); unknown is a 503, a timeout or a cut
// connection: the operation may or may not have taken effect.
const (
	OK      Outcome = "ok"
	Refused Outcome = "refused"
	Unknown Outcome = "unknown"
)

// Op is one operation: its invocation and completion.
type Op struct {
	Kind    Kind
	Node    string // node the request went to
	Invoke  time.Time
	Done    time.Time
	Outcome Outcome
	Status  int    // HTTP status, 0 when none came back
	Err     string // transport error or refusal code, for the report

	// KindVerify: the token (its marker key), the idempotency key, and
	// whether the answer was success or timeout-or-duplicate.
	Token     string
	IdemKey   string
	Success   bool
	Duplicate bool

	// KindLease: the constraint key (constraint and scope value), the
	// holder (lease id), its fencing token and expiry, when acquired.
	Key      string
	Acquired bool
	Holder   string
	Fence    uint64
	Expires  time.Time
	Capacity int

	// KindRate: Key is the bucket (policy and subject), Allowed the
	// decision, Degraded when a degraded-fail-* reason came back,
	// FailOpen when the policy fails open.
	Allowed  bool
	Degraded bool
	FailOpen bool

	// KindWrite / KindRead: the object id written (ack'd when OK) or read.
	Object string
	Found  bool
}

// History is a concurrency-safe log of operations and of the events the
// checker needs besides them (fault windows, heal times, stop durations).
type History struct {
	mu     sync.Mutex
	ops    []Op
	events []Event
}

// Event is something the harness did or measured.
type Event struct {
	At   time.Time
	What string        // "inject", "heal", "ring-whole", "ring-not-whole", "stop"
	Node string        // for "stop": the node; for faults: the target(s)
	Dur  time.Duration // "ring-whole": heal → whole; "stop": signal → exit
	Note string
}

// Add appends a completed operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Event appends an event.
func (h *History) Event(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Ops returns a copy of the operations, sorted by invocation time.
func (h *History) Ops() []Op {
	h.mu.Lock()
	out := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invoke.Before(out[j].Invoke) })
	return out
}

// Events returns a copy of the events in the order they were recorded.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}
