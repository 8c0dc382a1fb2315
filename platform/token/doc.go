// Package token encodes, signs and verifies the service's opaque bearer
// values: widget challenges, response tokens (live and sandbox), visual
// puzzle ids and edge clearances.
//
// Every value is prefix + base64url(payload ‖ HMAC-SHA-256) where the MAC
// covers the prefix and the payload, and the payload is a canonical binary
// record (fixed-width fields and length-prefixed strings, never string
// concatenation) that starts with the signing key's id. Decoding is
// allocation-light and never panics, whatever the input; the package knows
// nothing about HTTP, actors or the catalog, and never reads a clock.
package token
