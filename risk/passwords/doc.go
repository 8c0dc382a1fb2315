// Package passwords answers breached-password range queries (spec 4.3,
// POST /account/password/range, and the HIBP-compatible GET range): given
// the first five hex characters of a SHA-1 or NTLM password hash, the
// suffixes and counts of every known hash with that prefix.
//
// It owns the on-disk corpus format (one sorted file per hash mode with a
// 2^20-entry prefix index, see store.go), the streaming import of the Pwned
// Passwords downloader's files (import.go), the embedded default corpus
// (defaults.go) and the query module (module.go). It never sees HTTP, never
// loads a corpus into memory beyond the mapping the kernel pages in, and
// never learns or logs anything but a 20-bit prefix.
package passwords
