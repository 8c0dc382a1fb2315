//go:build race

package scenario

// raceEnabled: the race detector makes sync.Pool drop items, so pooled
// buffers allocate and allocation counts mean nothing.
const raceEnabled = true
