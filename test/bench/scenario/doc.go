// Package scenario holds the load Workers that talk HTTP to trustd (or to
// the baseline): a rate-limit check over a key spread, a siteverify of
// pre-minted tokens, and a weighted mix of both. Each Worker owns its
// pre-built requests, its response and its JSON parser, so a request
// allocates nothing on the client side and the generator leaves the shared
// cores to the server. The package never provisions anything: it is handed
// secrets and tokens that exist.
package scenario
