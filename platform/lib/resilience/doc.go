// Package resilience owns the admission arithmetic that protects a
// dependency: a count-based circuit breaker, a Finagle-style retry budget
// and a bulkhead counter. It decides whether a call may go ahead; it never
// makes the call, waits, retries, or reads a clock.
//
// Everything here is pure: no goroutines, locks or I/O. State is a plain
// value owned by one actor, and every method that depends on time takes now
// as Unix nanoseconds. The hot methods allocate nothing.
package resilience
