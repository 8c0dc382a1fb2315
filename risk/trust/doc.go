// Package trust is the Trust API's decision logic (spec 4.9, 2.8): the
// assurance ladder, per-workspace rules written in CEL, the decision from
// the service's own signals plus the caller's hints, the checks a step-up
// proof must pass at /trust/siteverify, and the claims of a signed
// decision receipt. It never sees HTTP, never writes a response and never
// reads a clock of its own: callers pass the time. See DESIGN.md.
package trust
