// Package events owns the signed webhooks of spec section 6: a
// workspace's endpoints and their secrets, a durable outbox replicated by
// Raft (catalog records and commands), and the delivery of every event by
// the Raft leader, signed twice from one secret (Stripe-compatible and
// Standard Webhooks), with retries, a delivery log and automatic
// disabling. Emitters (identity sessions) call Outbox.Emit; the admin API
// calls the endpoint and event operations. The package never sees the
// inbound HTTP transport and never delivers to an address its target
// policy refuses. See DESIGN.md.
package events
