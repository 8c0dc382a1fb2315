// Package ratelimit owns the arithmetic of the rate-limit check: exact
// integer token buckets, fixed quota windows on the UTC calendar, policy
// matching on action and method, the ordering of decisions, and the keyed
// hash under which caller-supplied scope values are kept.
//
// Everything here is pure: no goroutines, locks, I/O or clock reads. Every
// function that depends on time takes now as Unix nanoseconds, so the owner
// of the state (a shard actor) decides what time it is, and tests move time
// instead of sleeping. The hot functions allocate nothing. A clock that goes
// backwards never mints capacity.
package ratelimit
