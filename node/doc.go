// Package node assembles one trustd node from its parts: the Raft store,
// the shard actors, the router, the public API listener and the ops
// listener. It owns start-up (first-start bootstrap, the admin token,
// signing keys, the --dev workspace) and graceful shutdown, and nothing
// else: every request is handled by package http.
package node
