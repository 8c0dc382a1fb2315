// Package contract holds the tests of an assembled node's public
// contract: the documents (/openapi.json, Postman, the changelog), the
// operation count, platform links and the admin Idempotency-Key, through
// every area node/ hands to the transport. They live here, not in platform/http/,
// so that the transport's own tests never compile an area: a change to one
// area recompiles its own tests and these, not the kernel's.
package contract
