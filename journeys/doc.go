// Package journeys owns journey definitions, journey sessions, the
// methods a person completes them with, and the proofs they issue (spec
// 2.7, 3.3, 4.8). It decides states and checks bindings; it never sees
// HTTP, and it never turns a failed or ambiguous check into a completed
// journey. Session state is in the catalog (Raft compare-and-set, see
// DESIGN.md); proofs are risk/trust proofs, single use through the same
// marker /trust/siteverify consumes.
package journeys
