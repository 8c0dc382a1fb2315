// Package crossarea holds the node tests that span several product areas
// (the Trust API, journeys and the concurrency lease answering their
// mobile operations alike): each starts a real node through node/nodetest
// and reads the answers of more than one area's routes. An area's own
// tests live in its api package; the transport's in platform/http/. It has no
// code of its own.
package crossarea
