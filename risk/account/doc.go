// Package account is Account Defence (spec 2.3, 2.5, 3.6, 4.3): it scores
// account events (logins, registrations, resets…) from what the service
// itself observed of the subject and the device, takes feedback on its
// assessments, and keeps a customer's trusted devices. It sees identifiers
// only long enough to hash them with the workspace's key; actors and the
// catalog hold keyed hashes only. It never sees HTTP and never trusts a
// caller's hint to lower risk.
package account
