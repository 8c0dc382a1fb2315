// Package messaging is the messaging-provider preflight (spec 4.13): before
// a one-time code is sent, a messaging provider or the customer's backend
// asks (signed) whether to send it, and later reports what became of it
// (delivered, verified, failed). Answers come from observed behaviour:
// send velocity per destination prefix, number, country and subject,
// temporary prefix blocks after abuse, and conversion (a prefix whose codes
// are sent but never verified is SMS pumping).
//
// It never sees HTTP, never receives a one-time code or a message body
// (such fields are refused), and keeps numbers and subjects only as
// workspace-keyed hashes in actor state.
package messaging
