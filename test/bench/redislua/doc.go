// Package redislua is the redis-lua comparison point: a throwaway
// redis-server on a free loopback port and a token-bucket Lua script called
// with EVALSHA, the usual way a rate limiter is built on Redis. It owns the
// server process (started, and always stopped, by this package) and the
// script; it speaks RESP through package resp and never touches any Redis it
// did not start.
package redislua
